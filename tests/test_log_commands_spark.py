"""``deltaguard checkpoint`` and ``log-cleanup`` next to Spark (issue 51, parts 1 and 3), one
Spark session for the module:

* deltaguard's checkpoints of Spark-written tables, built once for the module: a classic
  checkpoint (column mapping by name with a renamed column, deletion vectors, row tracking and
  its domain metadata, in-commit timestamps) and, on two copies of one table with deletion
  vectors and in-commit timestamps, V2 checkpoints with sidecars and a JSON and a parquet
  top-level file. The commits before each
  checkpoint are deleted, so readers can only start from it. The installed line (4.2) and
  delta-rs read from it what the JSON replay gave (row ids too), and a Spark append after it
  commits normally; every other supported line (3.5, 4.0, 4.1) reads all three tables in ONE
  driver of its own and gets the replay's live files and delta-rs's rows;
* ``log-cleanup --yes`` on a Spark table with several multi-part checkpoints whose oldest
  versions were aged: Spark's own ``MetadataCleanup`` run afterwards removes nothing (deltaguard
  removed all Delta would, and Delta would remove nothing deltaguard kept), and every retained
  version reads as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from local_spark import local_spark_session
from test_spark_lines_e2e import OTHER_LINES, line_python  # noqa: F401  (a fixture)

from deltaguard.localstack.multi_driver import driver_env
from deltaguard.localstack.spark_read import json_row, table_relative
from deltaguard.localstack.table_copies import copy_table
from deltaguard.tools.commands.audit import audit_exit_code
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.audit import audit_table

pytestmark = pytest.mark.spark

DAY_S = 86_400


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with local_spark_session(tmp_path_factory, "log-commands") as session:
        yield session


def _rows_spark(
    spark: Any, root: Path, version: int | None = None, columns: tuple[str, ...] = ("*",)
) -> list[tuple[Any, ...]]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(tuple(r) for r in reader.load(str(root)).selectExpr(*columns).collect())


def _files_spark(spark: Any, root: Path) -> set[str]:
    df = spark.read.format("delta").load(str(root))
    return {table_relative(f, root) for f in df.inputFiles()}


def _rows_delta_rs(root: Path, version: int | None = None) -> list[tuple[Any, ...]]:
    """Every row delta-rs reads through DataFusion (deletion vectors applied), sorted."""
    dt = DeltaTable(str(root), version=version)
    data = pa.table(QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all())
    return sorted(tuple(r.values()) for r in data.to_pylist())


def _files_replay(root: Path) -> set[str]:
    return {table_relative(loc, root) for loc in load_snapshot(str(root)).live_locations()}


def _v2_table(spark: Any, root: Path) -> None:
    """V2 checkpoint policy, deletion vectors, in-commit timestamps; no checkpoint of Spark's
    own (interval 100): appends and a DELETE that leaves a deletion vector."""
    spark.sql(
        f"CREATE TABLE delta.`{root}` (id BIGINT, s STRING) USING delta TBLPROPERTIES ("
        "'delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '100', "
        "'delta.enableDeletionVectors' = 'true', 'delta.enableInCommitTimestamps' = 'true')"
    )
    df = spark.range(0, 10, 1, 2).selectExpr("id", "'a' AS s")
    df.write.format("delta").mode("append").save(str(root))
    spark.sql(f"DELETE FROM delta.`{root}` WHERE id = 3")
    spark.range(10, 12).selectExpr("id", "'b' AS s").write.format("delta").mode("append").save(
        str(root)
    )


def _classic_table(spark: Any, root: Path) -> None:
    """The classic checkpoint policy with every feature a classic checkpoint must carry:
    column mapping by name (then a renamed column), deletion vectors (a DELETE and an UPDATE),
    row tracking (its domain metadata: the row-id high-water mark), in-commit timestamps; no
    checkpoint of Spark's own (interval 100)."""
    spark.sql(
        f"CREATE TABLE delta.`{root}` (id BIGINT, s STRING) USING delta TBLPROPERTIES ("
        "'delta.columnMapping.mode' = 'name', 'delta.checkpointInterval' = '100', "
        "'delta.enableDeletionVectors' = 'true', 'delta.enableRowTracking' = 'true', "
        "'delta.enableInCommitTimestamps' = 'true')"
    )
    df = spark.range(0, 10, 1, 2).selectExpr("id", "'a' AS s")
    df.write.format("delta").mode("append").save(str(root))
    spark.sql(f"ALTER TABLE delta.`{root}` RENAME COLUMN s TO label")
    spark.sql(f"DELETE FROM delta.`{root}` WHERE id = 3")
    spark.sql(f"UPDATE delta.`{root}` SET label = 'z' WHERE id = 5")
    spark.range(10, 12).selectExpr("id", "'b' AS label").write.format("delta").mode("append").save(
        str(root)
    )


#: The checkpoint forms deltaguard writes, each on its own Spark-written table: the CLI's extra
#: options and the table's builder.
FORMS: dict[str, tuple[tuple[str, ...], Any]] = {
    "classic": ((), _classic_table),
    "v2-json": (("--v2-format", "json"), _v2_table),
    "v2-parquet": (("--v2-format", "parquet"), _v2_table),
}

#: The row-tracking columns Spark reads from the checkpoint's baseRowId / defaultRowCommitVersion.
_ROW_IDS = ("id", "_metadata.row_id", "_metadata.row_commit_version")


@dataclass(frozen=True)
class Checkpointed:
    """A table of one form after ``deltaguard checkpoint`` and the deletion of every log file
    before the checkpoint's version, with what the readers saw before."""

    #: the table (the default line's test appends to it)
    root: Path
    #: a copy taken right after the deletion, for the other lines' drivers
    pristine: Path
    latest: int
    #: checkpoint files Spark wrote before deltaguard's (none: interval 100)
    spark_checkpoints: list[str]
    #: the live files of the JSON replay (before the checkpoint), table-relative
    replay: set[str]
    spark_before: list[tuple[Any, ...]]
    rs_before: list[tuple[Any, ...]]
    #: Spark's row ids and row commit versions before (row-tracking tables only)
    ids_before: list[tuple[Any, ...]] | None
    done: subprocess.CompletedProcess[str]
    hint_text: str


@pytest.fixture(scope="module")
def checkpointed(
    spark: Any, run_cli: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Checkpointed]:
    """Every form of :data:`FORMS`, built and checkpointed once for the module (each on a copy
    of its builder's table: the two V2 forms share one build)."""
    out: dict[str, Checkpointed] = {}
    built: dict[Any, Path] = {}
    for form, (options, build) in FORMS.items():
        base = tmp_path_factory.mktemp(f"ckpt-{form}")
        if build not in built:
            built[build] = base / "built"
            build(spark, built[build])
        root = copy_table(built[build], base / "t")
        log = root / "_delta_log"
        spark_checkpoints = sorted(p.name for p in log.iterdir() if ".checkpoint." in p.name)
        latest = load_snapshot(str(root)).version
        replay = _files_replay(root)  # from the JSON commits alone
        spark_before, rs_before = _rows_spark(spark, root), _rows_delta_rs(root)
        row_tracking = "rowTracking" in load_snapshot(str(root)).protocol.writer_features
        ids_before = _rows_spark(spark, root, columns=_ROW_IDS) if row_tracking else None
        done = run_cli("checkpoint", str(root), *options, "--json")
        hint = log / "_last_checkpoint"
        hint_text = hint.read_text() if hint.exists() else ""
        if done.returncode == 0:
            for f in log.iterdir():
                if f.name[:20].isdigit() and int(f.name[:20]) < latest:
                    f.unlink()
        pristine = copy_table(root, base / "pristine")
        out[form] = Checkpointed(
            root,
            pristine,
            latest,
            spark_checkpoints,
            replay,
            spark_before,
            rs_before,
            ids_before,
            done,
            hint_text,
        )
    return out


def _line_reads(python: str, roots: list[Path], scratch: Path) -> dict[str, Any]:
    """One driver of the line of ``python`` reads every table of ``roots``
    (:mod:`deltaguard.localstack.spark_read`): its report."""
    proc = subprocess.run(
        [python, "-m", "deltaguard.localstack.spark_read", *map(str, roots), str(scratch)],
        env=driver_env(python=python),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, f"the Spark line's driver failed:\n{proc.stderr[-4000:]}"
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


# proves: docs/guides/checkpoint.md "What it writes": V2, "first the sidecars" then the top-level
# file; classic, every feature's fields kept
@pytest.mark.parametrize("form", list(FORMS))
def test_checkpoint_reads_in_spark_and_delta_rs(form, spark, checkpointed):
    table = checkpointed[form]
    root, latest, replay = table.root, table.latest, table.replay
    spark_before, rs_before = table.spark_before, table.rs_before
    log = root / "_delta_log"
    assert table.spark_checkpoints == []
    assert spark_before == rs_before and len(spark_before) == 11

    done = table.done
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    hint = json.loads(table.hint_text)
    if form == "classic":
        assert report["checkpoint"] == f"{latest:020d}.checkpoint.parquet", report
        assert not report["sidecars"] and "v2Checkpoint" not in hint
    else:
        fmt = form.removeprefix("v2-")
        assert report["checkpoint"].endswith(f".{fmt}") and len(report["sidecars"]) == 1
        assert hint["v2Checkpoint"]["path"] == report["checkpoint"]
    assert hint["version"] == latest
    jvm = spark._jvm
    checksums = jvm.org.apache.spark.sql.delta.LastCheckpointInfo.getChecksums(table.hint_text)
    assert checksums._1().get() == checksums._2()  # Spark's own check of the hint's checksum
    assert load_snapshot(str(root)).segment.checkpoint is not None
    assert min(int(f.name[:20]) for f in log.iterdir() if f.name[:20].isdigit()) == latest

    assert _files_spark(spark, root) == replay
    assert _rows_spark(spark, root) == spark_before
    assert _rows_spark(spark, root, latest) == spark_before
    assert {table_relative(u, root) for u in DeltaTable(str(root)).file_uris()} == replay
    assert _rows_delta_rs(root) == rs_before
    assert _rows_delta_rs(root, latest) == rs_before
    if table.ids_before is not None:
        assert _rows_spark(spark, root, columns=_ROW_IDS) == table.ids_before

    column = "label" if form == "classic" else "s"
    spark.range(20, 21).selectExpr("id", f"'c' AS {column}").write.format("delta").mode(
        "append"
    ).save(str(root))
    assert load_snapshot(str(root)).version == latest + 1
    assert len(_rows_spark(spark, root)) == len(spark_before) + 1
    assert len(_rows_delta_rs(root)) == len(rs_before) + 1
    if table.ids_before is not None:
        ids_after = _rows_spark(spark, root, columns=_ROW_IDS)
        new = [r for r in ids_after if r[2] == latest + 1]
        assert len(new) == 1 and new[0][1] > max(r[1] for r in table.ids_before)  # high-water mark
        assert [r for r in ids_after if r[2] != latest + 1] == table.ids_before
    assert audit_exit_code(audit_table(str(root))) == 0


# proves: docs/guides/checkpoint.md "Which readers were checked": every other supported line
# reads every form, one driver per line for all of them (the installed 4.2 line: above)
@pytest.mark.parametrize("line", OTHER_LINES)
def test_every_line_reads_deltaguards_checkpoints(
    line,
    checkpointed,
    line_python,  # noqa: F811
    tmp_path,
):
    forms = list(FORMS)
    read = _line_reads(line_python(line), [checkpointed[f].pristine for f in forms], tmp_path)
    assert read["spark"].startswith(f"{line}."), read["spark"]
    for form, got in zip(forms, read["tables"], strict=True):
        expected = checkpointed[form]
        assert "error" not in got, (form, got["error"][:4000] if "error" in got else None)
        assert set(got["files"]) == expected.replay, (form, got)
        assert got["rows"] == len(expected.rs_before), (form, got)
        rs_values = sorted(
            (json.loads(json_row(list(r))) for r in expected.rs_before), key=json_row
        )
        assert got["values"] == rs_values, (form, got)


def _log_files(root: Path) -> set[str]:
    log = root / "_delta_log"
    return {p.relative_to(log).as_posix() for p in log.rglob("*") if p.is_file()}


# proves: docs/guides/log-cleanup.md "Spark's own MetadataCleanup afterwards removes nothing"
def test_spark_metadata_cleanup_finds_nothing_after_log_cleanup(spark, tmp_path):
    """Versions 0-7 by Spark, a multi-part checkpoint every 2 versions (2, 4, 6); the log files
    of versions 0-3 are 60 days old (a second apart). Delta's rule truncates at checkpoint 4:
    the version before it is expired, though the checkpoint itself is not."""
    from click.testing import CliRunner

    from deltaguard.tools.cli import main

    root = tmp_path / "mp"
    spark.conf.set("spark.databricks.delta.checkpoint.partSize", "1")
    try:
        spark.range(0, 2, 1, 1).write.format("delta").option("delta.checkpointInterval", "2").save(
            str(root)
        )
        for i in range(1, 8):
            spark.range(i * 10, i * 10 + 2, 1, 1).write.format("delta").mode("append").save(
                str(root)
            )
    finally:
        spark.conf.unset("spark.databricks.delta.checkpoint.partSize")
    files = _log_files(root)
    assert {f[:20] for f in files if ".checkpoint." in f and f[0] != "."} == {
        f"{v:020d}" for v in (2, 4, 6)
    }
    before = {v: _rows_spark(spark, root, v) for v in range(8)}
    old = time.time() - 60 * DAY_S
    for f in (root / "_delta_log").iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) < 4:
            os.utime(f, (old + int(f.name[:20]), old + int(f.name[:20])))

    done = CliRunner().invoke(
        main, ["log-cleanup", str(root), "--yes", "--json", "--manifest", str(tmp_path / "m")]
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["truncation_version"] == 4
    kept = _log_files(root)
    assert not {f for f in kept if f[:20].isdigit() and int(f[:20]) < 4}

    jvm = spark._jvm
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(root))
    delta_log.doLogCleanup(delta_log.unsafeVolatileSnapshot(), jvm.scala.Option.empty())
    assert _log_files(root) == kept  # Spark's MetadataCleanup removed nothing more

    for v in range(4, 8):
        assert _rows_spark(spark, root, v) == before[v], v
    with pytest.raises(Exception, match=r"(?i)time travel|reconstruct|version"):
        _rows_spark(spark, root, 3)
