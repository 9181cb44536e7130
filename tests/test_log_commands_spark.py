"""``deltaguard checkpoint`` and ``log-cleanup`` next to Spark (issue 51, parts 1 and 3), one
Spark session for the module:

* a V2 checkpoint (sidecars; JSON and parquet top-level files) written by deltaguard on a
  Spark-written table with deletion vectors and in-commit timestamps: Spark (the default line,
  and Spark 3.5 in its own driver) and delta-rs read from it alone (the commits before it
  deleted) what the JSON replay gave, and a Spark append after it commits normally;
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
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from local_spark import local_spark_session
from test_spark_lines_e2e import line_python  # noqa: F401  (a fixture)

from deltaguard.localstack.multi_driver import driver_env
from deltaguard.localstack.spark_read import table_relative
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.exit_codes import audit_exit_code

pytestmark = pytest.mark.spark

DAY_S = 86_400


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with local_spark_session(tmp_path_factory, "log-commands") as session:
        yield session


def _rows_spark(spark: Any, root: Path, version: int | None = None) -> list[tuple[Any, ...]]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(tuple(r) for r in reader.load(str(root)).collect())


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


def _line_reads(python: str, root: Path, scratch: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [python, "-m", "deltaguard.localstack.spark_read", str(root), str(scratch)],
        env=driver_env(python=python),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, f"the Spark line could not read the table:\n{proc.stderr[-4000:]}"
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


# proves: docs/guides/checkpoint.md "What it writes": V2, "first the sidecars" then the top-level file
@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_v2_checkpoint_reads_in_spark_and_delta_rs(
    fmt,
    spark,
    run_cli,
    line_python,  # noqa: F811
    tmp_path,
):
    root = tmp_path / "t"
    _v2_table(spark, root)
    log = root / "_delta_log"
    assert not any(".checkpoint." in p.name for p in log.iterdir())
    latest = load_snapshot(str(root)).version
    replay = _files_replay(root)  # from the JSON commits alone
    spark_before, rs_before = _rows_spark(spark, root), _rows_delta_rs(root)
    assert spark_before == rs_before and len(spark_before) == 11

    done = run_cli("checkpoint", str(root), "--v2-format", fmt, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["checkpoint"].endswith(f".{fmt}") and len(report["sidecars"]) == 1
    hint_text = (log / "_last_checkpoint").read_text()
    assert json.loads(hint_text)["v2Checkpoint"]["path"] == report["checkpoint"]
    checksums = spark._jvm.org.apache.spark.sql.delta.LastCheckpointInfo.getChecksums(hint_text)
    assert checksums._1().get() == checksums._2()  # Spark's own check of the hint's checksum
    for f in log.iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) < latest:
            f.unlink()
    assert load_snapshot(str(root)).segment.checkpoint is not None

    assert _files_spark(spark, root) == replay
    assert _rows_spark(spark, root) == spark_before
    assert _rows_spark(spark, root, latest) == spark_before
    assert {table_relative(u, root) for u in DeltaTable(str(root)).file_uris()} == replay
    assert _rows_delta_rs(root) == rs_before
    assert _rows_delta_rs(root, latest) == rs_before
    # every other supported line, each in its own driver: the installed line (4.2) read above
    for name in {"json": ("3.5", "4.1"), "parquet": ("4.0",)}[fmt]:
        line = _line_reads(line_python(name), root, tmp_path / f"line-{name}")
        assert line["spark"].startswith(f"{name}."), line
        assert set(line["files"]) == replay and line["rows"] == len(rs_before), line

    spark.range(20, 21).selectExpr("id", "'c' AS s").write.format("delta").mode("append").save(
        str(root)
    )
    assert load_snapshot(str(root)).version == latest + 1
    assert len(_rows_spark(spark, root)) == len(spark_before) + 1
    assert len(_rows_delta_rs(root)) == len(rs_before) + 1
    assert audit_exit_code(audit_table(str(root))) == 0


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
