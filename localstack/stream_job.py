"""A Structured Streaming driver process: a file source into a Delta table on S3, or into many
tables through the fan-out writer (``foreachBatch``), until the source is drained.

``python -m deltaguard.localstack.stream_job --table T --checkpoint C --source DIR --query-name Q``

- **Source**: the JSON-lines files in ``--source`` (``{"value": n}`` per line, see
  :func:`write_source`), ``--files-per-batch`` files per micro-batch, read with
  ``trigger(availableNow=True)``: the query runs every micro-batch the source holds at its
  start, then ends. On restart from the same checkpoint it resumes where the checkpoint says.
- **Rows**: the append workload's schema (``append_job.SCHEMA_DDL``): ``writer`` =
  ``--writer``, ``batch`` = -1 (a streaming sink's rows carry no batch id), ``seq`` = the
  source value, ``payload`` = the query name. Count rows by (payload, seq) to check exactly
  once.
- **Sink**: ``writeStream.format("delta")`` to ``--table`` (Delta's sink: each micro-batch
  is one commit with a ``txn`` action, app id = the query id, version = the batch id); or,
  with ``--fanout-table`` (repeatable), :func:`deltaguard.tools.fanout.streaming.fanout_batches`.
- **Commit path**: the ``--logstore`` preset (default ``s3-conditional``), plus the settings of
  ``--conf-json`` (e.g. a checkpoint file manager) on top.

It prints ``DELTAGUARD-RESULT {json}``: per micro-batch its id, input rows and Spark's
``durationMs`` (``triggerExecution``: the whole micro-batch; ``addBatch``: the sink's write and
commit; ``walCommit`` / ``commitOffsets``: the checkpoint's offsets and commits files), the
Spark jobs the query ran (and how many of each description,
:func:`~deltaguard.localstack.spark_driver.job_descriptions`), and the versions of Spark and
Hadoop it ran on.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.multi_driver import RESULT_PREFIX
from deltaguard.localstack.spark_driver import (
    build_test_session,
    job_descriptions,
    small_tables_conf,
)
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.storage import LocalStorage, S3Storage

SOURCE_SCHEMA = "value BIGINT"


def write_source(source_dir: Path, files: int, rows_per_file: int, first: int = 0) -> list[int]:
    """Writes ``files`` JSON-lines files (``part-00000.json``, ...) of ``rows_per_file``
    consecutive values from ``first``; returns every value written."""
    source_dir.mkdir(parents=True, exist_ok=True)
    values: list[int] = []
    for f in range(files):
        start = first + f * rows_per_file
        chunk = list(range(start, start + rows_per_file))
        lines = "".join(json.dumps({"value": v}) + "\n" for v in chunk)
        (source_dir / f"part-{f:05d}.json").write_text(lines)
        values += chunk
    return values


def _progress(p: dict[str, Any]) -> dict[str, Any]:
    return {
        "batch_id": int(p["batchId"]),
        "rows": int(p.get("numInputRows", 0)),
        "duration_ms": {k: int(v) for k, v in (p.get("durationMs") or {}).items()},
    }


def _without_query(description: str, query_name: str) -> str:
    """A micro-batch job's description without what Spark adds to each of the query's jobs
    (its id, run id and batch id; its name as ``<query>``): what started the job."""
    text = re.sub(r"\n(id|runId) = [^\n]*", "", description)
    text = re.sub(r"\nbatch = N", "", text)
    return text.replace(re.sub(r"\d+", "N", query_name), "<query>")


def run(args: argparse.Namespace) -> dict[str, Any]:
    storage: LocalStorage | S3Storage = (
        Endpoint(url=args.endpoint).s3_storage() if args.endpoint else LocalStorage()
    )
    conf = {
        **small_tables_conf(),
        # Keep every micro-batch's progress (the default keeps the last 100).
        "spark.sql.streaming.numRecentProgressUpdates": "10000",
    }
    if args.conf_json:
        extra = json.loads(Path(args.conf_json).read_text())
        if not isinstance(extra, dict):
            raise ValueError(f"{args.conf_json}: expected a JSON object of Spark settings")
        conf.update({str(k): str(v) for k, v in extra.items()})
    started = time.monotonic()
    spark = build_test_session(
        storage,
        PresetName(args.logstore),
        app_name=f"deltaguard-stream-{args.query_name}",
        local_dir=Path(args.local_dir) if args.local_dir else None,
        extra_conf=conf,
    )
    try:
        rows = (
            spark.readStream.schema(SOURCE_SCHEMA)
            .option("maxFilesPerTrigger", str(args.files_per_batch))
            .json(str(Path(args.source).resolve()))
            .selectExpr(
                f"CAST({args.writer} AS INT) AS writer",
                "CAST(-1 AS INT) AS batch",
                "value AS seq",
                f"'{args.query_name}' AS payload",
            )
        )
        writer = (
            rows.writeStream.queryName(args.query_name)
            .option("checkpointLocation", args.checkpoint)
            .trigger(availableNow=True)
        )
        fanout: list[dict[str, Any]] = []
        if args.fanout_table:
            from deltaguard.tools.fanout.streaming import fanout_batches
            from deltaguard.tools.fanout.writer import FanoutResult

            def record(batch_id: int, result: FanoutResult) -> None:
                statuses = {b.table: b.status.value for b in result.batches}
                fanout.append({"batch_id": batch_id, "statuses": statuses})

            write = fanout_batches(
                args.checkpoint,
                args.fanout_table,
                max_workers=args.fanout_workers,
                on_result=record,
            )
            query = writer.foreachBatch(write).start()
        else:
            query = writer.format("delta").outputMode("append").start(args.table)
        ready_s = time.monotonic() - started
        query.awaitTermination()
        exception = query.exception()
        if exception is not None:
            raise RuntimeError(f"query {args.query_name} failed: {exception}")
        progress = [_progress(p) for p in query.recentProgress if p.get("batchId") is not None]
        batches = [p for p in progress if p["rows"] > 0]
        jvm = spark.sparkContext._jvm
        assert jvm is not None, "a classic (py4j) Spark session has a JVM gateway"
        jobs = spark.sparkContext.statusTracker().getJobIdsForGroup(str(query.runId))
        described = job_descriptions(spark)()
        return {
            "query": args.query_name,
            "query_id": str(query.id),
            "startup_s": round(ready_s, 2),
            "batches": batches,
            "spark_jobs": len(jobs),
            "spark_jobs_by_description": dict(
                Counter(_without_query(described.get(j, "?"), args.query_name) for j in jobs)
            ),
            "fanout": fanout,
            "spark_version": spark.version,
            "hadoop_version": jvm.org.apache.hadoop.util.VersionInfo.getVersion(),
        }
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaguard.localstack.stream_job")
    parser.add_argument("--table", help="the Delta sink's table (without --fanout-table)")
    parser.add_argument(
        "--fanout-table",
        action="append",
        default=[],
        help="foreachBatch: every micro-batch to each of these tables through write_fanout",
    )
    parser.add_argument("--fanout-workers", type=int, default=4, help="write_fanout's max_workers")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint location")
    parser.add_argument("--source", required=True, help="a local directory of JSON-lines files")
    parser.add_argument("--query-name", required=True)
    parser.add_argument("--writer", type=int, default=100, help="the rows' writer column")
    parser.add_argument("--files-per-batch", type=int, default=1)
    parser.add_argument("--endpoint", help="S3 endpoint URL (omit for local paths)")
    parser.add_argument(
        "--logstore",
        default=PresetName.S3_CONDITIONAL.value,
        choices=[c.value for c in PresetName],
    )
    parser.add_argument("--conf-json", help="a JSON object of Spark settings on top of the preset")
    parser.add_argument("--local-dir", help="Spark scratch directory")
    args = parser.parse_args(argv)
    if not args.table and not args.fanout_table:
        parser.error("give --table (Delta sink) or --fanout-table (foreachBatch fan-out)")
    result = run(args)
    sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
