"""The fan-out writer as a Structured Streaming ``foreachBatch`` function.

``query = df.writeStream.option("checkpointLocation", ckpt).foreachBatch(
fanout_batches(ckpt, tables)).start()`` appends every micro-batch to each table through
:func:`~deltaguard.tools.fanout.writer.write_fanout`, with ``job_id`` = the query id and
``run_version`` = the batch id. So every write carries ``txnAppId = "<query id>/<table>"`` and
``txnVersion = <batch id>``, and the idempotency contract of ``write_fanout`` becomes Delta's
streaming exactly-once for many tables:

- Spark re-runs a micro-batch after a crash (its offsets are in the checkpoint, its commit is
  not) with the same batch id and the same input. Every table that already committed that
  batch records ``txnVersion >= batch id`` for its app id, so Delta skips the write there
  (status ``skipped``); the tables it had not reached get it now. Nothing is written twice.
- The query id lives in the checkpoint's ``metadata`` file, written when the query first
  starts and kept across restarts; it is read from there (:func:`checkpoint_query_id`), so it
  is the same id Delta's own streaming sink uses as its ``txn`` app id.
- A write that fails raises :class:`~deltaguard.tools.fanout.writer.FanoutError` from the
  batch function: the query stops with it, its commit is not written, and the restart re-runs
  the batch (skipping what landed).

Each table must be fed by one query only per checkpoint: a new checkpoint is a new query id,
and its batch ids start again at 0.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from deltaguard.tools.fanout.writer import FanoutResult, WriteRequest, write_fanout

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def checkpoint_query_id(spark: SparkSession, checkpoint: str) -> str:
    """The query id in ``<checkpoint>/metadata`` (Spark's ``StreamMetadata``: one JSON line
    with ``id``). Raises ValueError naming the file if it has no id."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "a classic (py4j) Spark session has a JVM gateway"
    path = jvm.org.apache.hadoop.fs.Path(f"{checkpoint.rstrip('/')}/metadata")
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    stream = fs.open(path)
    try:
        text = str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()
    first = text.strip().splitlines()[0] if text.strip() else ""
    try:
        query_id = json.loads(first)["id"]
    except (ValueError, KeyError, TypeError):
        raise ValueError(
            f"{path}: not a streaming query's metadata (no 'id'): {first[:200]!r}"
        ) from None
    return str(query_id)


def fanout_batches(
    checkpoint: str,
    tables: Sequence[str],
    *,
    split: Callable[[DataFrame, str], DataFrame] | None = None,
    max_workers: int = 4,
    on_result: Callable[[int, FanoutResult], None] | None = None,
) -> Callable[[DataFrame, int], None]:
    """A ``foreachBatch`` function for a query whose checkpoint is ``checkpoint``: each
    micro-batch, ``split(batch_df, table)`` (default: the whole batch) is appended to every
    table of ``tables`` through ``write_fanout`` (``job_id`` = the query id, ``run_version``
    = the batch id, key = the table), at most ``max_workers`` at once. The batch DataFrame is
    persisted while the tables are written. ``on_result(batch_id, result)`` sees every
    outcome; a failed write raises FanoutError (the query stops; a restart re-runs the batch)."""
    state: dict[str, str] = {}
    lock = threading.Lock()

    def write_batch(batch_df: DataFrame, batch_id: int) -> None:
        spark = batch_df.sparkSession
        with lock:
            if "query_id" not in state:
                state["query_id"] = checkpoint_query_id(spark, checkpoint)
        batch_df.persist()
        try:
            result = write_fanout(
                spark,
                [WriteRequest(t, split(batch_df, t) if split else batch_df, key=t) for t in tables],
                job_id=state["query_id"],
                run_version=batch_id,
                max_workers=max_workers,
            )
        finally:
            batch_df.unpersist()
        if on_result is not None:
            on_result(batch_id, result)

    return write_batch
