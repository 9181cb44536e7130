"""Options as users already type them (tools/cli_options.py, docs/reference/options.md): ``--profile`` and
``--endpoint-url`` as aws-cli's, durations (``7d``, ``36h``, ``90m``), one region rule;
``migrate status`` labels a commit's writer from the commit; ``conf check`` warns on a
single-driver store."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.localstack.table_copies import upload_table
from deltaguard.logstore.clients import region_or_default
from deltaguard.spark_conf.conf_check import check, parse_properties
from deltaguard.spark_conf.presets import PresetName, shipped_preset_file
from deltaguard.tools.cli import main
from deltaguard.tools.cli_options import Duration
from deltaguard.tools.deltalog.protocol_mix import CommitEvidence, WriterKind, label_by_content

DELTAGUARD = str(Path(sys.executable).with_name("deltaguard"))
DAY_MS = 86_400_000


@pytest.mark.parametrize(
    ("given", "hours"),
    [("7d", 168.0), ("36h", 36.0), ("90m", 1.5), ("1w", 168.0), ("45s", 0.0125), ("48", 48.0),
     ("0.5", 0.5), ("2D", 48.0)],
)  # fmt: skip
def test_durations_with_units_and_plain_hours(given, hours):
    assert Duration().convert(given, None, None) == pytest.approx(hours)


@pytest.mark.parametrize("given", ["-5", "-1d", "7x", "d", ""])
def test_bad_durations_are_refused(given):
    with pytest.raises(click.BadParameter):
        Duration().convert(given, None, None)
    with pytest.raises(click.BadParameter):
        Duration(positive=True).convert("0", None, None)


def test_retention_in_days_means_what_it_says(tmp_path):
    """A file 8 days old: an orphan with --retention 7d (and 168, the same in hours), recent
    with --retention 9d."""
    import time

    now = int(time.time() * 1000)
    table = SyntheticTable(tmp_path / "t")
    table.create(now - 10 * DAY_MS)
    table.write_file("p=a/orphan.parquet", now - 8 * DAY_MS)
    runner = CliRunner()
    for retention, code in (("7d", 1), ("168", 1), ("9d", 0), ("216h", 0)):
        done = runner.invoke(main, ["orphans", str(table.root), "--retention", retention])
        assert done.exit_code == code, (retention, done.output)


def test_region_rule(monkeypatch, tmp_path):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config"
    config.write_text("[profile far]\nregion = ap-south-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    assert region_or_default(None) == "us-east-1"
    monkeypatch.setenv("AWS_PROFILE", "far")
    assert region_or_default(None) == "ap-south-1"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-3")
    assert region_or_default(None) == "eu-west-3"
    monkeypatch.setenv("AWS_REGION", "eu-west-2")
    assert region_or_default(None) == "eu-west-2"
    assert region_or_default("sa-east-1") == "sa-east-1"


def _aws_env(tmp_path: Path, **extra: str) -> dict[str, str | None]:
    """For click's runner: a machine with no AWS settings but ``extra`` (every other AWS_
    variable unset for the run, and restored after it)."""
    return {
        **{k: None for k in os.environ if k.startswith("AWS_")},
        "AWS_PROFILE": None,  # --profile sets it: restored after the run
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        **extra,
    }


def test_dynamodb_and_migrate_status_need_no_region(tmp_path, monkeypatch):
    """Both used to fail with "You must specify a region."; now the rule gives us-east-1 and
    they get as far as the (closed) endpoint."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    import boto3

    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # it read the AWS settings once
    env = _aws_env(tmp_path, AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s", AWS_MAX_ATTEMPTS="1")
    table = SyntheticTable(tmp_path / "t")
    table.create(1_700_000_000_000)
    for args in (
        ["dynamodb", "create-table", "delta_log", "--endpoint-url", dead],
        ["migrate", "status", str(table.root), "--dynamodb-table", "x",
         "--dynamodb-endpoint", dead],
    ):  # fmt: skip
        done = CliRunner().invoke(main, args, env=env)
        assert done.exit_code == 2, done.stderr
        assert "region" not in done.stderr.lower() and dead.split("//")[1] in done.stderr


def test_profile_and_endpoint_url_reach_s3_like_aws_cli(moto, moto_bucket, tmp_path, monkeypatch):
    import boto3

    """Credentials only in a named profile (none in the environment): ``--profile`` finds
    them, ``--endpoint-url`` names the server, for audit, history and orphans alike."""
    table = SyntheticTable(tmp_path / "t")
    table.create(1_700_000_000_000)
    rel = "p=a/part-0.parquet"
    size = table.write_parquet(rel, 1_700_000_000_000, [1])
    table.commit([{"add": table.add_action(rel, 1_700_000_000_000, size=size)}], 1_700_000_001_000)
    uri = upload_table(table.root, moto.endpoint.s3_client(), moto_bucket, "t")
    credentials = tmp_path / "credentials"
    credentials.write_text(
        f"[lake]\naws_access_key_id = {moto.endpoint.access_key}\n"
        f"aws_secret_access_key = {moto.endpoint.secret_key}\n"
    )
    env = _aws_env(tmp_path, AWS_SHARED_CREDENTIALS_FILE=str(credentials))
    s3 = ["--endpoint-url", moto.endpoint.url, "--path-style", "--profile", "lake"]
    for command in ("audit", "history", "orphans"):
        monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # it read the AWS settings once
        done = CliRunner().invoke(main, [command, uri, *s3, "--json"], env=env)
        assert done.exit_code == 0, (command, done.stderr)
        json.loads(done.stdout)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    without = CliRunner().invoke(
        main,
        ["audit", uri, "--endpoint-url", moto.endpoint.url, "--path-style"],
        env={**env, "AWS_MAX_ATTEMPTS": "1"},
    )
    assert without.exit_code == 2 and "credentials" in without.stderr.lower(), without.stderr


def test_a_delta_rs_commit_is_conditional_whatever_entry_its_version_has():
    transition = CommitEvidence(7, WriterKind.TRANSITION, 1, True)
    relabelled = label_by_content(transition, "delta-rs:py-1.6.6")
    assert relabelled.kind is WriterKind.CONDITIONAL
    assert relabelled.to_json()["dynamodb_entry"] == "transition"
    spark = label_by_content(transition, "Apache-Spark/4.2.0 Delta-Lake/4.4.0")
    assert spark.kind is WriterKind.TRANSITION and spark.entry_kind is None


def test_a_plain_entry_under_a_delta_rs_commit_still_makes_the_mix_unsafe():
    from deltaguard.tools.deltalog.protocol_mix import ProtocolEvidence

    evidence = ProtocolEvidence(
        commits=[
            CommitEvidence(1, WriterKind.CONDITIONAL, 1),
            label_by_content(CommitEvidence(2, WriterKind.PLAIN, 2, True), "delta-rs:rust-0.30"),
        ]
    )
    assert evidence.commits[1].kind is WriterKind.CONDITIONAL
    assert evidence.unsafe_mix() is not None


def _codes(text: str) -> list[str]:
    return [f.code for f in check(parse_properties(text))]


def test_conf_check_warns_on_a_single_driver_store(tmp_path):
    explicit = "spark.delta.logStore.s3a.impl=io.delta.storage.S3SingleDriverLogStore\n"
    assert "single-driver-store" in _codes(explicit)
    as_the_class = "spark.delta.logStore.class=io.delta.storage.S3SingleDriverLogStore\n"
    assert _codes(as_the_class) == ["single-driver-store"] * 2, "s3:// and s3a://"
    by_default = "spark.hadoop.fs.s3a.endpoint=https://s3.example.com\n"
    assert _codes(by_default) == ["single-driver-store"], "Delta's default for s3a://"
    declared = explicit + "spark.deltaguard.singleDriverPerTable=true\n"
    assert "single-driver-store" not in _codes(declared)
    for preset in (PresetName.S3_SINGLE_DRIVER, PresetName.LOCAL, PresetName.S3_CONDITIONAL):
        assert _codes(shipped_preset_file(preset).read_text()) == [], preset
    path = tmp_path / "job.properties"
    path.write_text(explicit)
    done = CliRunner().invoke(main, ["conf", "check", str(path)])
    assert done.exit_code == 1 and f"{path}:1: single-driver-store" in done.stdout
