"""Streaming: micro-batch commit latency, Spark jobs and checkpoint requests per micro-batch
(``python -m bench --only streaming``).

Every request of the drivers goes through the fault proxy with :data:`LATENCY_MS` per request
(as the throughput benchmark), to LocalStack, in one run of each scenario
(``localstack/streams.py``, ``s3-conditional`` preset, file sources of one file per
micro-batch, checkpoints on S3):

- ``alone``: one query;
- ``two_queries_and_batch``: two queries (two driver processes) and a batch writer.

Per micro-batch, pooled over a scenario's queries: Spark's ``triggerExecution`` (the whole
micro-batch: offsets file, the Delta write and commit, commits file) and ``addBatch`` (the
Delta sink's write and commit) p50/p95; Spark jobs per micro-batch (a streaming write
carries a ``txn`` action, so Delta reconstructs the snapshot's transactions); S3 requests per
micro-batch on the query's checkpoint (the fault proxy's request log,
:func:`~deltaguard.localstack.fault_proxy.requests_under`) by kind, and on everything else.
The checkpoint file manager's before and after, in the same run: ``alone`` runs the preset
as shipped (deltaguard's one-PUT manager, :data:`~deltaguard.spark_conf.request_tuning.
MANAGER_CLASS_KEY`), ``alone_spark_manager`` the same with Spark's default (rename-based)
manager: :func:`spark_default_manager_conf`.
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.fault_proxy import FaultProxy, requests_under
from deltaguard.localstack.streams import StreamsResult, run_streams
from deltaguard.logstore.s3_location import S3Location
from deltaguard.spark_conf.request_tuning import MANAGER_CLASS_KEY, untuned_conf
from deltaguard.spark_conf.spark_lines import installed_line

from .stats import percentile

LATENCY_MS = 20.0
FILES = 20
ROWS_PER_FILE = 100
BATCH_APPENDS = 10


def spark_default_manager_conf() -> dict[str, str]:
    """The installed line's preset with Spark's own checkpoint file manager (a temp file and
    a rename) instead of the preset's: the "before" of the checkpoint requests."""
    return {MANAGER_CLASS_KEY: untuned_conf(installed_line())[MANAGER_CLASS_KEY]}


def checkpoint_requests(
    log: list[dict[str, Any]], result: StreamsResult, query: str
) -> dict[str, Any]:
    """Requests per micro-batch of ``query`` on its checkpoint, by kind, from a request log
    that saw only this run."""
    q = next(q for q in result.queries if q.name == query)
    loc = S3Location.parse(q.checkpoint)
    batches = sum(len(r["batches"]) for r in result.reports[query]) or 1
    mine = requests_under(log, loc.bucket, loc.key)
    kinds = Counter(e["kind"] for e in mine)
    return {
        "per_batch": round(len(mine) / batches, 2),
        "by_kind_per_batch": {k: round(n / batches, 2) for k, n in sorted(kinds.items())},
        "batches": batches,
    }


def _scenario(
    endpoint: Endpoint,
    bucket: str,
    workdir: Path,
    name: str,
    queries: int,
    batch_appends: int,
    spark_conf: dict[str, str] | None,
    files: int,
) -> dict[str, Any]:
    with FaultProxy(endpoint, workdir / name, latency_ms=LATENCY_MS) as proxy:
        result = run_streams(
            f"s3a://{bucket}/streaming-{name}",
            endpoint_url=proxy.endpoint.url,
            workdir=workdir / name,
            queries=queries,
            files=files,
            rows_per_file=ROWS_PER_FILE,
            batch_appends=batch_appends,
            spark_conf=spark_conf,
        )
        log = proxy.requests()
    batches = [b for reports in result.reports.values() for r in reports for b in r["batches"]]
    trigger = [b["duration_ms"]["triggerExecution"] / 1000 for b in batches]
    add = [b["duration_ms"].get("addBatch", 0) / 1000 for b in batches]
    jobs = [
        r["spark_jobs"] / max(1, len(r["batches"])) for rs in result.reports.values() for r in rs
    ]
    ckpt = {q.name: checkpoint_requests(log, result, q.name) for q in result.queries}
    on_checkpoints = sum(c["per_batch"] * c["batches"] for c in ckpt.values())
    return {
        "queries": queries,
        "batch_appends": batch_appends,
        "micro_batches": len(batches),
        "micro_batch_s_p50": percentile(trigger, 50),
        "micro_batch_s_p95": percentile(trigger, 95),
        "add_batch_s_p50": percentile(add, 50),
        "add_batch_s_p95": percentile(add, 95),
        "spark_jobs_per_micro_batch": statistics.median(jobs),
        "checkpoint_requests": ckpt,
        "other_requests_per_micro_batch": round((len(log) - on_checkpoints) / len(batches), 2),
        "exactly_once": all(
            not result.missing(q) and not result.duplicated(q) for q in result.queries
        ),
    }


def run(
    endpoint: Endpoint,
    bucket: str,
    workdir: Path,
    files: int = FILES,
    batch_appends: int = BATCH_APPENDS,
) -> dict[str, Any]:
    """Both scenarios with the preset as shipped (``files`` micro-batches per query,
    ``batch_appends`` for the batch writer), and ``alone`` with Spark's default checkpoint
    file manager."""
    return {
        "latency_ms": LATENCY_MS,
        "files": files,
        "rows_per_file": ROWS_PER_FILE,
        "alone": _scenario(endpoint, bucket, workdir, "alone", 1, 0, None, files),
        "alone_spark_manager": _scenario(
            endpoint, bucket, workdir, "spark-manager", 1, 0, spark_default_manager_conf(), files
        ),
        "two_queries_and_batch": _scenario(
            endpoint, bucket, workdir, "two-and-batch", 2, batch_appends, None, files
        ),
    }


def markdown(section: dict[str, Any]) -> list[str]:
    lines = [
        "| scenario | micro-batches | micro-batch p50 / p95 | Delta write+commit p50 / p95 "
        "| Spark jobs per micro-batch | checkpoint requests per micro-batch (by kind) "
        "| other requests per micro-batch | exactly once |",
        "|---|---|---|---|---|---|---|---|",
    ]
    labels = {
        "alone_spark_manager": "one query, Spark's checkpoint file manager (before)",
        "alone": "one query",
        "two_queries_and_batch": "two queries + a batch writer",
    }
    for key, label in labels.items():
        row = section.get(key)
        if not row:
            continue
        ckpt = row["checkpoint_requests"]["q0"]
        kinds = ", ".join(
            f"{k.removeprefix('s3 ')} {v:.1f}" for k, v in ckpt["by_kind_per_batch"].items()
        )
        lines.append(
            f"| {label} | {row['micro_batches']} | {row['micro_batch_s_p50']:.2f} / "
            f"{row['micro_batch_s_p95']:.2f} s | {row['add_batch_s_p50']:.2f} / "
            f"{row['add_batch_s_p95']:.2f} s | {row['spark_jobs_per_micro_batch']:.1f} | "
            f"{ckpt['per_batch']:.1f} ({kinds}) | {row['other_requests_per_micro_batch']:.1f} "
            f"| {'yes' if row['exactly_once'] else 'NO'} |"
        )
    return [*lines, ""]
