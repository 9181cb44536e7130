"""``deltaguard repair`` on Spark-written tables (copies of the session's ``spark_tables``):
partition values that need encoding with classic checkpoints, a missing deletion vector file,
V2 checkpoints with sidecars and in-commit timestamps, several kinds of damage at once. After
the repair, Spark (reading, then checkpointing and appending), delta-rs and deltaguard's
replay see the same live files and the audit is healthy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from local_spark import local_spark_session

from deltaguard.localstack.delta_tables import ENCODED_PARTITION_VALUES
from deltaguard.localstack.table_copies import copy_table
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.audit import audit_table

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with local_spark_session(tmp_path_factory, "repair") as session:
        yield session


def _spark_files(spark: Any, root: Path) -> set[str]:
    df = spark.read.format("delta").load(str(root))
    assert df.count() >= 0  # reads every live file: fails on a missing or broken one
    return {Path(f.removeprefix("file:")).as_posix() for f in df.inputFiles()}


def _replay_files(root: Path) -> set[str]:
    snap = load_snapshot(str(root))
    return {Path(loc.removeprefix("file:")).as_posix() for loc in snap.live_locations()}


def _agree(spark: Any, root: Path) -> set[str]:
    replay = _replay_files(root)
    assert _spark_files(spark, root) == replay
    rs = {Path(u.removeprefix("file://")).as_posix() for u in DeltaTable(str(root)).file_uris()}
    assert rs == replay
    report = audit_table(str(root))
    assert report.exit_code == 0, report.findings
    return replay


def _last_commit(root: Path) -> list[dict]:
    version = load_snapshot(str(root)).version
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _repair(run_cli: Any, root: Path, *args: str) -> None:
    dry = run_cli("repair", str(root), *args)
    assert dry.returncode == 1, dry.stdout + dry.stderr
    done = run_cli("repair", str(root), *args, "--yes")
    assert done.returncode == 0, done.stdout + done.stderr


def test_encoded_partitions_deleted_truncated_and_a_missing_directory(
    spark_tables, spark, run_cli, tmp_path
):
    root = copy_table(spark_tables.path("partitioned"), tmp_path / "t")
    snap = load_snapshot(str(root))
    by_dir: dict[str, list[str]] = {}
    for p in snap.adds.paths():
        by_dir.setdefault(p.rsplit("/", 1)[0], []).append(p)
    dirs = sorted(by_dir)
    encoded = [d for d in dirs if any(v in d for v in ENCODED_PARTITION_VALUES)]
    assert len(encoded) >= 2, dirs
    (root / by_dir[encoded[0]][0]).unlink()
    truncated = root / by_dir[encoded[1]][0]
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    gone_dir = next(d for d in dirs if d not in encoded[:2])
    for p in by_dir[gone_dir]:
        (root / p).unlink()
    expected = len(snap.adds) - 2 - len(by_dir[gone_dir])

    _repair(run_cli, root, "--check", "footers")
    removes = [a["remove"] for a in _last_commit(root) if "remove" in a]
    assert len(removes) == 2 + len(by_dir[gone_dir])
    assert any("%" in r["path"] for r in removes), "the raw, encoded path of the add"
    assert len(_agree(spark, root)) == expected
    # a checkpoint after the repair, then a Spark append: still in agreement
    jvm = spark._jvm
    jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(root)).checkpoint()
    spark.read.format("delta").load(str(root)).limit(1).write.format("delta").mode("append").save(
        str(root)
    )
    assert len(_agree(spark, root)) == expected + 1


def test_missing_deletion_vector_file(spark_tables, spark, run_cli, tmp_path):
    root = copy_table(spark_tables.path("dv_cdc"), tmp_path / "t")
    snap = load_snapshot(str(root))
    data_file, dv = next(iter(snap.adds.deletion_vectors()))
    (root / dv.file_path()).unlink()
    _repair(run_cli, root)
    removes = [a["remove"] for a in _last_commit(root) if "remove" in a]
    assert len(removes) == 1 and removes[0]["deletionVector"]["pathOrInlineDv"] == (
        dv.path_or_inline_dv
    )
    live = _agree(spark, root)
    assert str(root / data_file) not in live and len(live) == len(snap.adds) - 1


def test_v2_checkpoint_table_with_in_commit_timestamps(spark_tables, spark, run_cli, tmp_path):
    root = copy_table(spark_tables.path("v2"), tmp_path / "t")
    snap = load_snapshot(str(root))
    victim = sorted(snap.adds.paths())[0]
    (root / victim).unlink()
    _repair(run_cli, root)
    info = _last_commit(root)[0]["commitInfo"]
    assert info["inCommitTimestamp"] > (snap.timestamp_ms or 0)
    live = _agree(spark, root)
    assert str(root / victim) not in live and len(live) == len(snap.adds) - 1
