"""DynamoDB temp commits (``_delta_log/.tmp/N.json.<uuid>``) and ``deltaguard orphans``: a
temp commit the log protocol may still need is never deleted (issue 21, item 1), on local disk
and with the DynamoDB table (LocalStack's DynamoDB) saying which entries are done. The Spark
engine's cases are in test_orphans_spark_engine.py (they share :func:`temp_commit_table`)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

from click.testing import CliRunner
from dynamodb_entries import put_entry

from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.localstack.table_copies import upload_table
from deltaguard.tools.cli import main
from deltaguard.tools.orphans import read_manifest, scan
from deltaguard.tools.storage import open_table

DAY = 86_400_000


def temp_name(version: int, tag: str | None = None) -> str:
    """A DynamoDB temp commit's name relative to the table root."""
    return f"_delta_log/.tmp/{version:020d}.json.{tag or uuid.uuid4()}"


def temp_commit_table(root: Path) -> dict[str, str]:
    """Versions 0-12 (a checkpoint at 6, commits before 4 cleaned up), every temp file 10
    days old: the pending commit of version 13 (13.json absent), a temp of version 5 whose
    5.json is missing (damage; the snapshot starts at checkpoint 6, so the table reads), temps of versions 7, 8, 9 and 10 (two for 10: the winner's
    and a loser's) whose N.json exists, a temp of version 2 (older than every retained
    commit), and a Hadoop-style temp file. Returns the temp paths by role."""
    now = int(time.time() * 1000)
    t = SyntheticTable(root)
    t.create(now - 20 * DAY)
    for v in range(1, 13):
        t.commit([], now - (20 - v) * DAY // 2)
        if v == 6:
            t.checkpoint()
    t.drop_commits_before(4)
    (t.log / f"{5:020d}.json").unlink()
    temps = {
        "pending13": temp_name(13),
        "stranded5": temp_name(5),
        "done7": temp_name(7),
        "open8": temp_name(8),
        "expired9": temp_name(9),
        "won10": temp_name(10, "winner"),
        "lost10": temp_name(10, "loser"),
        "old2": temp_name(2),
        "hadoop": "_delta_log/.00000000000000000011.json.1234.tmp",
    }
    for rel in temps.values():
        t.write_file(rel, now - 10 * DAY, size=3)
    return temps


def _classes(report: dict) -> dict[str, str]:
    return {f["path"]: f["class"] for f in report["files"]}


# proves: docs/guides/cleanup.md "pending and stranded DynamoDB temp commits are never deleted"
def test_pending_commit_of_the_next_version_is_never_deleted(tmp_path: Path) -> None:
    """The issue's reproduction: versions 0-12 and a 10-day-old temp of version 13 with
    13.json absent. `--delete --yes` deleted it (commit 13 lost); it is now pending-commit."""
    t = SyntheticTable(tmp_path / "t")
    now = int(time.time() * 1000)
    t.create(now - 20 * DAY)
    for _ in range(12):
        t.commit([], now - 15 * DAY)
    pending = t.write_file(temp_name(13), now - 10 * DAY, size=3)
    done = CliRunner().invoke(
        main,
        ["orphans", str(t.root), "--delete", "--yes", "--json", "--manifest", str(tmp_path / "m")],
    )
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert (t.root / pending).exists()
    assert _classes(report) == {pending: "pending-commit"}
    assert report["totals"]["pending-commit"] == {"files": 1, "bytes": 3}
    reason = report["files"][0]["reason"]
    assert "newer than the latest version 12" in reason and "never deleted" in reason


def test_temp_commits_without_the_dynamodb_table_are_kept_or_reported(tmp_path: Path) -> None:
    """Without --dynamodb-table no DynamoDB temp commit is deleted: pending ones and those
    whose entry could not be checked are pending-commit, the one of a retained version whose
    N.json is missing is stranded-commit (damage: exit 1 even after the cleanup); only the
    Hadoop-style temp file goes."""
    root = tmp_path / "t"
    temps = temp_commit_table(root)
    result = scan(open_table(str(root)))
    classes = {c.path: c.file_class.value for c in result.candidates}
    reasons = {c.path: c.reason for c in result.candidates}
    assert classes == {
        temps["hadoop"]: "log-temp",
        temps["stranded5"]: "stranded-commit",
        **{
            temps[k]: "pending-commit"
            for k in ("pending13", "done7", "open8", "expired9", "won10", "lost10", "old2")
        },
    }
    assert "versions 4-12" in reasons[temps["stranded5"]]
    assert "without --dynamodb-table" in reasons[temps["done7"]]
    runner = CliRunner()
    done = runner.invoke(
        main, ["orphans", str(root), "--delete", "--yes", "--manifest", str(tmp_path / "m")]
    )
    assert done.exit_code == 1, done.output
    assert "damage: 1 DynamoDB temp commit" in done.stdout
    assert read_manifest(tmp_path / "m").paths("deleted") == [temps["hadoop"]]
    assert all((root / p).exists() for k, p in temps.items() if k != "hadoop")


# proves: docs/guides/cleanup.md "pending and stranded DynamoDB temp commits are never deleted"
def test_dynamodb_entries_decide_which_temp_commits_are_done(
    localstack, ls_bucket: str, ls_commit_table: str, run_cli, tmp_path: Path
) -> None:
    """On LocalStack (S3 and DynamoDB), with the entries a DynamoDB writer leaves: a temp is
    deleted only once its N.json exists and its entry is complete or gone (a loser's temp of
    a complete entry too) and its version is no longer retained; of a retained version it is
    kept as the evidence of its commit path; an incomplete entry keeps it; the pending and
    stranded ones stay whatever the entries say."""
    root = tmp_path / "t"
    temps = temp_commit_table(root)
    endpoint = localstack.endpoint
    upload_table(root, endpoint.s3_client(), ls_bucket, "lake/t")
    table_path = f"s3a://{ls_bucket}/lake/t"  # as Spark's writers name it
    ddb = endpoint.dynamodb_client()

    def entry(version: int, temp_key: str, complete: bool) -> None:
        temp = temps[temp_key].removeprefix("_delta_log/")
        put_entry(ddb, ls_commit_table, table_path, version, temp, complete=complete)

    entry(13, "pending13", complete=False)
    entry(5, "stranded5", complete=True)
    entry(7, "done7", complete=True)
    entry(8, "open8", complete=False)
    entry(10, "won10", complete=True)  # version 9's entry expired; 2's long ago
    args = [
        "orphans",
        f"s3://{ls_bucket}/lake/t",
        *("--endpoint", endpoint.url, "--region", endpoint.region, "--path-style"),
        *("--dynamodb-table", ls_commit_table, "--dynamodb-endpoint", endpoint.url),
        *("--retention", "0", "--unsafe-retention", "--json"),
    ]
    env = endpoint.credentials_env()
    manifest = tmp_path / "m"
    done = run_cli(*args, "--delete", "--yes", "--manifest", str(manifest), env=env, timeout=120)
    assert done.returncode == 1, done.stderr  # deleted everything planned; damage remains
    classes = _classes(json.loads(done.stdout))
    assert {p: classes[p] for p in temps.values()} == {
        temps["pending13"]: "pending-commit",
        temps["stranded5"]: "stranded-commit",
        temps["open8"]: "pending-commit",
        # finished, of retained versions (4-12): the evidence of Delta's DynamoDB store
        **{temps[k]: "commit-evidence" for k in ("done7", "expired9", "won10", "lost10")},
        temps["old2"]: "log-temp",
        temps["hadoop"]: "log-temp",
    }
    deleted = set(read_manifest(manifest).paths("deleted"))
    assert deleted == {temps["old2"], temps["hadoop"]}
    s3 = endpoint.s3_client()
    keys = {
        o["Key"].removeprefix("lake/t/")
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=ls_bucket)
        for o in page.get("Contents", [])
    }
    kept = ("pending13", "stranded5", "open8", "done7", "expired9", "won10", "lost10")
    assert {temps[k] for k in kept} <= keys
    assert temps["old2"] not in keys
    missing = run_cli(*args, "--dynamodb-table", "no_such_table", env=env, timeout=120)
    assert missing.returncode == 2 and "DynamoDB table no_such_table" in missing.stderr
    assert "Traceback" not in missing.stderr
