"""The Spark driver of tests/test_log_cleanup_live.py: one session carrying both of deltaguard's
S3 commit paths, chosen by scheme as Delta chooses a LogStore (``s3a://``: the
``s3-conditional`` preset's ``S3ConditionalLogStore``; ``s3://``: the ``s3-dynamodb`` preset's
``S3DynamoDBLogStore`` on ``--dynamodb-table``), so one JVM writes both tables of the test.

It creates both tables (``delta.checkpointInterval`` 1000: the test decides where checkpoints
are), then until ``CONTROL/stop`` exists, per round: reads ``CONTROL/floor.json`` (``gen`` and
per table the oldest version every cleanup keeps), writes ``CONTROL/ack-spark`` = ``gen`` (no
operation begun under an older floor is still running), appends ``--rows`` rows to each table
(tag ``spark/<table>/<batch>`` as ``userMetadata``), then reads one retained version of each
by time travel (between the floor and the table's latest) and logs every append and read to
``CONTROL/spark.jsonl``. After ``stop`` it writes ``CONTROL/stopped`` and waits for ``CONTROL/final.json`` (per table the
versions to read and one removed version) and prints ``DELTAGUARD-RESULT {json}``: each
retained version's row count and distinct (writer, batch) count, the latest of each table, and
the error time travel to the removed version raised.

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
                "TBLPROPERTIES ('delta.checkpointInterval' = '1000')"
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
        print(RESULT_PREFIX + json.dumps(result), flush=True)
    finally:
        log.close()
        spark.stop()


if __name__ == "__main__":
    main()
