"""``deltaguard log-cleanup`` (issue 51, part 3) and the audit's log cost (part 4) on local
disk: Delta's own log cleanup rule (docs/guides/log-cleanup.md) plus the leftovers no Delta
writer removes. The oracle is delta-rs: after the cleanup it time-travels to every retained
version and reads the rows each version holds; the version below the truncation checkpoint
is gone. The interrupted run reuses orphans' unlink gate (tests/unlink_gate)."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable, write_deltalake
from dynamodb_entries import put_entry
from test_orphans_interrupt import (
    check_interrupted,
    finish,
    run_dirs,
    start_cli,
    wait_for_status,
)

from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.localstack.table_copies import upload_table
from deltaguard.tools.cli import main
from deltaguard.tools.deltalog.log_expiry import day_cutoff_ms
from deltaguard.tools.orphans import read_manifest
from deltaguard.tools.orphans.log_cleanup import LOG_CLEANUP_CLASSES as LOG_CLEANUP

DAY = 86_400_000
NOW = int(time.time() * 1000)


def age(path: Path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def log_name(version: int, suffix: str = "json") -> str:
    return f"{version:020d}.{suffix}"


def delta_rs_table(root: Path, commits: int, checkpoints: tuple[int, ...], old_until: int) -> None:
    """``commits`` appends of one row each by delta-rs (version v holds v + 1 rows), a
    checkpoint after each version in ``checkpoints``; every log file of versions up to
    ``old_until`` modified 60 days ago (a second apart, in version order), the rest now."""
    for v in range(commits):
        write_deltalake(root, pa.table({"x": [v]}), mode="append")
        if v in checkpoints:
            DeltaTable(root).create_checkpoint()
    log = root / "_delta_log"
    for f in log.iterdir():
        head = f.name[:20]
        if head.isdigit() and int(head) <= old_until:
            age(f, NOW - 60 * DAY + int(head) * 1000)


def cli(*args: str) -> Any:
    """Runs ``deltaguard ARGS`` in this process (faster than a subprocess); the result has
    ``returncode``, ``stdout`` and ``stderr`` as :func:`subprocess.run`'s."""
    done = CliRunner().invoke(main, list(args))
    done.returncode = done.exit_code
    return done


def rows_at(root: Path, version: int) -> int:
    return int(DeltaTable(str(root), version=version).to_pyarrow_table().num_rows)


def log_files(root: Path) -> set[str]:
    log = root / "_delta_log"
    return {str(p.relative_to(log)) for p in log.rglob("*") if p.is_file()}


# proves: docs/guides/log-cleanup.md "only below the newest reliable checkpoint older than the
# cut-off: every retained version stays readable"
def test_removes_exactly_what_delta_would_and_every_retained_version_reads(
    tmp_path: Path, run_cli: Any
) -> None:
    root = tmp_path / "t"
    delta_rs_table(root, 11, checkpoints=(3, 6, 9), old_until=7)
    log = root / "_delta_log"
    old = NOW - 45 * DAY
    # what no Delta writer removes, and what must survive
    pending = f".tmp/{log_name(40)}.{uuid.uuid4()}"  # version 40 > latest: may be pending
    done = f".tmp/{log_name(3)}.{uuid.uuid4()}"  # 3.json exists: kept without the DynamoDB table
    part = log_name(6, "checkpoint.0000000001.0000000002.parquet")  # an incomplete checkpoint
    backfilled = f"_commits/{log_name(2).removesuffix('.json')}.{uuid.uuid4()}.json"
    unbackfilled = f"_commits/{log_name(99).removesuffix('.json')}.{uuid.uuid4()}.json"
    for rel in (pending, done, part, backfilled, unbackfilled):
        (log / rel).parent.mkdir(parents=True, exist_ok=True)
        (log / rel).write_bytes(b"{}\n")
        age(log / rel, old)
    before = log_files(root)
    expected_gone = {log_name(v) for v in range(6)} | {
        log_name(3, "checkpoint.parquet"),
        part,
        backfilled,
    }
    assert expected_gone <= before

    dry = cli("log-cleanup", str(root), "--json")
    assert dry.returncode == 1, dry.stderr
    report = json.loads(dry.stdout)
    assert log_files(root) == before  # a dry run deletes nothing
    assert report["truncation_version"] == 6  # 9 is newer than the cut-off
    assert report["cutoff_ms"] == day_cutoff_ms(report["cutoff_ms"] + 30 * DAY, 30 * DAY)
    classes = {f["path"].removeprefix("_delta_log/"): f["class"] for f in report["files"]}
    planned = {p for p, c in classes.items() if c in ("expired-log", "log-temp")}
    assert planned == expected_gone
    assert classes[pending] == classes[done] == "pending-commit"

    tsv = cli("log-cleanup", str(root), "--format", "tsv")
    header, *rows = tsv.stdout.splitlines()
    assert header.split("\t") == ["path", "class", "kind", "size", "mtime_ms", "reason"]
    assert {r.split("\t")[0].removeprefix("_delta_log/") for r in rows} == set(classes)
    assert "dry run: would delete" in tsv.stderr

    audit = cli("audit", str(root), "--json")
    cost = json.loads(audit.stdout)["summary"]["log"]
    assert cost["log_cleanup_would_remove"] == len(expected_gone)
    assert cost["objects"] == len(before) and cost["versions_since_checkpoint"] == 10 - 9
    assert cost["by_kind"]["temp_commits"]["objects"] == 2

    manifests = tmp_path / "m"
    ran = cli("log-cleanup", str(root), "--yes", "--manifest", str(manifests))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert log_files(root) == before - expected_gone
    (run,) = run_dirs(manifests)
    doc = read_manifest(run).summary
    assert doc["command"] == "log-cleanup" and doc["counts"]["deleted"] == len(expected_gone)
    for v in range(6, 11):  # the oracle: delta-rs time travel to every retained version
        assert rows_at(root, v) == v + 1
    with pytest.raises(Exception):  # noqa: B017 - delta-rs's own error, whatever its type
        rows_at(root, 5)
    again = cli("log-cleanup", str(root), "--yes", "--manifest", str(manifests))
    assert again.returncode == 0 and "nothing to clean up" in again.stdout, again.stderr


# proves: docs/guides/log-cleanup.md "a table without a checkpoint older than the cut-off keeps
# every version"
def test_no_expired_checkpoint_keeps_every_version(tmp_path: Path, run_cli: Any) -> None:
    root = tmp_path / "t"
    delta_rs_table(
        root, 6, checkpoints=(4,), old_until=2
    )  # version 3 and the checkpoint are recent
    ran = cli("log-cleanup", str(root), "--yes", "--manifest", str(tmp_path / "m"))
    assert ran.returncode == 0 and "nothing to clean up" in ran.stdout, ran.stderr
    assert "no readable complete checkpoint whose previous version is older" in ran.stdout
    assert all(rows_at(root, v) == v + 1 for v in range(6))


# proves: docs/guides/log-cleanup.md "Only below a checkpoint" (Delta's rule: the version before
# the checkpoint must be expired, not the checkpoint itself)
def test_a_recent_checkpoint_after_an_expired_version_truncates(tmp_path: Path) -> None:
    root = tmp_path / "t"
    delta_rs_table(root, 6, checkpoints=(4,), old_until=3)  # the checkpoint itself is recent
    ran = cli("log-cleanup", str(root), "--yes", "--json", "--manifest", str(tmp_path / "m"))
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["truncation_version"] == 4
    assert not any((root / "_delta_log" / log_name(v)).exists() for v in range(4))
    assert all(rows_at(root, v) == v + 1 for v in range(4, 6))


def test_a_checkpoint_no_newer_than_the_file_before_it_is_passed_over(tmp_path: Path) -> None:
    """Delta adjusts the time of a file of a higher version that is not newer than the file
    before it, and an adjusted checkpoint never truncates: with checkpoint 4 as old as 3.json,
    the truncation checkpoint is 2."""
    root = tmp_path / "t"
    delta_rs_table(root, 6, checkpoints=(2, 4), old_until=5)
    log = root / "_delta_log"
    age(log / log_name(4, "checkpoint.parquet"), (log / log_name(3)).stat().st_mtime_ns // 10**6)
    ran = cli("log-cleanup", str(root), "--json")
    assert json.loads(ran.stdout)["truncation_version"] == 2


# proves: docs/guides/log-cleanup.md "delta.enableExpiredLogCleanup false and checkpointProtection
# are respected"
@pytest.mark.parametrize(
    ("configuration", "protocol", "why"),
    [
        ({"delta.enableExpiredLogCleanup": "false"}, None, "enableExpiredLogCleanup is false"),
        (
            {"delta.requireCheckpointProtectionBeforeVersion": "12"},
            {
                "minReaderVersion": 1,
                "minWriterVersion": 7,
                "writerFeatures": ["checkpointProtection"],
            },
            "checkpointProtection",
        ),
    ],
    ids=["cleanup-disabled", "checkpoint-protection"],
)
def test_table_properties_keep_versions(
    tmp_path: Path,
    run_cli: Any,
    configuration: dict[str, str],
    protocol: dict[str, Any] | None,
    why: str,
) -> None:
    t = SyntheticTable(tmp_path / "t", configuration=configuration)
    if protocol is not None:
        t.protocol = protocol
    t.create(NOW - 60 * DAY)
    for v in range(1, 12):
        t.commit([], NOW - 60 * DAY + v * 1000)
        if v == 8:
            t.checkpoint()
    before = log_files(t.root)
    ran = cli("log-cleanup", str(t.root), "--yes", "--json", "--manifest", str(tmp_path / "m"))
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout)
    assert report["truncation_version"] is None
    assert any(why in note for note in report["notes"]), report["notes"]
    assert log_files(t.root) == before


# proves: docs/guides/log-cleanup.md "sidecars no kept checkpoint names"
def test_sidecars_of_removed_v2_checkpoints_go_with_them(tmp_path: Path, run_cli: Any) -> None:
    t = SyntheticTable(tmp_path / "t")
    t.protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["v2Checkpoint"],
        "writerFeatures": ["v2Checkpoint"],
    }
    t.create(NOW - 60 * DAY)
    t.write_file("p=a/f.parquet", NOW - 60 * DAY)
    t.commit([{"add": t.add_action("p=a/f.parquet", NOW - 60 * DAY)}], NOW - 59 * DAY)
    first = t.v2_checkpoint()
    sidecars_before = set((t.log / "_sidecars").iterdir())
    for v in range(2, 5):
        t.commit([], NOW - 58 * DAY + v * 1000)
    kept = t.v2_checkpoint()
    t.commit([], NOW)
    ran = cli("log-cleanup", str(t.root), "--yes", "--json", "--manifest", str(tmp_path / "m"))
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["truncation_version"] == 4
    assert not (t.log / first).exists() and (t.log / kept).exists()
    assert not any(p.exists() for p in sidecars_before)  # named by the removed checkpoint only
    assert len(list((t.log / "_sidecars").iterdir())) == 1
    assert {log_name(v) for v in range(4, 6)} <= log_files(t.root)


# proves: docs/guides/log-cleanup.md "a retention under 24 hours is refused without
# --unsafe-retention"
def test_short_retention_is_refused(tmp_path: Path, run_cli: Any) -> None:
    root = tmp_path / "t"
    delta_rs_table(root, 3, checkpoints=(1,), old_until=2)
    ran = cli("log-cleanup", str(root), "--retention", "2h", "--yes")
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
    assert ran.stderr.startswith("deltaguard log-cleanup: a retention of 2 hours is under 24")
    assert "--unsafe-retention" in ran.stderr


# proves: docs/guides/log-cleanup.md "SIGINT/SIGTERM while deleting leaves a true manifest; the
# re-run finishes"
def test_signal_mid_delete_leaves_a_true_manifest(tmp_path: Path, run_cli: Any) -> None:
    t = SyntheticTable(tmp_path / "t")
    t.create(NOW - 60 * DAY)
    for v in range(1, 1500):
        t.commit([], NOW - 60 * DAY + v)
    t.checkpoint()
    t.commit([], NOW)
    planned = [f"_delta_log/{log_name(v)}" for v in range(t.version - 1)]
    manifests = tmp_path / "m"
    args = ["log-cleanup", str(t.root), "--yes", "--manifest", str(manifests)]
    gate = tmp_path / "gate"
    gate.mkdir()
    env = {"PYTHONPATH": str(Path(__file__).parent / "unlink_gate"),
           "DELTAGUARD_TEST_UNLINK_GATE": str(gate),
           "DELTAGUARD_TEST_UNLINK_ROOT": str(t.root)}  # fmt: skip
    proc = start_cli(*args, env=env)
    manifest = wait_for_status(manifests, "deleting", proc)
    while not (gate / "held").exists():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    assert proc.stderr is not None
    seen = [proc.stderr.readline()]
    while seen[-1] and "SIGINT: stopping" not in seen[-1]:
        seen.append(proc.stderr.readline())
    (gate / "go").touch()
    code, out, err = finish(proc)
    gone = {p for p in planned if not (t.root / p).exists()}
    check_interrupted((code, out, "".join(seen) + err), manifest, planned, gone, "SIGINT")
    again = run_cli(*args)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "continues the unfinished run" in again.stdout
    assert not any((t.root / p).exists() for p in planned)
    assert (t.log / log_name(t.version - 1, "checkpoint.parquet")).exists()


# proves: docs/guides/log-cleanup.md "a DynamoDB temp commit goes once N.json exists and its entry
# is complete; a pending one never"
def test_dynamodb_temp_commits_on_localstack(
    localstack: Any,
    ls_bucket: str,
    ls_commit_table: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On LocalStack (S3 and DynamoDB). S3 sets the modification times (now), so the run's
    clock is moved two days on instead (the cut-off is truncated to the day)."""
    from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
    from deltaguard.tools.orphans.log_cleanup_run import LogCleanupRequest, run_log_cleanup
    from deltaguard.tools.storage import S3Options

    t = SyntheticTable(tmp_path / "t")
    t.create(NOW)
    for v in range(1, 7):
        t.commit([], NOW)
        if v == 4:
            t.checkpoint()
    temps = {
        "done2": f"_delta_log/.tmp/{log_name(2)}.{uuid.uuid4()}",  # 2.json removed, complete
        "done5": f"_delta_log/.tmp/{log_name(5)}.{uuid.uuid4()}",  # 5.json exists, complete
        "open6": f"_delta_log/.tmp/{log_name(6)}.{uuid.uuid4()}",  # 6.json exists, incomplete
        "pending7": f"_delta_log/.tmp/{log_name(7)}.{uuid.uuid4()}",  # 7.json missing
    }
    for rel in temps.values():
        t.write_file(rel, NOW, size=3)
    endpoint = localstack.endpoint
    upload_table(t.root, endpoint.s3_client(), ls_bucket, "lake/t")
    # the checkpoint stored after the commit before it, as a writer stores it: Delta's cleanup
    # never truncates at a checkpoint no newer than the file before it (S3 sets the times)
    time.sleep(1.1)
    checkpoint = f"_delta_log/{log_name(4, 'checkpoint.parquet')}"
    endpoint.s3_client().put_object(
        Bucket=ls_bucket, Key=f"lake/t/{checkpoint}", Body=(t.root / checkpoint).read_bytes()
    )
    ddb = endpoint.dynamodb_client()
    table_path = f"s3a://{ls_bucket}/lake/t"
    for version, key, complete in (
        (2, "done2", True),
        (5, "done5", True),
        (6, "open6", False),
        (7, "pending7", False),
    ):
        put_entry(
            ddb,
            ls_commit_table,
            table_path,
            version,
            temps[key].removeprefix("_delta_log/"),
            complete=complete,
        )
    for name, value in endpoint.credentials_env().items():
        monkeypatch.setenv(name, value)
    request = LogCleanupRequest(
        table=f"s3://{ls_bucket}/lake/t",
        s3=S3Options(endpoint.url, endpoint.region, True),
        retention_ms=0,
        unsafe_retention=True,
        yes=True,
        as_json=True,
        manifest_path=tmp_path / "m",
        dynamodb=DynamoDBCheck(ddb, ls_commit_table, (table_path,)),
        now_ms=NOW + 2 * DAY,
    )
    assert run_log_cleanup(request) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["truncation_version"] == 4
    keys = {
        o["Key"].removeprefix("lake/t/")
        for page in endpoint.s3_client().get_paginator("list_objects_v2").paginate(Bucket=ls_bucket)
        for o in page.get("Contents", [])
    }
    gone = {f"_delta_log/{log_name(v)}" for v in range(4)} | {temps["done2"]}
    assert not gone & keys
    # a finished temp commit goes with its version; of a retained version it is the evidence
    kept = {f"_delta_log/{log_name(v)}" for v in range(4, 7)}
    kept |= {temps["done5"], temps["open6"], temps["pending7"]}
    classes = {f["path"]: f["class"] for f in report["files"]}
    assert classes[temps["done5"]] == "commit-evidence"
    assert report["totals"]["commit-evidence"] == {"files": 1, "bytes": 3}
    assert kept | {f"_delta_log/{log_name(4, 'checkpoint.parquet')}"} <= keys
    assert report["cleanup"]["counts"]["deleted"] == len(gone)


# proves: docs/guides/log-cleanup.md "right before deleting it lists and replays the log again and
# spares any file the new plan no longer removes"
def test_the_reread_spares_what_is_no_longer_removable(tmp_path: Path) -> None:
    """Between the scan and the deletes a writer rewrites commit 2 (its modification time is
    now, so every later version's time is too): no checkpoint is older than the cut-off any
    more, and the re-read spares every planned commit."""
    from deltaguard.tools.orphans.cleanup import CleanupOptions, execute
    from deltaguard.tools.orphans.log_cleanup import log_cleanup_plan, scan_log
    from deltaguard.tools.storage import open_table

    t = SyntheticTable(tmp_path / "t")
    t.create(NOW - 60 * DAY)
    for v in range(1, 8):
        t.commit([], NOW - 60 * DAY + v * 1000)
        if v == 5:
            t.checkpoint()
    store = open_table(str(t.root))
    scan = scan_log(store)
    assert scan.truncation_version == 5 and len(scan.result.of(*LOG_CLEANUP)) == 5
    age(t.log / log_name(2), NOW)
    plan = log_cleanup_plan(store, scan, given_retention=False, dynamodb=None)
    done = execute(
        store, scan.result, manifest_path=tmp_path / "m", options=CleanupOptions(), plan=plan
    )
    assert done.counts["deleted"] == 0 and done.counts["spared"] == 5
    assert all((t.log / log_name(v)).exists() for v in range(8))
    spared = read_manifest(tmp_path / "m").records()
    assert set(spared["outcome"].to_pylist()) == {"spared"}
    assert "no longer removable at the re-read" in spared["why"][0].as_py()
