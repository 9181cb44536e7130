"""Output a pipeline can use and signs of life (issue 41, goals 4 and 5): whole paths when
stdout is not a terminal, ``--format tsv``, a ``schema`` in every ``--json``, ISO 8601 times,
the partition table's order and count, progress on stderr only and only when asked for.

One test runs ``deltaguard`` as a process with stdout a pipe; the others run the click command
in this process (:func:`cli`: stdout and stderr are captured, neither is a terminal), which
saves a Python start and the imports per call."""

from __future__ import annotations

import csv
import io
import json
import shutil
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from deltaguard.localstack.fault_proxy import FaultRule
from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.logstore.dynamodb_table import create_table
from deltaguard.tools.cli import main
from deltaguard.tools.deltalog.render import AUDIT_TSV_COLUMNS, HISTORY_TSV_COLUMNS
from deltaguard.tools.orphans.run import TSV_COLUMNS

DAY = 86_400_000
NOW = int(time.time() * 1000)
#: A stray file whose path relative to the root is 200+ characters (each component < 255).
LONG = "p=" + "l" * 120 + "/part-00000-" + "s" * 90 + "-stray.parquet"
#: Live in the log, absent on disk: an audit finding naming a long path.
LONG_MISSING = "p=" + "m" * 120 + "/part-00001-" + "g" * 90 + "-gone.parquet"
#: Partitions of orphans: more than the 20 the text report shows, sizes whose text order
#: ("p=00" < "p=01" ...) is not their size order.
PARTITIONS = 25
CREDS = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_DEFAULT_REGION": "us-east-1",
}
ANSI_ESCAPE = "\x1b["


def _size(k: int) -> int:
    return ((k * 7) % PARTITIONS + 1) * 100


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    t = SyntheticTable(tmp_path_factory.mktemp("out") / "t")
    t.create(NOW - 10 * DAY)
    for i in range(3):
        rel = t.write_file(f"p=a/f{i}.parquet", NOW - 9 * DAY)
        t.commit([{"add": t.add_action(rel, NOW - 9 * DAY)}], NOW - 9 * DAY + i)
    t.commit([{"add": t.add_action(LONG_MISSING, NOW - 9 * DAY)}], NOW - 9 * DAY + 10)
    for k in range(PARTITIONS):
        t.write_file(f"p={k:02d}/orphan.parquet", NOW - 8 * DAY, size=_size(k))
    t.write_file(LONG, NOW - 8 * DAY, size=1)
    assert len(LONG) >= 200 and len(LONG_MISSING) >= 200
    return t.root


class Ran:
    """What :func:`cli` returns: the exit code and the two streams."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def cli(*args: str, env: dict[str, str] | None = None) -> Ran:
    """``deltaguard ARGS`` in this process (COLUMNS=200: a forced progress display has room)."""
    result = CliRunner(env={"COLUMNS": "200", **(env or {})}).invoke(main, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr)


def _tsv(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text), dialect="excel-tab"))


def test_text_output_to_a_pipe_keeps_whole_paths(run_cli, table):
    orphans = run_cli("orphans", str(table))
    assert orphans.returncode == 1, orphans.stderr
    assert LONG in orphans.stdout, "the stray's whole path, not cut at 80 columns"
    assert "…" not in orphans.stdout and ANSI_ESCAPE not in orphans.stdout
    audit = cli("audit", str(table))
    assert audit.returncode == 1, audit.stderr
    assert LONG_MISSING in audit.stdout
    assert "…" not in audit.stdout


def test_partition_table_says_n_of_m_and_sorts_by_size(table):
    out = cli("orphans", str(table)).stdout
    assert f"By partition (20 of {PARTITIONS + 1}, largest first)" in out
    section = out.split("By partition", 1)[1].split("Files (", 1)[0]
    shown = [line.split()[1] for line in section.splitlines() if "│ p=" in line]
    expected = sorted(range(PARTITIONS), key=lambda k: -_size(k))[:20]
    assert shown == [f"p={k:02d}" for k in expected]
    doc = json.loads(cli("orphans", str(table), "--json").stdout)
    sizes = [p["bytes"] for p in doc["partitions"]]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) == PARTITIONS + 1


def test_format_tsv_parses_with_the_csv_module(table):
    orphans = cli("orphans", str(table), "--format", "tsv")
    assert orphans.returncode == 1, orphans.stderr
    rows = _tsv(orphans.stdout)
    assert tuple(rows[0]) == TSV_COLUMNS
    by_path = {r[0]: dict(zip(TSV_COLUMNS, r, strict=True)) for r in rows[1:]}
    assert len(by_path) == PARTITIONS + 1, "every candidate, not the first 50"
    assert by_path[LONG]["class"] == "orphan" and by_path[LONG]["bytes"] == "1"
    assert datetime.fromisoformat(by_path[LONG]["modified"]).utcoffset().total_seconds() == 0
    assert "dry run" in orphans.stderr and "dry run" not in orphans.stdout

    audit = cli("audit", str(table), "--format", "tsv")
    assert audit.returncode == 1, audit.stderr
    rows = _tsv(audit.stdout)
    assert tuple(rows[0]) == AUDIT_TSV_COLUMNS
    assert any(r[1] == "missing-data-file" and r[2] == LONG_MISSING for r in rows[1:])

    history = cli("history", str(table), "--format", "tsv")
    assert history.returncode == 0, history.stderr
    rows = _tsv(history.stdout)
    assert tuple(rows[0]) == HISTORY_TSV_COLUMNS
    assert [int(r[0]) for r in rows[1:]] == [4, 3, 2, 1, 0]
    assert all(datetime.fromisoformat(r[1]).utcoffset().total_seconds() == 0 for r in rows[1:])

    both = cli("history", str(table), "--json", "--format", "tsv")
    assert both.returncode == 2 and "contradict" in both.stderr


def _json_commands() -> list[str]:
    """Every command path with a ``--json`` option."""
    found: list[str] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
        elif any("--json" in p.opts for p in cmd.params):
            found.append(" ".join(path))

    walk(main, [])
    return sorted(found)


def test_every_json_output_carries_a_schema(table, tmp_path, localstack, ls_bucket):
    recent = SyntheticTable(tmp_path / "recent")  # migrate status needs recent commits
    recent.create(NOW - 60_000)
    conf = tmp_path / "lake.properties"
    conf.write_text("spark.delta.logStore.s3a.impl=io.delta.storage.S3DynamoDBLogStore\n")
    commit_table = f"delta_log_{ls_bucket}"
    create_table(localstack.endpoint.dynamodb_client(), commit_table)
    s3 = ("--endpoint", localstack.endpoint.url, "--path-style")
    args = {
        "audit": [str(table)],
        "history": [str(table)],
        "orphans": [str(table)],
        "log-cleanup": [str(table)],
        "repair": [str(table)],
        "conf check": [str(conf)],
        "probe": [f"s3://{ls_bucket}/lake", *s3, "--writers", "2", "--rounds", "1"],
        "migrate status": [
            str(recent.root), "--dynamodb-table", commit_table,
            "--dynamodb-endpoint", localstack.endpoint.url,
        ],
        "checkpoint": [str(recent.root)],
    }  # fmt: skip
    assert _json_commands() == sorted(args), "a new --json command: add it here"
    schemas = {}
    for command, extra in args.items():
        out = cli(*command.split(), *extra, "--json", env=CREDS)
        assert out.returncode in (0, 1), f"{command}: {out.stderr}"
        doc: Any = json.loads(out.stdout)
        assert isinstance(doc, dict), command
        schemas[command] = doc["schema"]
    probe = cli("probe", *args["probe"], "--json", "--progress", env=CREDS)
    assert "probe: 2 writers racing, rounds" in probe.stderr, probe.stderr
    assert json.loads(probe.stdout)["schema"] == "deltaguard.probe/1"
    assert schemas == {
        "audit": "deltaguard.audit/1",
        "history": "deltaguard.history/4",
        "orphans": "deltaguard.orphans.report/1",
        "log-cleanup": "deltaguard.log-cleanup.report/1",
        "repair": "deltaguard.repair/1",
        "conf check": "deltaguard.conf-check/1",
        "probe": "deltaguard.probe/1",
        "migrate status": "deltaguard.migrate-status/1",
        "checkpoint": "deltaguard.checkpoint/1",
    }


def test_history_json_is_an_object_with_the_entries(table):
    doc = json.loads(cli("history", str(table), "--json", "--limit", "2").stdout)
    assert doc["table"] == str(table)
    assert [e["version"] for e in doc["entries"]] == [4, 3]


def test_times_in_messages_are_iso_8601_utc(table):
    out = cli("audit", str(table), "--timestamp", "2001-01-01T00:00:00Z")
    assert out.returncode == 2
    assert "2001-01-01T00:00:00.000+00:00" in out.stderr, out.stderr
    assert "978307200000" not in out.stderr, "no epoch milliseconds"


def _progress_shown(stderr: str, *phases: str) -> bool:
    return all(p in stderr for p in phases)


def test_progress_goes_to_stderr_when_forced_and_never_to_stdout(table, tmp_path):
    audit = cli("audit", str(table), "--json", "--progress")
    assert audit.returncode == 1, audit.stderr
    assert _progress_shown(audit.stderr, "audit: reading 5 commits", "audit: listing the log")
    json.loads(audit.stdout)  # stdout: the JSON document only
    assert "audit:" not in audit.stdout and ANSI_ESCAPE not in audit.stdout

    copy = tmp_path / "t"
    shutil.copytree(table, copy)
    manifest = tmp_path / "manifest"
    clean = cli(
        "orphans", str(copy), "--delete", "--yes", "--progress", "--format", "tsv",
        "--manifest", str(manifest),
    )  # fmt: skip
    assert clean.returncode == 0, clean.stderr
    assert _progress_shown(
        clean.stderr,
        "orphans: reading the log",
        "orphans: re-reading the log before deleting",
        f"orphans: deleting {PARTITIONS + 1} files",
    )
    assert ANSI_ESCAPE not in clean.stdout and "orphans:" not in clean.stdout
    assert len(_tsv(clean.stdout)) == PARTITIONS + 2  # header + rows, nothing else

    history = cli("history", str(table), "--progress")
    assert "history: reading 5 commits" in history.stderr
    assert "history:" not in history.stdout


def test_no_progress_and_a_pipe_show_none(table):
    for flags in (["--no-progress"], []):  # [] = auto, and stderr is a pipe here
        out = cli("audit", str(table), "--json", *flags)
        assert out.returncode == 1
        assert out.stderr == "", (flags, out.stderr)
        out = cli("orphans", str(table), *flags)
        assert out.stderr == "", (flags, out.stderr)


def test_s3_retries_are_shown_with_the_attempt_count(localstack, ls_bucket, ls_proxy):
    s3 = localstack.endpoint.s3_client()
    commit = {"commitInfo": {"timestamp": NOW, "operation": "CREATE TABLE"}}
    s3.put_object(
        Bucket=ls_bucket, Key="t/_delta_log/00000000000000000000.json", Body=json.dumps(commit)
    )
    ls_proxy.set_rules(
        [FaultRule("error", method="GET", path_regex=r"\.json$", times=2, status=503)]
    )
    uri = f"s3://{ls_bucket}/t"
    args = ("history", uri, "--endpoint", ls_proxy.endpoint.url, "--path-style", "--json")
    out = cli(*args, "--progress", env=CREDS)
    assert out.returncode == 0, out.stderr
    assert "retrying GetObject after 503 SlowDown (2/8)" in out.stderr
    assert "retrying GetObject after 503 SlowDown (3/8)" in out.stderr
    assert "retrying" not in out.stdout
    assert json.loads(out.stdout)["entries"][0]["operation"] == "CREATE TABLE"
