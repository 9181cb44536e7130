"""The fan-out trap, staged in one Spark driver, next to the fix.

``naive``: ``--threads`` threads of a plain ThreadPoolExecutor append one batch each to the same
table at once (released together by a barrier), the way pipelines fan out, and never read their
futures: the job "succeeds". Done twice: on a table that does not exist yet (the first commits
collide on creation: ProtocolChangedException), and on an existing table with a new column
(``mergeSchema``: MetadataChangedException). The driver then counts the rows that landed, and
reads the futures the naive code ignored, to show what it hid.

``fanout``: the same batches through :func:`deltaguard.spark_conf.fanout.write_fanout`.

Prints one JSON object (``DELTAGUARD-RESULT {...}``). Run as
``python -m deltaguard.testbed.fanout_trap --endpoint URL --table-root s3a://bucket/prefix``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from deltaguard.spark_conf.fanout import write_fanout
from deltaguard.spark_conf.session import LogStoreChoice, build_spark_session
from deltaguard.testbed.endpoints import Endpoint
from deltaguard.testbed.multi_driver import RESULT_PREFIX


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaguard.testbed.fanout_trap")
    parser.add_argument("--endpoint", required=True, help="S3 endpoint URL")
    parser.add_argument("--table-root", required=True, help="s3a://bucket/prefix for the tables")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--local-dir", help="Spark scratch directory")
    args = parser.parse_args(argv)
    spark = build_spark_session(
        Endpoint(url=args.endpoint).s3_storage(),
        LogStoreChoice.S3_CONDITIONAL,
        app_name="deltaguard-fanout-trap",
        master="local[2]",
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
    finally:
        spark.stop()
    sys.stdout.write(RESULT_PREFIX + json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
