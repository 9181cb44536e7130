"""The console script, run as a user runs it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import boto3
import pytest
from click.testing import CliRunner

from deltaguard.logstore.jars import plugin_jar
from deltaguard.tools.cli import main

#: AWS settings of a machine with nothing configured, dummy credentials, one attempt.
AWS = {
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_MAX_ATTEMPTS": "1",
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_PROFILE": None,
    "AWS_ENDPOINT_URL": None,
    "AWS_ENDPOINT_URL_S3": None,
}


def test_jar_prints_the_packaged_jar(run_cli):
    out = run_cli("jar")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(plugin_jar())


def test_packages_prints_coordinates(run_cli):
    out = run_cli("packages")
    assert out.returncode == 0
    assert "io.delta:delta-spark_4.2_2.13:4.4.0" in out.stdout.split(",")[0]


def test_unknown_command_is_a_clean_error(run_cli):
    out = run_cli("frobnicate")
    assert out.returncode == 2
    assert "No such command" in out.stderr
    assert "Traceback" not in out.stderr


def test_version(run_cli):
    out = run_cli("--version")
    version = (Path(__file__).resolve().parents[1] / "VERSION").read_text().strip()
    assert out.returncode == 0 and version in out.stdout


class _Forbidding(BaseHTTPRequestHandler):
    """An S3 endpoint that refuses everything with 403 (a HEAD without a body, as S3 does),
    recording each request's method and path."""

    seen: ClassVar[list[str]] = []

    def log_message(self, *_args: object) -> None:
        pass

    def _refuse(self) -> None:
        self.seen.append(f"{self.command} {self.path}")
        body = b"" if self.command == "HEAD" else (
            b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>")  # fmt: skip
        self.send_response(403)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET = do_PUT = do_POST = _refuse


@pytest.fixture
def forbidding() -> Iterator[str]:
    _Forbidding.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Forbidding)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_probe_names_a_403_in_one_phrase(forbidding, monkeypatch):
    """HeadBucket's 403 has no body: one phrase, ``HTTP 403 Forbidden``, not ``403 403``."""
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    out = CliRunner().invoke(main, ["probe", "s3://lake/t", "--endpoint-url", forbidding], env=AWS)
    assert out.exit_code == 2, out.stderr
    assert "HTTP 403 Forbidden" in out.stderr and "403 403" not in out.stderr, out.stderr


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"])
def test_aws_endpoint_url_is_honoured(forbidding, monkeypatch, variable):
    """``AWS_ENDPOINT_URL`` and ``AWS_ENDPOINT_URL_S3`` (docs/reference/options.md) take the
    place of --endpoint-url."""
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    out = CliRunner().invoke(
        main, ["history", "s3://lake/t", "--path-style"], env={**AWS, variable: forbidding}
    )
    assert out.exit_code == 2, out.stderr
    assert any(r.startswith("GET /lake") for r in _Forbidding.seen), _Forbidding.seen
    assert "AccessDenied" in out.stderr, out.stderr


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (3_600_000, "1 hour"),
        (36 * 3_600_000, "36 hours"),
        (86_400_000, "1 day"),
        (7 * 86_400_000, "7 days"),
        (60_000, "1 minute"),
        (90 * 60_000, "90 minutes"),
        (5_400_001, "1.5 hours"),
        (1000, "1 second"),
        (0, "0 seconds"),
    ],
)
def test_durations_are_english(ms, text):
    from deltaguard.tools.deltalog.times import duration_text

    assert duration_text(ms) == text


def test_a_short_retention_says_1_hour(tmp_path):
    """Not "1 hours": the refusal of a retention under 24 hours names it in English."""
    from deltaguard.localstack.synthetic_table import SyntheticTable

    t = SyntheticTable(tmp_path / "t")
    t.create(1_700_000_000_000)
    out = CliRunner().invoke(main, ["orphans", str(t.root), "--retention", "1h", "--delete"])
    assert out.exit_code == 2, out.stderr
    assert "a retention of 1 hour is under 24 hours" in out.stderr, out.stderr
