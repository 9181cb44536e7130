"""The multi-driver append workload: one Spark driver process per writer.

``append``: writer 0 creates the table if needed; the others wait for version 0. Each writer
then appends ``--appends`` batches of ``--rows`` rows, one Delta commit each, tagging every
commit with ``userMetadata = <run id>/w<writer>/b<batch>`` so a verifier can tell which
commits survived. Prints one JSON object: the writer's own account of what it committed.

``verify``: reads the table back with Spark Delta (the reader's truth) and prints one JSON
object: versions present, data commits per tag, rows, rows per (writer, batch).

Run as ``python -m deltaguard.localstack.append_job append|verify ...``; orchestrated by
:mod:`deltaguard.localstack.multi_driver`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.spark_driver import build_test_session
from deltaguard.logstore.commit_names import commit_file_name
from deltaguard.spark_conf.preset_name import PresetName
from deltaguard.spark_conf.session import DynamoDBCommitTableSpec
from deltaguard.spark_conf.storage import LocalStorage, S3Storage

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from deltaguard.localstack.delta_append import LogStore

SCHEMA_DDL = "writer INT, batch INT, seq BIGINT, payload STRING"


def arrow_schema() -> pa.Schema:
    """The workload's schema for deltaguard's Python writer (same columns as SCHEMA_DDL)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("writer", pa.int32()),
            ("batch", pa.int32()),
            ("seq", pa.int64()),
            ("payload", pa.string()),
        ]
    )


def _schema(spark: SparkSession) -> StructType:
    """SCHEMA_DDL as a StructType (through a DataFrame: ``StructType.fromDDL`` is Spark 4+)."""
    schema: StructType = spark.createDataFrame([], SCHEMA_DDL).schema
    return schema


def _storage(args: argparse.Namespace) -> LocalStorage | S3Storage:
    if args.endpoint:
        return Endpoint(url=args.endpoint).s3_storage()
    return LocalStorage()


def _dynamodb(args: argparse.Namespace) -> DynamoDBCommitTableSpec | None:
    if PresetName(args.logstore) is not PresetName.S3_DYNAMODB:
        return None
    endpoint = Endpoint(url=args.endpoint) if args.endpoint else None
    return DynamoDBCommitTableSpec(
        table_name=args.dynamodb_table,
        region=endpoint.region if endpoint else "us-east-1",
        endpoint=args.endpoint,
    )


def python_log_store(endpoint_url: str, logstore: PresetName, dynamodb_table: str) -> LogStore:
    """deltaguard's Python LogStore for the chosen commit path (S3 only)."""
    from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
    from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore

    endpoint = Endpoint(url=endpoint_url)
    if logstore is PresetName.S3_DYNAMODB:
        return S3DynamoDBLogStore(endpoint.s3_client(), endpoint.dynamodb_client(), dynamodb_table)
    return S3ConditionalLogStore(endpoint.s3_client())


def _log_exists(spark: object, table: str, version: int) -> bool:
    jvm = spark._jvm  # type: ignore[attr-defined]
    path = jvm.org.apache.hadoop.fs.Path(f"{table}/_delta_log/{commit_file_name(version)}")
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
    return bool(fs.exists(path))


def _append_python(args: argparse.Namespace) -> dict[str, object]:
    """The same workload committed by deltaguard's Python writer (no Spark, no JVM)."""
    import pyarrow as pa

    from deltaguard.localstack.delta_append import BlindAppender
    from deltaguard.logstore.s3_location import S3Location

    started = time.monotonic()
    s3 = Endpoint(url=args.endpoint).s3_client()
    store = python_log_store(args.endpoint, PresetName(args.logstore), args.dynamodb_table)

    def put(uri: str, data: bytes) -> None:
        loc = S3Location.parse(uri)
        s3.put_object(Bucket=loc.bucket, Key=loc.key, Body=data)

    log0 = S3Location.parse(f"{args.table}/_delta_log/{commit_file_name(0)}")
    appender = BlindAppender(store, put, args.table)

    def commit(batch: int, tag: str) -> None:
        rows = pa.table(
            {
                "writer": [args.writer] * args.rows,
                "batch": [batch] * args.rows,
                "seq": list(range(args.rows)),
                "payload": [tag] * args.rows,
            }
        ).cast(arrow_schema())
        appender.append(rows, user_metadata=tag)

    return _wait_and_append(
        args,
        "python",
        started,
        lambda: bool(s3.list_objects_v2(Bucket=log0.bucket, Prefix=log0.key).get("KeyCount")),
        commit,
    )


def _wait_and_append(
    args: argparse.Namespace,
    engine: str,
    started: float,
    table_exists: Callable[[], bool],
    commit: Callable[[int, str], None],
) -> dict[str, object]:
    """Waits for version 0, then runs ``commit(batch, tag)`` once per append, recording every
    success and every exception (none is hidden), with the timings the benchmarks use."""
    deadline = time.monotonic() + 300
    while not table_exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"table {args.table} was not created within 300 s")
        time.sleep(0.2)
    ready = time.monotonic()
    first_append_at = time.time()
    committed, errors = [], []
    for batch in range(args.appends):
        tag = f"{args.run_id}/w{args.writer}/b{batch}"
        try:
            commit(batch, tag)
            committed.append(tag)
        except Exception as exc:
            errors.append({"tag": tag, "error": f"{type(exc).__name__}: {str(exc)[:500]}"})
    return {
        "writer": args.writer,
        "engine": engine,
        "committed": committed,
        "errors": errors,
        "startup_s": round(ready - started, 2),
        "append_s": round(time.monotonic() - ready, 2),
        "first_append_at": first_append_at,
        "last_append_at": time.time(),
    }


def append(args: argparse.Namespace) -> dict[str, object]:
    from delta.tables import DeltaTable

    if args.engine == "python":
        return _append_python(args)

    started = time.monotonic()
    spark = build_test_session(
        _storage(args),
        PresetName(args.logstore),
        app_name=f"deltaguard-append-w{args.writer}",
        dynamodb=_dynamodb(args),
        local_dir=Path(args.local_dir) if args.local_dir else None,
    )
    try:
        if args.writer == 0:
            DeltaTable.createIfNotExists(spark).location(args.table).addColumns(
                _schema(spark)
            ).execute()

        def commit(batch: int, tag: str) -> None:
            df = spark.range(args.rows).selectExpr(
                f"CAST({args.writer} AS INT) AS writer",
                f"CAST({batch} AS INT) AS batch",
                "id AS seq",
                f"'{tag}' AS payload",
            )
            df.write.format("delta").mode("append").option("userMetadata", tag).save(args.table)

        report = _wait_and_append(
            args, "spark", started, lambda: _log_exists(spark, args.table, 0), commit
        )
        # What this driver really ran: its Spark and the Hadoop (S3A) on its classpath.
        jvm = spark.sparkContext._jvm
        assert jvm is not None, "a classic (py4j) Spark session has a JVM gateway"
        report["spark_version"] = spark.version
        report["hadoop_version"] = jvm.org.apache.hadoop.util.VersionInfo.getVersion()
        return report
    finally:
        spark.stop()


def verify(args: argparse.Namespace) -> dict[str, object]:
    spark = build_test_session(
        _storage(args),
        PresetName(args.logstore),
        app_name="deltaguard-verify",
        dynamodb=_dynamodb(args),
        local_dir=Path(args.local_dir) if args.local_dir else None,
    )
    try:
        from delta.tables import DeltaTable

        history = (
            DeltaTable.forPath(spark, args.table)
            .history()
            .select("version", "operation", "userMetadata")
            .collect()
        )
        table = spark.read.format("delta").load(args.table)
        per_batch = table.groupBy("writer", "batch").count().collect()
        return {
            "versions": sorted(int(r["version"]) for r in history),
            "commits": [
                {
                    "version": int(r["version"]),
                    "operation": r["operation"],
                    "tag": r["userMetadata"],
                }
                for r in history
            ],
            "rows": table.count(),
            "rows_per_batch": {f"w{r['writer']}/b{r['batch']}": int(r["count"]) for r in per_batch},
        }
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaguard.localstack.append_job")
    parser.add_argument("command", choices=["append", "verify"])
    parser.add_argument("--table", required=True)
    parser.add_argument("--endpoint", help="S3 endpoint URL (omit for local paths)")
    parser.add_argument(
        "--logstore",
        default=PresetName.S3_CONDITIONAL.value,
        choices=[c.value for c in PresetName],
    )
    parser.add_argument(
        "--engine",
        choices=["spark", "python"],
        default="spark",
        help="python: deltaguard's Python conditional-write committer (S3 only)",
    )
    parser.add_argument(
        "--dynamodb-table",
        default="delta_log",
        help="the DynamoDB LogStore's table (with --logstore s3-dynamodb)",
    )
    parser.add_argument("--writer", type=int, default=0)
    parser.add_argument("--appends", type=int, default=25)
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--run-id", default="run")
    parser.add_argument("--local-dir", help="Spark scratch directory")
    args = parser.parse_args(argv)
    result = append(args) if args.command == "append" else verify(args)
    sys.stdout.write("DELTAGUARD-RESULT " + json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
