"""The fan-out trap, staged in one Spark driver, next to the fix.

``naive``: ``--threads`` threads of a plain ThreadPoolExecutor append one batch each to the same
table at once (released together by a barrier), the way pipelines fan out, and never read their
futures: the job "succeeds". Done twice: on a table that does not exist yet (the first commits
collide on creation: ProtocolChangedException), and on an existing table with a new column
(``mergeSchema``: MetadataChangedException). The driver then counts the rows that landed, and
reads the futures the naive code ignored, to show what it hid.

``fanout``: the same batches through :func:`deltaguard.tools.fanout.writer.write_fanout`.
``two_jobs``: two write_fanout calls creating one table at once (Delta's conflict, retried).
``failure``: a write that cannot succeed, next to one that can (fails at once, is raised).

Prints one JSON object (``DELTAGUARD-RESULT {...}``). Run as
``python -m deltaguard.localstack.fanout_trap --endpoint URL --table-root s3a://bucket/prefix``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.multi_driver import RESULT_PREFIX
from deltaguard.localstack.spark_driver import build_test_session, small_tables_conf
from deltaguard.logstore.preset_name import PresetName
from deltaguard.tools.fanout.writer import write_fanout


def _batch(spark: Any, batch: int, rows: int, with_note: bool) -> Any:
    columns = [f"CAST({batch} AS INT) AS batch", "id AS seq"]
    if with_note:
        columns.append(f"'b{batch}' AS note")
    return spark.range(rows).selectExpr(*columns)


def _naive(spark: Any, table: str, threads: int, rows: int, with_note: bool) -> dict[str, Any]:
    barrier = threading.Barrier(threads)

    def write(batch: int) -> None:
        df = _batch(spark, batch, rows, with_note)
        option = {"mergeSchema": "true"} if with_note else {}
        barrier.wait()
        df.write.format("delta").mode("append").options(**option).save(table)

    pool = ThreadPoolExecutor(max_workers=threads)
    futures: list[Future[None]] = [pool.submit(write, b) for b in range(threads)]
    pool.shutdown(wait=True)  # the naive job ends here, "successfully": no future was read
    return {
        "table": table,
        "rows_written": threads * rows,
        "rows_found": spark.read.format("delta").load(table).count(),
        # What the naive job never looked at:
        "hidden_errors": [type(f.exception()).__name__ for f in futures if f.exception()],
    }


def _fanout(spark: Any, table: str, threads: int, rows: int, with_note: bool) -> dict[str, Any]:
    writes = [(table, _batch(spark, b, rows, with_note)) for b in range(threads)]
    result = write_fanout(spark, writes, job_id="trap", run_version=1, max_workers=threads)
    outcome = result.tables[table]
    return {
        "table": table,
        "rows_written": threads * rows,
        "rows_found": spark.read.format("delta").load(table).count(),
        "rows_reported": outcome.rows,
        "modes": [b.mode.value if b.mode else None for b in outcome.batches],
        "statuses": [b.status.value for b in outcome.batches],
        "attempts": [b.attempts for b in outcome.batches],
    }


def _two_jobs_create_one_table(spark: Any, table: str, rows: int) -> dict[str, Any]:
    """Two independent write_fanout calls (as two jobs would) create the same table at once:
    one loses Delta's conflict (ProtocolChangedException), retries, and appends."""
    barrier = threading.Barrier(2)

    def job(n: int) -> Any:
        df = _batch(spark, n, rows, False)
        barrier.wait()
        return write_fanout(spark, {table: df}, job_id=f"job{n}", run_version=1).tables[table]

    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = [f.result() for f in [pool.submit(job, n) for n in range(2)]]
    return {
        "rows_written": 2 * rows,
        "rows_found": spark.read.format("delta").load(table).count(),
        "attempts": sorted(o.attempts for o in outcomes),
        "statuses": [b.status.value for o in outcomes for b in o.batches],
    }


def _failure_surfaces(spark: Any, root: str, rows: int) -> dict[str, Any]:
    """A write that cannot succeed (a column whose type clashes with the table's) fails at once,
    next to a good write, and is raised in a FanoutError carrying every outcome."""
    from deltaguard.tools.fanout.writer import FanoutError

    bad_table = f"{root}/clash"
    _batch(spark, 0, rows, False).write.format("delta").save(bad_table)
    bad = spark.range(rows).selectExpr("'not a number' AS batch", "id AS seq")
    writes = [(f"{root}/good", _batch(spark, 1, rows, False)), (bad_table, bad)]
    try:
        write_fanout(spark, writes, job_id="failing", run_version=1)
    except FanoutError as exc:
        return {
            "raised": type(exc).__name__,
            "exceptions": [type(e).__name__ for e in exc.exceptions],
            "tables": {
                t: {"status": o.batches[0].status.value, "attempts": o.attempts, "rows": o.rows}
                for t, o in exc.result.tables.items()
            },
        }
    return {"raised": None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaguard.localstack.fanout_trap")
    parser.add_argument("--endpoint", required=True, help="S3 endpoint URL")
    parser.add_argument("--table-root", required=True, help="s3a://bucket/prefix for the tables")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--local-dir", help="Spark scratch directory")
    args = parser.parse_args(argv)
    spark = build_test_session(
        Endpoint(url=args.endpoint).s3_storage(),
        PresetName.S3_CONDITIONAL,
        app_name="deltaguard-fanout-trap",
        master="local[2]",
        extra_conf=small_tables_conf(),
        local_dir=Path(args.local_dir) if args.local_dir else None,
    )
    root = args.table_root.rstrip("/")
    report: dict[str, Any] = {}
    try:
        for name, approach in (("naive", _naive), ("fanout", _fanout)):
            create = approach(spark, f"{root}/{name}_create", args.threads, args.rows, False)
            evolve_table = f"{root}/{name}_evolve"
            _batch(spark, 99, args.rows, False).write.format("delta").save(evolve_table)
            evolve = approach(spark, evolve_table, args.threads, args.rows, True)
            evolve["rows_found"] -= args.rows  # the pre-existing batch
            report[name] = {"create": create, "evolve": evolve}
        report["two_jobs"] = _two_jobs_create_one_table(spark, f"{root}/two_jobs", args.rows)
        report["failure"] = _failure_surfaces(spark, root, args.rows)
    finally:
        spark.stop()
    sys.stdout.write(RESULT_PREFIX + json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
