"""Delta tables written by real Spark Delta, for tests of the log reader (and of anything built
on its replay): one Spark session writes them all, then records Spark's own view of each.

``python -m deltaguard.localstack.delta_tables OUTDIR`` (or :func:`build_tables`, which runs it in
a subprocess so no JVM stays in the caller) writes, under ``OUTDIR``:

========================  ==================================================================
table                     what it exercises
========================  ==================================================================
``partitioned``           appends, a full overwrite, partition values that need URL encoding
                          (space, ``/``, ``%``, ``=``, non-ASCII), classic checkpoints
``dv_cdc``                deletion vectors (DELETE twice on one file, UPDATE), change data
                          feed (``_change_data/`` files), checkpoints every 2 commits
``multipart``             multi-part checkpoints (``checkpoint.partSize`` = 1)
``v2``                    V2 checkpoints (``delta.checkpointPolicy = v2``): UUID-named,
                          JSON and parquet top level, sidecars; DVs and in-commit
                          timestamps on
``column_mapping``        column mapping by name, a renamed column, a partition column with a
                          space in its name
========================  ==================================================================

and ``OUTDIR/expected.json``: for every table and each of its versions, the absolute paths of
the live files Spark's own snapshot reads (``inputFiles()``, as filesystem paths) and each version's
commit timestamp as Spark's history reports it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deltaguard.localstack.spark_driver import build_test_session
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.storage import LocalStorage

TABLES = ("partitioned", "dv_cdc", "multipart", "v2", "column_mapping")
ENCODED_PARTITION_VALUES = ("a b", "x/y%z", "k=v", "日本")


@dataclass(frozen=True)
class SparkTables:
    """Where :func:`build_tables` put the tables, and what Spark saw in them."""

    root: Path
    expected: dict[str, Any]

    def path(self, name: str) -> Path:
        return self.root / name

    def live_files(self, name: str, version: int) -> list[str]:
        """Spark's live files of ``name`` at ``version`` (absolute, decoded, sorted)."""
        return sorted(self.expected[name]["versions"][str(version)]["files"])

    def versions(self, name: str) -> list[int]:
        return sorted(int(v) for v in self.expected[name]["versions"])


def build_tables(out: Path, timeout_s: float = 900) -> SparkTables:
    """Writes every table under ``out`` with Spark (in a child process) and returns them.
    Raises RuntimeError with the child's output tail if Spark fails."""
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "deltaguard.localstack.delta_tables", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"writing Spark test tables failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
        )
    return load_tables(out)


def load_tables(out: Path) -> SparkTables:
    """Tables an earlier :func:`build_tables` (or ``main``) wrote under ``out``."""
    return SparkTables(out, json.loads((out / "expected.json").read_text()))


def _input_file_path(path: str) -> str:
    """``inputFiles()`` gives Hadoop ``Path`` strings (not URI-encoded): drop ``file:``."""
    return path.removeprefix("file://").removeprefix("file:")


def _record(spark: Any, path: str) -> dict[str, Any]:
    from delta.tables import DeltaTable

    history = DeltaTable.forPath(spark, path).history().select("version", "timestamp").collect()
    versions: dict[str, Any] = {}
    for row in history:
        files = (
            spark.read.format("delta").option("versionAsOf", row.version).load(path).inputFiles()
        )
        versions[str(row.version)] = {
            "files": sorted(_input_file_path(f) for f in files),
            "timestamp_ms": int(row.timestamp.timestamp() * 1000),
        }
    return {"versions": versions}


def _partitioned(spark: Any, path: str) -> None:
    def rows(start: int) -> Any:
        values = ", ".join(f"({start + i}, '{v}')" for i, v in enumerate(ENCODED_PARTITION_VALUES))
        return spark.sql(f"SELECT * FROM VALUES {values} AS t(id, p)")

    rows(0).write.format("delta").partitionBy("p").option("delta.checkpointInterval", "3").save(
        path
    )
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.checkpointInterval' = '3')")
    rows(10).write.format("delta").mode("append").save(path)
    rows(20).write.format("delta").mode("overwrite").save(path)
    rows(30).write.format("delta").mode("append").save(path)


def _dv_cdc(spark: Any, path: str) -> None:
    spark.range(0, 20, 1, 2).selectExpr("id", "id % 3 AS g").write.format("delta").save(path)
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', "
        "'delta.enableChangeDataFeed' = 'true', 'delta.checkpointInterval' = '2')"
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")
    spark.sql(f"UPDATE delta.`{path}` SET g = 7 WHERE id = 15")
    spark.range(100, 103).selectExpr("id", "CAST(0 AS BIGINT) AS g").write.format("delta").mode(
        "append"
    ).save(path)


def _multipart(spark: Any, path: str) -> None:
    spark.conf.set("spark.databricks.delta.checkpoint.partSize", "1")
    try:
        spark.range(0, 4, 1, 2).write.format("delta").option("delta.checkpointInterval", "2").save(
            path
        )
        spark.sql(
            f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.checkpointInterval' = '2')"
        )
        spark.range(4, 6).write.format("delta").mode("append").save(path)
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 4")
    finally:
        spark.conf.unset("spark.databricks.delta.checkpoint.partSize")


def _v2(spark: Any, path: str) -> None:
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, s STRING) USING delta TBLPROPERTIES ("
        "'delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2', "
        "'delta.enableDeletionVectors' = 'true', 'delta.enableInCommitTimestamps' = 'true')"
    )
    fmt = "spark.databricks.delta.checkpointV2.topLevelFileFormat"
    spark.conf.set(fmt, "json")
    try:
        spark.range(0, 6, 1, 2).selectExpr("id", "'a' AS s").write.format("delta").mode(
            "append"
        ).save(path)
        spark.range(6, 8).selectExpr("id", "'b' AS s").write.format("delta").mode("append").save(
            path
        )  # v2: JSON top-level checkpoint
        spark.conf.set(fmt, "parquet")
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")
        spark.range(8, 9).selectExpr("id", "'c' AS s").write.format("delta").mode("append").save(
            path
        )  # v4: parquet top-level checkpoint
    finally:
        spark.conf.unset(fmt)


def _column_mapping(spark: Any, path: str) -> None:
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, `my part` STRING) USING delta "
        "PARTITIONED BY (`my part`) TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
        "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
    )
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a b'), (2, 'c%d')")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN id TO ident")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 'a b')")


WRITERS: dict[str, Callable[[Any, str], None]] = {
    "partitioned": _partitioned,
    "dv_cdc": _dv_cdc,
    "multipart": _multipart,
    "v2": _v2,
    "column_mapping": _column_mapping,
}


def main(argv: list[str] | None = None) -> int:
    out = Path((argv or sys.argv[1:])[0]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    spark = build_test_session(
        LocalStorage(),
        PresetName.LOCAL,
        app_name="deltaguard-test-tables",
        local_dir=out / "_spark",
        extra_conf={"spark.databricks.delta.properties.defaults.checkpointInterval": "3"},
    )
    try:
        expected: dict[str, Any] = {}
        for name, write in WRITERS.items():
            path = str(out / name)
            write(spark, path)
            expected[name] = _record(spark, path)
        (out / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
