"""Streaming queries and a batch writer on one S3 table, with one query's driver SIGKILLed in
the middle of a micro-batch and restarted from its checkpoint; the one orchestration of that
workload for the tests and the benchmark.

:func:`run_streams` creates the table (deltaguard's Python writer), writes each query's file
source (:func:`~deltaguard.localstack.stream_job.write_source`), starts the batch writer
(``append_job``) and every query (``stream_job``, each its own driver process and checkpoint),
and, for each query to kill, freezes one of its PUTs at its own fault proxy (a Delta commit:
its data files are written, its commit is not; or the checkpoint's ``commits/<batch>``: the
table has the micro-batch, the checkpoint does not say so), SIGKILLs its driver, lists the
table's data files, and restarts it from its checkpoint. It then reads the table back with
delta-rs (no JVM): rows by (query name, source value), and the data files the table names.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltaguard.localstack.append_job import arrow_schema, python_log_store
from deltaguard.localstack.delta_append import create_table
from deltaguard.localstack.fault_proxy import FaultProxy, FaultRule
from deltaguard.localstack.multi_driver import job_result, kill_when, start_job
from deltaguard.localstack.race import DATA_COMMIT_FILE_REGEX
from deltaguard.localstack.stream_job import write_source
from deltaguard.logstore.preset_name import PresetName
from deltaguard.logstore.s3_location import S3Location

STREAM_RESULT_TIMEOUT_S = 900


@dataclass
class StreamQuery:
    """One streaming query: its name (the rows' payload), its checkpoint and its source."""

    name: str
    writer: int
    checkpoint: str
    source: Path
    values: list[int]
    #: Its driver reaches S3 through this endpoint (the killed query: its own fault proxy).
    endpoint_url: str


@dataclass
class StreamsResult:
    """What the queries and the batch writer reported, and what the table holds."""

    table: str
    queries: list[StreamQuery]
    reports: dict[str, list[dict[str, Any]]]
    batch_report: dict[str, Any] | None
    #: rows per (payload, seq), per table the queries wrote (``table``, or the fan-out's)
    counts: dict[str, Counter[tuple[str, int]]]
    #: data files (relative to the root) listed right after the kill, and named at the end
    files_at_kill: set[str]
    live_files: set[str]
    #: the queries whose driver was killed and restarted
    killed: list[str]
    extra: dict[str, Any] = field(default_factory=dict)

    def missing(self, query: StreamQuery, table: str | None = None) -> list[int]:
        """Source values of ``query`` not in ``table`` (default: :attr:`table`)."""
        counts = self.counts[table or self.table]
        return [v for v in query.values if counts[(query.name, v)] == 0]

    def duplicated(self, query: StreamQuery, table: str | None = None) -> list[int]:
        """Source values of ``query`` more than once in ``table`` (default: :attr:`table`)."""
        counts = self.counts[table or self.table]
        return [v for v in query.values if counts[(query.name, v)] > 1]

    @property
    def killed_batch_files(self) -> set[str]:
        """Data files present right after the kill that no version of the table names at the
        end: the killed micro-batch's (every other writer finished and committed its own)."""
        return self.files_at_kill - self.live_files

    def summary(self) -> dict[str, Any]:
        return {
            "queries": {
                q.name: {
                    "source_rows": len(q.values),
                    "rows_found": {
                        t: sum(c[(q.name, v)] for v in q.values) for t, c in self.counts.items()
                    },
                    "missing": {t: len(self.missing(q, t)) for t in self.counts},
                    "duplicated": {t: len(self.duplicated(q, t)) for t in self.counts},
                    "runs": len(self.reports[q.name]),
                    "batches": [len(r["batches"]) for r in self.reports[q.name]],
                }
                for q in self.queries
            },
            "batch_writer_appends": len(self.batch_report["committed"]) if self.batch_report else 0,
            "killed": self.killed,
            "killed_batch_files": sorted(self.killed_batch_files),
        }


def data_files(endpoint_url: str, table: str) -> set[str]:
    """The table's files outside ``_delta_log`` (relative to its root), listed now."""
    from deltaguard.localstack.endpoints import Endpoint

    root = S3Location.parse(table)
    prefix = root.key.rstrip("/") + "/"
    s3 = Endpoint(url=endpoint_url).s3_client()
    out: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=root.bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            rel = obj["Key"][len(prefix) :]
            if not rel.startswith("_delta_log/") and rel:
                out.add(rel)
    return out


def read_table(endpoint_url: str, table: str) -> tuple[Counter[tuple[str, int]], set[str]]:
    """Rows per (payload, seq) and the data files the latest version names (delta-rs)."""
    from deltalake import DeltaTable

    from deltaguard.localstack.endpoints import Endpoint

    uri = table.replace("s3a://", "s3://", 1)
    dt = DeltaTable(uri, storage_options=Endpoint(url=endpoint_url).delta_rs_options())
    data = dt.to_pyarrow_table(columns=["payload", "seq"])
    counts = Counter(zip(data["payload"].to_pylist(), data["seq"].to_pylist(), strict=True))
    root = uri.rstrip("/") + "/"
    live = {u[len(root) :] if u.startswith(root) else u for u in dt.file_uris()}
    return counts, live


def stream_args(
    query: StreamQuery,
    table: str,
    workdir: Path,
    *,
    conf_json: Path | None = None,
    fanout_tables: list[str] | None = None,
    fanout_workers: int = 4,
) -> list[str]:
    """``stream_job``'s arguments for ``query`` (its Delta sink is ``table``, or with
    ``fanout_tables`` foreachBatch to each of them)."""
    args = [
        "--checkpoint",
        query.checkpoint,
        "--source",
        str(query.source),
        "--query-name",
        query.name,
        "--writer",
        str(query.writer),
        "--endpoint",
        query.endpoint_url,
        "--local-dir",
        str(workdir / f"spark-{query.name}"),
    ]
    if fanout_tables:
        for t in fanout_tables:
            args += ["--fanout-table", t]
        args += ["--fanout-workers", str(fanout_workers)]
    else:
        args += ["--table", table]
    if conf_json is not None:
        args += ["--conf-json", str(conf_json)]
    return args


def hang_commit(skip: int) -> FaultRule:
    """Freezes the Delta commit PUT after the first ``skip`` ones (the micro-batch's data
    files are written, its commit never lands) until the driver is killed."""
    return FaultRule(
        "hang", method="PUT", path_regex=DATA_COMMIT_FILE_REGEX, skip=skip, times=1, delay_s=600
    )


def hang_checkpoint_commit(skip: int) -> FaultRule:
    """Freezes the write of the checkpoint's ``commits/<batch>`` file (its PUT, or with
    Spark's rename-based manager the COPY onto it, also a PUT) after the first ``skip`` ones:
    the micro-batch is in the table (its Delta commit landed), the checkpoint does not say so.
    Temp files and the LogStore verifier's probe keys in ``commits/`` do not match."""
    return FaultRule(
        "hang", method="PUT", path_regex=r"/commits/\d+$", skip=skip, times=1, delay_s=600
    )


def _fired_once(proxy: FaultProxy) -> Callable[[], bool]:
    return lambda: proxy.fired() == [1]


@dataclass
class Kill:
    """Kill a query's driver when ``rule`` (a ``hang``) fires at ``proxy``, the fault proxy
    its driver reaches S3 through; then restart it from its checkpoint."""

    proxy: FaultProxy
    rule: FaultRule


def run_streams(
    table: str,
    *,
    endpoint_url: str,
    workdir: Path,
    kills: dict[str, Kill] | None = None,
    queries: int = 2,
    files: int = 4,
    rows_per_file: int = 5,
    batch_appends: int = 4,
    batch_rows: int = 5,
    python: str | None = None,
    spark_conf: dict[str, str] | None = None,
    fanout_tables: list[str] | None = None,
    fanout_workers: int = 4,
    timeout_s: float = STREAM_RESULT_TIMEOUT_S,
    bed_endpoint_url: str | None = None,
) -> StreamsResult:
    """Runs ``queries`` streaming queries (``q0``, ``q1``, ...; each ``files`` source files of
    ``rows_per_file`` values, one file per micro-batch) and, with ``batch_appends`` > 0, a
    batch writer of ``batch_appends`` appends, all at once, on ``table`` through
    ``endpoint_url``. ``kills`` by query name: that query reaches S3 through the kill's
    proxy (in front of the same S3); when the kill's rule fires, its driver is SIGKILLed, the
    table's data files are listed, and it is restarted from its checkpoint (kills in the
    order given). ``python``: the drivers' Spark line interpreter; ``spark_conf``: settings on
    top of the preset (e.g. a checkpoint file manager); ``fanout_tables``: the queries write
    through foreachBatch fan-out to these tables instead, ``fanout_workers`` at once
    (``table`` is then only the batch writer's); ``bed_endpoint_url``: where the test bed's
    own requests go (the tables' creation, the listing after a kill, the read-back; default
    ``endpoint_url``), e.g. around a request-counting proxy. Raises DriverFailedError if a
    driver crashes (other than by the kills)."""
    kills = kills or {}
    run_id = uuid.uuid4().hex[:8]
    root = S3Location.parse(table)
    targets = fanout_tables or [table]
    bed_url = bed_endpoint_url or endpoint_url
    store = python_log_store(bed_url, PresetName.S3_CONDITIONAL, "delta_log")
    for t in {table, *targets}:
        create_table(store, t, arrow_schema())
    conf_json = None
    if spark_conf:
        conf_json = workdir / f"{run_id}-conf.json"
        conf_json.parent.mkdir(parents=True, exist_ok=True)
        conf_json.write_text(json.dumps(spark_conf))
    specs = []
    for i in range(queries):
        name = f"q{i}"
        source = workdir / f"{run_id}-source-{name}"
        kill = kills.get(name)
        specs.append(
            StreamQuery(
                name=name,
                writer=100 + i,
                checkpoint=f"s3a://{root.bucket}/checkpoints/{run_id}/{name}",
                source=source,
                values=write_source(source, files, rows_per_file),
                endpoint_url=kill.proxy.endpoint.url if kill else endpoint_url,
            )
        )
    module = "deltaguard.localstack.stream_job"

    def start(q: StreamQuery, attempt: int) -> tuple[Any, Path]:
        log = workdir / f"{run_id}-{q.name}-{attempt}.log"
        args = stream_args(
            q,
            table,
            workdir,
            conf_json=conf_json,
            fanout_tables=fanout_tables,
            fanout_workers=fanout_workers,
        )
        return start_job(args, log, module=module, python=python), log

    for kill in kills.values():
        kill.proxy.set_rules([kill.rule])
    batch = None
    if batch_appends:
        batch_log = workdir / f"{run_id}-batch.log"
        batch_args = ["append", "--table", table, "--endpoint", endpoint_url, "--writer", "1"]
        batch_args += ["--appends", str(batch_appends), "--rows", str(batch_rows)]
        batch_args += ["--run-id", run_id, "--local-dir", str(workdir / "spark-batch")]
        batch = (start_job(batch_args, batch_log, python=python), batch_log)
    running = {q.name: start(q, 0) for q in specs}
    reports: dict[str, list[dict[str, Any]]] = {q.name: [] for q in specs}
    files_at_kill: set[str] = set()
    batch_report = None
    try:
        for name, kill in kills.items():
            proc, log = running[name]
            kill_when(proc, _fired_once(kill.proxy), log, timeout_s)
            if not fanout_tables:
                files_at_kill |= data_files(bed_url, table)
            kill.proxy.set_rules([])
            running[name] = start(next(q for q in specs if q.name == name), 1)
        for q in specs:
            proc, log = running[q.name]
            reports[q.name].append(job_result(proc, log, timeout_s, name=f"stream {q.name}")[1])
        if batch is not None:
            batch_report = job_result(batch[0], batch[1], timeout_s, name="batch writer")[1]
    finally:
        # A failure (or an interrupt) leaves no driver running.
        for proc in [p for p, _ in running.values()] + ([batch[0]] if batch else []):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    counts: dict[str, Counter[tuple[str, int]]] = {}
    live: set[str] = set()
    for t in targets:
        counts[t], named = read_table(bed_url, t)
        if t == table:
            live = named
    return StreamsResult(
        table=table,
        queries=specs,
        reports=reports,
        batch_report=batch_report,
        counts=counts,
        files_at_kill=files_at_kill,
        live_files=live,
        killed=sorted(kills),
        extra={"run_id": run_id},
    )
