"""One soak writer process: commits to the soak's tables until its stop file appears.

Engines:

- ``spark``: a Spark driver through deltaguard's conditional-write LogStore (the
  ``s3-conditional`` preset). Mostly appends; now and then a MERGE (rewrites the rows of one
  of its earlier appends), an append followed by a DELETE of exactly those rows, or an
  OPTIMIZE. Delta writes a checkpoint every 10 commits by itself.
- ``python``: deltaguard's Python blind-append committer
  (:class:`~deltaguard.localstack.delta_append.BlindAppender` on the Python conditional store).
  One operation in :data:`ABANDON_SHARE` writes its data file and never commits it
  (``abandoned``), as a job that dies between writing and committing does: these files are
  what the soak's cleanup passes must find and delete while the writers run.
- ``deltars``: delta-rs (``deltalake.write_deltalake``, append). delta-rs >= 1.6.1 commits with
  a conditional PUT (If-None-Match) on S3 by default; it is given endpoint and credentials only,
  never a locking provider or an unsafe-rename option (either would take away the conditional
  PUT that keeps it safe next to the other writers).

Every operation goes into the writer's ledger (:mod:`deltaguard.localstack.soak_ledger`) before
it starts and after it ends; each append's rows carry the operation id in ``append_id``, which
is how the final readers match rows to what writers were told.

Run by :mod:`deltaguard.localstack.soak`: ``python -m deltaguard.localstack.soak_worker
--engine E --writer NAME --tables URI,URI --endpoint URL --ledger FILE --stop-file FILE``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.multi_driver import RESULT_PREFIX
from deltaguard.localstack.soak_ledger import ROWS_PER_APPEND, Ledger, Outcome
from deltaguard.logstore.preset_name import PresetName

if TYPE_CHECKING:
    import pyarrow as pa

#: The share of the Python writers' operations that write a data file and never commit it.
ABANDON_SHARE = 0.25

#: The soak tables' columns (Spark SQL DDL; :func:`arrow_schema` is the same for Arrow).
SCHEMA_DDL = "append_id STRING, writer STRING, seq BIGINT, touched INT"


def arrow_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("append_id", pa.string()),
            ("writer", pa.string()),
            ("seq", pa.int64()),
            ("touched", pa.int32()),
        ]
    )


def arrow_rows(op_id: str, writer: str) -> pa.Table:
    """The rows of one append: ROWS_PER_APPEND rows tagged with the operation id."""
    import pyarrow as pa

    n = ROWS_PER_APPEND
    return pa.table(
        {
            "append_id": [op_id] * n,
            "writer": [writer] * n,
            "seq": list(range(n)),
            "touched": [0] * n,
        }
    ).cast(arrow_schema())


def classify_error(exc: BaseException) -> Outcome:
    """``unknown`` when the store said the commit's fate is open, else ``failed``."""
    return "unknown" if "CommitOutcomeUnknown" in f"{type(exc).__name__}: {exc}" else "failed"


class Writer:
    """The loop shared by every engine: pick a table and an operation, record, run, record."""

    def __init__(self, args: argparse.Namespace, ledger: Ledger) -> None:
        self.args = args
        self.ledger = ledger
        self.tables: list[str] = args.tables.split(",")
        self.rng = random.Random(f"{args.seed}:{args.writer}:{time.time_ns()}")
        self.nonce = uuid.uuid4().hex[:6]
        self.count = 0
        self.appended: dict[str, list[str]] = {t: [] for t in self.tables}

    def new_id(self) -> str:
        self.count += 1
        return f"{self.args.writer}-{self.nonce}-{self.count}"

    def stopped(self) -> bool:
        return Path(self.args.stop_file).exists()


def _record(
    writer: Writer,
    table: str,
    kind: str,
    action: Callable[[str], object],
    target: str | None = None,
) -> tuple[str, bool]:
    """Records an intent, runs ``action(op_id)``, records its outcome; returns (op id, ok)."""
    op_id = writer.new_id()
    if kind not in ("append", "ephemeral"):
        op_id += f"-{kind}"
    writer.ledger.intent(op_id, table, kind, target)
    try:
        action(op_id)
    except Exception as exc:
        writer.ledger.outcome(op_id, classify_error(exc), f"{type(exc).__name__}: {exc}"[:400])
        return op_id, False
    writer.ledger.outcome(op_id, "ok")
    return op_id, True


def _appends_until_stopped(
    writer: Writer,
    append: Callable[[str, str], None],
    abandon: Callable[[str, str], None] | None = None,
) -> None:
    """Appends until the stop file appears; with ``abandon``, one operation in
    :data:`ABANDON_SHARE` is an ``abandoned`` one instead (told failed: never committed)."""

    def one_append(table: str) -> None:
        if abandon is not None and writer.rng.random() < ABANDON_SHARE:
            op_id = f"{writer.new_id()}-abandoned"
            writer.ledger.intent(op_id, table, "abandoned")
            note = "abandoned: data file written, never committed"
            try:
                abandon(table, op_id)
            except Exception as exc:
                note = f"abandoned: writing the data file failed: {type(exc).__name__}: {exc}"
            writer.ledger.outcome(op_id, "failed", note[:400])
            return
        _record(writer, table, "append", lambda op_id: append(table, op_id))

    while not writer.stopped():
        one_append(writer.rng.choice(writer.tables))
        time.sleep(writer.rng.uniform(0.0, writer.args.pause))


def run_python(writer: Writer, endpoint: Endpoint) -> None:
    from deltaguard.localstack.append_job import python_log_store
    from deltaguard.localstack.delta_append import BlindAppender, data_file_name, parquet_bytes
    from deltaguard.logstore.s3_location import S3Location

    s3 = endpoint.s3_client()
    store = python_log_store(endpoint.url, PresetName.S3_CONDITIONAL, "unused")

    def put(uri: str, data: bytes) -> None:
        loc = S3Location.parse(uri)
        s3.put_object(Bucket=loc.bucket, Key=loc.key, Body=data)

    appenders = {t: BlindAppender(store, put, t) for t in writer.tables}

    def append(table: str, op_id: str) -> None:
        appenders[table].append(arrow_rows(op_id, writer.args.writer), user_metadata=op_id)

    def abandon(table: str, op_id: str) -> None:
        put(f"{table}/{data_file_name()}", parquet_bytes(arrow_rows(op_id, writer.args.writer)))

    _appends_until_stopped(writer, append, abandon)


def run_deltars(writer: Writer, endpoint: Endpoint) -> None:
    from deltalake import write_deltalake

    # Endpoint and credentials only: no locking provider, no AWS_S3_ALLOW_UNSAFE_RENAME.
    options = endpoint.delta_rs_options()

    def append(table: str, op_id: str) -> None:
        write_deltalake(
            table,
            arrow_rows(op_id, writer.args.writer),
            mode="append",
            storage_options=options,
            commit_properties=_deltars_commit_properties(op_id),
        )

    _appends_until_stopped(writer, append)


def _deltars_commit_properties(op_id: str) -> Any:
    from deltalake import CommitProperties

    return CommitProperties(custom_metadata={"userMetadata": op_id})


def run_spark(writer: Writer, endpoint: Endpoint) -> None:
    from deltaguard.localstack.spark_driver import build_test_session

    spark = build_test_session(
        endpoint.s3_storage(),
        PresetName.S3_CONDITIONAL,
        app_name=f"deltaguard-soak-{writer.args.writer}",
        local_dir=Path(writer.args.local_dir) if writer.args.local_dir else None,
    )
    name = writer.args.writer

    def append(table: str, op_id: str) -> None:
        df = spark.range(ROWS_PER_APPEND).selectExpr(
            f"'{op_id}' AS append_id",
            f"'{name}' AS writer",
            "id AS seq",
            "CAST(0 AS INT) AS touched",
        )
        df.write.format("delta").mode("append").option("userMetadata", op_id).save(table)

    def merge(table: str, target: str) -> None:
        spark.sql(
            f"MERGE INTO delta.`{table}` t USING (SELECT '{target}' AS append_id) s "
            "ON t.append_id = s.append_id WHEN MATCHED THEN UPDATE SET touched = t.touched + 1"
        )

    def one_operation(table: str) -> None:
        mine = writer.appended[table]
        roll = writer.rng.random()
        if roll < 0.12 and mine:
            target = writer.rng.choice(mine)
            _record(writer, table, "merge", lambda _: merge(table, target), target)
        elif roll < 0.22:
            eid, ok = _record(writer, table, "ephemeral", lambda op_id: append(table, op_id))
            if ok:
                delete = f"DELETE FROM delta.`{table}` WHERE append_id = '{eid}'"
                _record(writer, table, "delete", lambda _: spark.sql(delete), eid)
        elif roll < 0.30:
            _record(writer, table, "optimize", lambda _: spark.sql(f"OPTIMIZE delta.`{table}`"))
        else:
            op_id, ok = _record(writer, table, "append", lambda op_id: append(table, op_id))
            if ok:
                mine.append(op_id)

    try:
        warm_up(spark, writer.tables[0])
        # A writer's first start makes one operation even if the stop file appeared meanwhile:
        # on a loaded machine a driver's start and warm-up outlast a short soak.
        first = not writer.ledger.resumed
        while first or not writer.stopped():
            first = False
            one_operation(writer.rng.choice(writer.tables))
            time.sleep(writer.rng.uniform(0.0, writer.args.pause))
    finally:
        spark.stop()


def warm_up(spark: Any, table: str) -> None:
    """Reads ``table`` once before the first operation: a fresh driver JVM loads and compiles
    Delta's and S3A's code on its first use, which on a loaded machine takes a minute, and an
    operation is timed from its intent (the soak kills the writer of an operation that runs
    past its deadline). Writes nothing; a failure (an injected fault) is only printed."""
    try:
        spark.read.format("delta").load(table).count()
    except Exception as exc:
        print(f"warm-up read of {table} failed: {type(exc).__name__}: {exc}", flush=True)


def spark_read(tables: list[str], endpoint: Endpoint, local_dir: Path | None) -> dict[str, Any]:
    """The Spark reader's account of each table (a driver that never wrote): versions in the
    history, rows, and rows per ``append_id``."""
    from delta.tables import DeltaTable

    from deltaguard.localstack.spark_driver import build_test_session

    spark = build_test_session(
        endpoint.s3_storage(),
        PresetName.S3_CONDITIONAL,
        app_name="deltaguard-soak-reader",
        local_dir=local_dir,
    )
    try:
        report: dict[str, Any] = {}
        for table in tables:
            history = DeltaTable.forPath(spark, table).history().select("version").collect()
            df = spark.read.format("delta").load(table)
            per_append = df.groupBy("append_id").count().collect()
            report[table] = {
                "versions": sorted(int(r["version"]) for r in history),
                "rows": df.count(),
                "per_append": {r["append_id"]: int(r["count"]) for r in per_append},
            }
        return report
    finally:
        spark.stop()


ENGINES: dict[str, Callable[[Writer, Endpoint], None]] = {
    "spark": run_spark,
    "python": run_python,
    "deltars": run_deltars,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaguard.localstack.soak_worker")
    parser.add_argument("--engine", choices=sorted(ENGINES), required=True)
    parser.add_argument(
        "--read", action="store_true", help="read the tables (spark), write nothing"
    )
    parser.add_argument("--writer", required=True, help="a name unique in the soak")
    parser.add_argument("--tables", required=True, help="comma-separated s3:// table URIs")
    parser.add_argument("--endpoint", required=True, help="S3 endpoint URL (the fault proxy)")
    parser.add_argument("--ledger", required=True, type=Path)
    parser.add_argument("--stop-file", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pause", type=float, default=0.5, help="max seconds between ops")
    parser.add_argument("--local-dir", help="Spark scratch directory")
    args = parser.parse_args(argv)
    if args.read:
        local = Path(args.local_dir) if args.local_dir else None
        result = spark_read(args.tables.split(","), Endpoint(url=args.endpoint), local)
        sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
        return 0
    ledger = Ledger(args.ledger, args.writer, args.engine)
    try:
        ENGINES[args.engine](Writer(args, ledger), Endpoint(url=args.endpoint))
    finally:
        ledger.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
