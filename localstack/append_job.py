"""The multi-driver append workload: one Spark driver process per writer.

``append``: writer 0 creates the table if needed; the others wait for version 0. Each writer
then appends ``--appends`` batches of ``--rows`` rows, one Delta commit each, tagging every
commit with ``userMetadata = <run id>/w<writer>/b<batch>`` so a verifier can tell which
commits survived. Prints one JSON object: the writer's own account of what it committed, with
the wall time of each append's commit call and the process CPU seconds spent appending (the
JVM's and this interpreter's) for the benchmarks, and a Spark driver's commit metrics
(``deltaguard_metrics``: the counts of deltaguard's metrics source as registered with its
metrics system, None if it is not; a driver that fails writes them on stderr,
``DELTAGUARD-METRICS {json}``). Engines: ``spark`` (a Spark driver), ``python`` (deltaguard's
Python writer), ``delta-rs`` (``deltalake.write_deltalake``, which
commits with a conditional PUT; given the endpoint and keys only, never a locking provider or
``AWS_S3_ALLOW_UNSAFE_RENAME``).

Start barrier (``--barrier-dir``): a writer that is ready to append (session built, table
found, a Spark driver warmed by creating two scratch tables beside it, and holding the round's
table open, as a long-running writer does and as writer 0 does after creating it) creates
``ready-r<round>-w<writer>`` there and waits for ``go-r<round>`` (written by the orchestrator
once every writer is ready; ``abort`` if one failed), so the writers' appends overlap fully and
JVM start-up stays out of the timings. ``--rounds R``: R rounds of ``--appends`` appends, each
on its own table (``<table>-r<round>``, all created by writer 0 first), in one process: a
benchmark's repeated runs without a JVM start each.

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
from deltaguard.localstack.spark_driver import build_test_session, driver_cpu_seconds
from deltaguard.localstack.spark_metrics import METRICS_PREFIX, registered_counts
from deltaguard.logstore.commit_names import commit_file_name
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.session import DynamoDBCommitTableSpec
from deltaguard.spark_conf.storage import LocalStorage, S3Storage

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from deltaguard.tools.deltalog.commit import LogStore

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
    if not PresetName(args.logstore).uses_dynamodb:
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
    from deltaguard.logstore.s3_transition import S3TransitionLogStore

    endpoint = Endpoint(url=endpoint_url)
    if logstore is PresetName.S3_DYNAMODB:
        return S3DynamoDBLogStore(endpoint.s3_client(), endpoint.dynamodb_client(), dynamodb_table)
    if logstore is PresetName.S3_DYNAMODB_TRANSITION:
        return S3TransitionLogStore(
            endpoint.s3_client(), endpoint.dynamodb_client(), dynamodb_table
        )
    return S3ConditionalLogStore(endpoint.s3_client())


def _log_exists(spark: object, table: str, version: int) -> bool:
    jvm = spark._jvm  # type: ignore[attr-defined]
    path = jvm.org.apache.hadoop.fs.Path(f"{table}/_delta_log/{commit_file_name(version)}")
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
    return bool(fs.exists(path))


def round_tables(table: str, rounds: int) -> list[str]:
    """The table of each round: ``table`` itself for one round, else ``<table>-r<round>``."""
    return [table] if rounds == 1 else [f"{table}-r{r}" for r in range(rounds)]


def _rows(args: argparse.Namespace, batch: int, tag: str) -> pa.Table:
    import pyarrow as pa

    return pa.table(
        {
            "writer": [args.writer] * args.rows,
            "batch": [batch] * args.rows,
            "seq": list(range(args.rows)),
            "payload": [tag] * args.rows,
        }
    ).cast(arrow_schema())


def _s3_table_exists(s3: object, table: str) -> bool:
    from deltaguard.logstore.s3_location import S3Location

    log0 = S3Location.parse(f"{table}/_delta_log/{commit_file_name(0)}")
    listing = s3.list_objects_v2(Bucket=log0.bucket, Prefix=log0.key)  # type: ignore[attr-defined]
    return bool(listing.get("KeyCount"))


def _append_python(args: argparse.Namespace) -> dict[str, object]:
    """The same workload committed by deltaguard's Python writer (no Spark, no JVM)."""
    from deltaguard.localstack.delta_append import BlindAppender
    from deltaguard.logstore.s3_location import S3Location

    started = time.monotonic()
    s3 = Endpoint(url=args.endpoint).s3_client()
    store = python_log_store(args.endpoint, PresetName(args.logstore), args.dynamodb_table)

    def put(uri: str, data: bytes) -> None:
        loc = S3Location.parse(uri)
        s3.put_object(Bucket=loc.bucket, Key=loc.key, Body=data)

    appenders = {t: BlindAppender(store, put, t) for t in round_tables(args.table, args.rounds)}

    def commit(table: str, batch: int, tag: str) -> None:
        appenders[table].append(_rows(args, batch, tag), user_metadata=tag)

    return _wait_and_append(
        args, "python", started, lambda t: _s3_table_exists(s3, t), commit, time.process_time
    )


def _append_deltars(args: argparse.Namespace) -> dict[str, object]:
    """The same workload committed by delta-rs (``deltalake``), as an anchor: endpoint and keys
    only (its default conditional-PUT commit), never a locking provider or unsafe rename."""
    from deltalake import CommitProperties, write_deltalake

    started = time.monotonic()
    endpoint = Endpoint(url=args.endpoint)
    s3 = endpoint.s3_client()
    options = endpoint.delta_rs_options()

    def commit(table: str, batch: int, tag: str) -> None:
        write_deltalake(
            table.replace("s3a://", "s3://", 1),
            _rows(args, batch, tag),
            mode="append",
            storage_options=options,
            commit_properties=CommitProperties(custom_metadata={"userMetadata": tag}),
        )

    return _wait_and_append(
        args, "delta-rs", started, lambda t: _s3_table_exists(s3, t), commit, time.process_time
    )


def _await_go(barrier_dir: Path, round_no: int, writer: int, timeout_s: float = 900) -> None:
    """Says this writer is ready for round ``round_no`` (``ready-r<round>-w<writer>``) and
    waits for the orchestrator's ``go-r<round>``. Raises RuntimeError on ``abort`` (another
    writer failed), TimeoutError after ``timeout_s``."""
    (barrier_dir / f"ready-r{round_no}-w{writer}").touch()
    deadline = time.monotonic() + timeout_s
    while not (barrier_dir / f"go-r{round_no}").exists():
        if (barrier_dir / "abort").exists():
            raise RuntimeError(f"start aborted by the orchestrator ({barrier_dir})")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no go-r{round_no} in {barrier_dir} within {timeout_s:.0f} s")
        time.sleep(0.05)


def _wait_and_append(
    args: argparse.Namespace,
    engine: str,
    started: float,
    table_exists: Callable[[str], bool],
    commit: Callable[[str, int, str], None],
    cpu_s: Callable[[], float],
    jobs: Callable[[], int] | None = None,
    open_table: Callable[[str], None] | None = None,
) -> dict[str, object]:
    """Waits for version 0 of every round's table, then per round (with ``--barrier-dir``,
    once every writer is ready for it) runs ``commit(table, batch, tag)`` once per append,
    recording every success and every exception (none is hidden), with the timings the
    benchmarks use: the wall time of each commit call, ``cpu_s()`` (the writer's process
    CPU seconds) spent over the appends and, given ``jobs``, the Spark jobs they ran. With the
    barrier, ``open_table(table)`` runs before the writer says it is ready for the round, so
    no writer's first timed append pays for loading the table (writer 0 holds it open from
    creating it). One round: the round's report; more: ``{"rounds": [report, ...]}``."""
    tables = round_tables(args.table, args.rounds)
    deadline = time.monotonic() + 300
    for table in tables:
        while not table_exists(table):
            if time.monotonic() > deadline:
                raise TimeoutError(f"table {table} was not created within 300 s")
            time.sleep(0.2)
    reports: list[dict[str, object]] = []
    for round_no, table in enumerate(tables):
        if args.barrier_dir:
            if open_table is not None:
                open_table(table)
            _await_go(Path(args.barrier_dir), round_no, args.writer)
        ready = time.monotonic()
        cpu_before = cpu_s()
        jobs_before = jobs() if jobs else 0
        first_append_at = time.time()
        committed, errors, latencies = [], [], []
        for batch in range(args.appends):
            tag = f"{args.run_id}/w{args.writer}/b{batch}"
            call_started = time.monotonic()
            try:
                commit(table, batch, tag)
                committed.append(tag)
            except Exception as exc:
                errors.append({"tag": tag, "error": f"{type(exc).__name__}: {str(exc)[:500]}"})
            latencies.append(round(time.monotonic() - call_started, 4))
        last_append_at = time.time()
        report: dict[str, object] = {
            "writer": args.writer,
            "engine": engine,
            "committed": committed,
            "errors": errors,
            "startup_s": round(ready - started, 2),
            "append_s": round(time.monotonic() - ready, 2),
            "first_append_at": first_append_at,
            "last_append_at": last_append_at,
            "commit_call_s": latencies,
            "append_cpu_s": round(cpu_s() - cpu_before, 3),
        }
        if jobs:
            report["spark_jobs"] = jobs() - jobs_before
        reports.append(report)
    return reports[0] if len(reports) == 1 else {"rounds": reports}


def _warm_up(spark: SparkSession, table: str, writer: int) -> None:
    """Two writes, each creating a scratch Delta table of this writer beside ``table`` (same
    storage, same commit path: ``<table>-warm-up-w<writer>-<i>``): class loading and code
    generation of the write path and of the store's requests happen before the timed appends,
    without touching the shared table. Each commit is a version 0, which a staged race
    (:func:`deltaguard.localstack.race.hold_one_commit_put`, versions >= 1) leaves alone."""
    for i in range(2):
        spark.range(10).write.format("delta").mode("append").save(f"{table}-warm-up-w{writer}-{i}")


def _session_conf(
    args: argparse.Namespace,
) -> tuple[LocalStorage | S3Storage, PresetName, dict[str, str]]:
    """Storage, preset and extra settings of the driver's session. With ``--conf-json`` the
    file's settings are the whole commit path (no preset rendered under them: e.g. the
    benchmark's frozen baseline preset); otherwise ``--logstore``'s preset."""
    if not args.conf_json:
        return _storage(args), PresetName(args.logstore), {}
    conf = json.loads(Path(args.conf_json).read_text())
    if not isinstance(conf, dict):
        raise ValueError(f"{args.conf_json}: expected a JSON object of Spark settings")
    return LocalStorage(), PresetName.LOCAL, {str(k): str(v) for k, v in conf.items()}


def append(args: argparse.Namespace) -> dict[str, object]:
    from delta.tables import DeltaTable

    if args.engine == "python":
        return _append_python(args)
    if args.engine == "delta-rs":
        return _append_deltars(args)

    started = time.monotonic()
    storage, preset, conf = _session_conf(args)
    local_dir = Path(args.local_dir) if args.local_dir else None
    spark = build_test_session(
        storage,
        preset,
        app_name=f"deltaguard-append-w{args.writer}",
        dynamodb=_dynamodb(args),
        local_dir=local_dir,
        extra_conf=conf,
    )
    try:
        if args.writer == 0:
            for table in round_tables(args.table, args.rounds):
                DeltaTable.createIfNotExists(spark).location(table).addColumns(
                    _schema(spark)
                ).execute()

        def commit(table: str, batch: int, tag: str) -> None:
            df = spark.range(args.rows).selectExpr(
                f"CAST({args.writer} AS INT) AS writer",
                f"CAST({batch} AS INT) AS batch",
                "id AS seq",
                f"'{tag}' AS payload",
            )
            df.write.format("delta").mode("append").option("userMetadata", tag).save(table)

        if args.barrier_dir:
            _warm_up(spark, args.table, args.writer)
        cpu_s = driver_cpu_seconds(spark)

        def jobs() -> int:
            return len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))

        def open_table(table: str) -> None:
            # A DataFrame is analysed when created: that loads the table's snapshot into the
            # driver's DeltaLog cache, the one the appends' writes then update.
            spark.read.format("delta").load(table)

        report = _wait_and_append(
            args,
            "spark",
            started,
            lambda t: _log_exists(spark, t, 0),
            commit,
            cpu_s,
            jobs,
            open_table,
        )
        # What this driver really ran: its Spark and the Hadoop (S3A) on its classpath.
        jvm = spark.sparkContext._jvm
        assert jvm is not None, "a classic (py4j) Spark session has a JVM gateway"
        report["spark_version"] = spark.version
        report["hadoop_version"] = jvm.org.apache.hadoop.util.VersionInfo.getVersion()
        report["deltaguard_metrics"] = registered_counts(spark)
        return report
    except BaseException:
        _log_metrics(spark)
        raise
    finally:
        spark.stop()


def _log_metrics(spark: SparkSession) -> None:
    """A failing driver's commit metrics, on stderr (its log) as ``DELTAGUARD-METRICS {json}``
    (None: no source registered), so a test of the failure can read what the store counted.
    Best effort: the failure being raised is what counts."""
    counts: dict[str, int] | dict[str, str] | None
    try:
        counts = registered_counts(spark)
    except Exception as exc:  # the driver is failing anyway: say why there are no counts
        counts = {"unreadable": f"{type(exc).__name__}: {exc}"[:300]}
    sys.stderr.write(METRICS_PREFIX + json.dumps(counts) + "\n")
    sys.stderr.flush()


def verify(args: argparse.Namespace) -> dict[str, object]:
    spark = build_test_session(
        _storage(args),
        PresetName(args.logstore),
        app_name="deltaguard-verify",
        dynamodb=_dynamodb(args),
        local_dir=Path(args.local_dir) if args.local_dir else None,
    )
    try:
        return table_account(spark, args.table)
    finally:
        spark.stop()


def table_account(spark: SparkSession, table: str) -> dict[str, object]:
    """What Spark Delta reads in ``table`` through ``spark``: versions, data commits per tag
    (``userMetadata``), rows, rows per (writer, batch)."""
    from delta.tables import DeltaTable

    history = (
        DeltaTable.forPath(spark, table).history().select("version", "operation", "userMetadata")
    ).collect()
    data = spark.read.format("delta").load(table)
    per_batch = data.groupBy("writer", "batch").count().collect()
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
        "rows": data.count(),
        "rows_per_batch": {f"w{r['writer']}/b{r['batch']}": int(r["count"]) for r in per_batch},
    }


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
        choices=["spark", "python", "delta-rs"],
        default="spark",
        help="python: deltaguard's Python conditional-write committer (S3 only); "
        "delta-rs: deltalake.write_deltalake (conditional PUT, S3 only)",
    )
    parser.add_argument(
        "--conf-json",
        help="a JSON object of Spark settings that replace the --logstore preset's commit path "
        "(spark engine)",
    )
    parser.add_argument(
        "--barrier-dir",
        help="start barrier: create ready-w<writer> here when ready, append once 'go' appears",
    )
    parser.add_argument(
        "--dynamodb-table",
        default="delta_log",
        help="the DynamoDB LogStore's table (with --logstore s3-dynamodb)",
    )
    parser.add_argument("--writer", type=int, default=0)
    parser.add_argument("--appends", type=int, default=25)
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="rounds of --appends, each on its own table (<table>-r<round>), one JVM for all",
    )
    parser.add_argument("--run-id", default="run")
    parser.add_argument("--local-dir", help="Spark scratch directory")
    args = parser.parse_args(argv)
    result = append(args) if args.command == "append" else verify(args)
    sys.stdout.write("DELTAGUARD-RESULT " + json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
