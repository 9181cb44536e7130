"""The Spark driver of tests/test_log_cleanup_live.py: one session carrying both of deltaguard's
S3 commit paths, chosen by scheme as Delta chooses a LogStore (``s3a://``: the
``s3-conditional`` preset's ``S3ConditionalLogStore``; ``s3://``: the ``s3-dynamodb`` preset's
``S3DynamoDBLogStore`` on ``--dynamodb-table``), so one JVM writes both tables of the test.

It creates both tables (``delta.checkpointInterval`` 1000: the test decides where checkpoints
are; ``delta.logRetentionDuration`` a day: the test's cleanup retention, for Delta's own
cleanup at the end), then until ``CONTROL/stop`` exists, per round: reads ``CONTROL/floor.json`` (``gen`` and
per table the oldest version every cleanup keeps), writes ``CONTROL/ack-spark`` = ``gen`` (no
operation begun under an older floor is still running), appends ``--rows`` rows to each table
(tag ``spark/<table>/<batch>`` as ``userMetadata``), then reads one retained version of each
by time travel (between the floor and the table's latest) and logs every append and read to
``CONTROL/spark.jsonl``. After ``stop`` it writes ``CONTROL/stopped`` and waits for ``CONTROL/final.json`` (per table the
versions to read, one removed version and ``now_ms``, the clock of the test's last cleanup) and
prints ``DELTAGUARD-RESULT {json}``: each retained version's row count and distinct (writer,
batch) count, the latest of each table, the error time travel to the removed version raised,
and then what Delta's own ``MetadataCleanup`` did on each table with its clock at ``now_ms``
(the tables' ``delta.logRetentionDuration`` is a day, the test's cleanup retention).

Run as ``python tests/log_cleanup_live_driver.py --endpoint URL --conditional s3a://...
--dynamodb s3://... --dynamodb-table NAME --control DIR --rows R --local-dir DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.multi_driver import RESULT_PREFIX
from deltaguard.localstack.spark_driver import build_test_session
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.session import DynamoDBCommitTableSpec

SCHEMA = "writer INT, batch INT, seq BIGINT"
CONDITIONAL_STORE = "io.deltaguard.logstore.S3ConditionalLogStore"


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)


def _counts(spark: Any, table: str, version: int | None) -> dict[str, int]:
    from pyspark.sql import functions as F

    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    row = (
        reader.load(table)
        .agg(F.count("*").alias("rows"), F.countDistinct("writer", "batch").alias("commits"))
        .collect()[0]
    )
    return {"rows": int(row["rows"]), "commits": int(row["commits"])}


def _latest(spark: Any, table: str) -> int:
    from delta.tables import DeltaTable

    return int(DeltaTable.forPath(spark, table).history(1).collect()[0]["version"])


def _log_listing(spark: Any, table: str) -> dict[str, int]:
    """Every file under the table's ``_delta_log`` (recursively) as the session's Hadoop
    file system lists it: its path under ``_delta_log`` and its modification time (ms)."""
    jvm = spark._jvm
    log = jvm.org.apache.hadoop.fs.Path(table.rstrip("/") + "/_delta_log")
    fs = log.getFileSystem(spark._jsc.hadoopConfiguration())
    prefix = fs.makeQualified(log).toString().rstrip("/") + "/"
    files = fs.listFiles(log, True)
    out: dict[str, int] = {}
    while files.hasNext():
        status = files.next()
        out[status.getPath().toString().removeprefix(prefix)] = int(status.getModificationTime())
    return out


def _metadata_cleanup(spark: Any, table: str, now_ms: int) -> dict[str, Any]:
    """Delta's own ``MetadataCleanup`` (``doLogCleanup``, what a Spark writer runs after a
    checkpoint) on ``table`` with its clock at ``now_ms`` (a ``ManualClock``: S3 sets the
    modification times, so the test moves the clock, as for deltaguard's run): the
    ``_delta_log`` listing before and after, and the cut-off Delta computed (now - the table's
    ``delta.logRetentionDuration``, truncated to the UTC day)."""
    jvm = spark._jvm
    delta_log_cls = jvm.org.apache.spark.sql.delta.DeltaLog
    delta_log_cls.clearCache()  # a cached DeltaLog keeps its own clock
    clock = jvm.org.apache.spark.util.ManualClock(now_ms)
    path = jvm.org.apache.hadoop.fs.Path(table)
    delta_log = delta_log_cls.forTable(spark._jsparkSession, path, clock)
    snapshot = delta_log.unsafeVolatileSnapshot()
    retention_ms = int(delta_log.deltaRetentionMillis(snapshot.metadata()))
    cutoff_ms = int(delta_log.truncateDay(now_ms - retention_ms).getTimeInMillis())
    before = _log_listing(spark, table)
    delta_log.doLogCleanup(snapshot, jvm.scala.Option.empty())
    after = _log_listing(spark, table)
    delta_log_cls.clearCache()
    return {
        "version": int(snapshot.version()),
        "retention_ms": retention_ms,
        "cutoff_ms": cutoff_ms,
        "before": before,
        "after": after,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("--endpoint", "--conditional", "--dynamodb", "--dynamodb-table"):
        parser.add_argument(name, required=True)
    parser.add_argument("--control", type=Path, required=True)
    parser.add_argument("--local-dir", type=Path, required=True)
    parser.add_argument("--rows", type=int, required=True)
    args = parser.parse_args()
    endpoint = Endpoint(url=args.endpoint)
    spark = build_test_session(
        endpoint.s3_storage(),
        PresetName.S3_DYNAMODB,
        app_name="deltaguard-log-cleanup-live",
        local_dir=args.local_dir,
        dynamodb=DynamoDBCommitTableSpec(
            table_name=args.dynamodb_table, region=endpoint.region, endpoint=args.endpoint
        ),
        extra_conf={
            # the s3-conditional preset's commit path for s3a://, beside the DynamoDB one
            "spark.delta.logStore.s3a.impl": CONDITIONAL_STORE,
            "spark.databricks.delta.allFilesInCrc.enabled": "false",
            "spark.databricks.delta.snapshotPartitions": "1",
        },
    )
    tables = {"conditional": args.conditional, "dynamodb": args.dynamodb}
    log = (args.control / "spark.jsonl").open("a")
    try:
        for table in tables.values():
            spark.sql(
                f"CREATE TABLE delta.`{table}` ({SCHEMA}) USING delta "
                "TBLPROPERTIES ('delta.checkpointInterval' = '1000', "
                "'delta.logRetentionDuration' = 'interval 1 days', "
                "'delta.deletedFileRetentionDuration' = 'interval 1 days')"  # Delta: log >= this
            )
        batch = 0
        while not (args.control / "stop").exists():
            floor_path = args.control / "floor.json"
            floor = json.loads(floor_path.read_text()) if floor_path.exists() else {"gen": 0}
            _write_json(args.control / "ack-spark", floor["gen"])
            for name, table in tables.items():
                tag = f"spark/{name}/{batch}"
                df = spark.range(args.rows).selectExpr(
                    "CAST(0 AS INT) AS writer", f"CAST({batch} AS INT) AS batch", "id AS seq"
                )
                df.write.format("delta").mode("append").option("userMetadata", tag).save(table)
                log.write(json.dumps({"op": "append", "table": name, "tag": tag}) + "\n")
                latest = _latest(spark, table)
                version = random.randint(floor.get(name, 0), latest)
                entry: dict[str, Any] = {"op": "read", "table": name, "version": version}
                try:
                    entry.update(_counts(spark, table, version))
                except Exception as exc:  # recorded: the test asserts there is none
                    entry["error"] = f"{type(exc).__name__}: {exc}"
                log.write(json.dumps(entry) + "\n")
                log.flush()
            batch += 1
        _write_json(args.control / "stopped", batch)
        final_path = args.control / "final.json"
        deadline = time.monotonic() + 300
        while not final_path.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        final = json.loads(final_path.read_text())
        result: dict[str, Any] = {}
        for name, table in tables.items():
            spec = final[name]
            out: dict[str, Any] = {
                "latest": _latest(spark, table),
                "latest_counts": _counts(spark, table, None),
                "versions": {str(v): _counts(spark, table, v) for v in spec["retained"]},
            }
            try:
                _counts(spark, table, spec["removed"])
                out["removed_error"] = None
            except Exception as exc:
                out["removed_error"] = f"{type(exc).__name__}: {exc}"
            result[name] = out
        for name, table in tables.items():
            result[name]["metadata_cleanup"] = _metadata_cleanup(
                spark, table, final[name]["now_ms"]
            )
        print(RESULT_PREFIX + json.dumps(result), flush=True)
    finally:
        log.close()
        spark.stop()


if __name__ == "__main__":
    main()
