"""Streaming: micro-batch latency, Spark jobs and S3 requests per micro-batch, with the preset as
shipped against the preset before issue 44 (the baseline) in the same run
(``python -m bench --only streaming``).

Every request of the drivers goes through the fault proxy with :data:`LATENCY_MS` per request
(as the throughput benchmark), to LocalStack, in one run of each row (``localstack/streams.py``,
``s3-conditional`` preset, file sources of one file per micro-batch, checkpoints on S3); the
test bed's own requests (the table's creation, the read-back that checks exactly once) go to
LocalStack directly and are not counted. Scenarios:

- ``alone``: one query, on each line of :data:`LINES` (the newest line and another, each
  driver run by its line's interpreter);
- ``two_queries_and_batch``: two queries (two driver processes) and a batch writer, on the
  newest line.

Each scenario runs with the preset before issue 44 (:func:`~deltaguard.spark_conf.
request_tuning.s3a_exists_conf`: the checkpoint file manager's ``exists`` through S3A) and as
shipped, one after the other. Per micro-batch, pooled over a row's queries: Spark's
``triggerExecution`` (the whole micro-batch: offsets file, the Delta write and commit, commits
file) and ``addBatch`` (the Delta sink's write and commit) p50/p95, and their ratio to the
baseline row of the same scenario and line; Spark jobs per micro-batch, by job description
(``Delta: <query>: Compute snapshot for version: N`` is Delta's state reconstruction: the
sink's ``txnVersion`` lookup); S3 requests per micro-batch from the fault proxy's log
(:func:`~deltaguard.localstack.fault_proxy.requests_under`): on the query's checkpoint by kind,
the table log's reads (GET/HEAD of commits, checkpoints and ``_last_checkpoint``: Delta's state
reconstruction reads the commits since the last checkpoint, and Delta's HEAD of each new
commit), and the rest (the data files, the commit, its ``N.crc``, the log listing, the
checkpoint every 10 versions).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.fault_proxy import FaultProxy, requests_under
from deltaguard.localstack.streams import StreamsResult, run_streams
from deltaguard.logstore.s3_location import S3Location
from deltaguard.spark_conf.request_tuning import s3a_exists_conf
from deltaguard.spark_conf.spark_lines import NEWEST, by_name

from .spark_lines import line_python
from .stats import percentile

LATENCY_MS = 20.0
FILES = 20
ROWS_PER_FILE = 100
BATCH_APPENDS = 10
#: The lines a lone query runs on: the newest and the oldest (the SDK v1 jar).
LINES = (NEWEST.name, "3.5")
#: (row key, queries, batch writer appends, lines)
SCENARIOS = (
    ("alone", 1, 0, LINES),
    ("two_queries_and_batch", 2, BATCH_APPENDS, (NEWEST.name,)),
)
#: (preset, settings on top of the shipped preset)
PRESETS: tuple[tuple[str, dict[str, str] | None], ...] = (
    ("before issue 44", s3a_exists_conf()),
    ("shipped", None),
)
#: A table log read: a commit, a checkpoint part, ``_last_checkpoint`` (GET or HEAD).
_LOG_READ = re.compile(
    r"/_delta_log/(\d{20}\.json|\d{20}\.checkpoint[^/]*\.parquet|_last_checkpoint)$"
)


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


def _is_log_read(entry: dict[str, Any]) -> bool:
    return entry["kind"].endswith(("GetObject", "HeadObject")) and bool(
        _LOG_READ.search(entry["path"])
    )


def _scenario(
    endpoint: Endpoint,
    bucket: str,
    workdir: Path,
    name: str,
    queries: int,
    batch_appends: int,
    spark_conf: dict[str, str] | None,
    files: int,
    python: str,
) -> dict[str, Any]:
    with FaultProxy(endpoint, workdir / name, latency_ms=LATENCY_MS) as proxy:
        result = run_streams(
            f"s3a://{bucket}/streaming-{name}",
            endpoint_url=proxy.endpoint.url,
            bed_endpoint_url=endpoint.url,
            workdir=workdir / name,
            queries=queries,
            files=files,
            rows_per_file=ROWS_PER_FILE,
            batch_appends=batch_appends,
            spark_conf=spark_conf,
            python=python,
        )
        log = proxy.requests()
    reports = [r for rs in result.reports.values() for r in rs]
    batches = [b for r in reports for b in r["batches"]]
    trigger = [b["duration_ms"]["triggerExecution"] / 1000 for b in batches]
    add = [b["duration_ms"].get("addBatch", 0) / 1000 for b in batches]
    jobs = [r["spark_jobs"] / max(1, len(r["batches"])) for r in reports]
    by_description: Counter[str] = Counter()
    for r in reports:
        by_description.update(r.get("spark_jobs_by_description", {}))
    ckpt = {q.name: checkpoint_requests(log, result, q.name) for q in result.queries}
    on_checkpoints = sum(c["per_batch"] * c["batches"] for c in ckpt.values())
    log_reads = sum(1 for e in log if _is_log_read(e))
    n = len(batches)
    return {
        "spark_version": reports[0].get("spark_version"),
        "queries": queries,
        "batch_appends": batch_appends,
        "micro_batches": n,
        "micro_batch_s_p50": percentile(trigger, 50),
        "micro_batch_s_p95": percentile(trigger, 95),
        "add_batch_s_p50": percentile(add, 50),
        "add_batch_s_p95": percentile(add, 95),
        "spark_jobs_per_micro_batch": statistics.median(jobs),
        "spark_jobs_by_description_per_micro_batch": {
            d: round(c / n, 2) for d, c in by_description.most_common()
        },
        "checkpoint_requests": ckpt,
        "requests_per_micro_batch": round(len(log) / n, 2),
        "log_reads_per_micro_batch": round(log_reads / n, 2),
        "other_requests_per_micro_batch": round((len(log) - on_checkpoints - log_reads) / n, 2),
        "exactly_once": all(
            not result.missing(q) and not result.duplicated(q) for q in result.queries
        ),
    }


def _ratios(row: dict[str, Any], baseline: dict[str, Any]) -> dict[str, float]:
    return {
        key: round(row[key] / baseline[key], 2)
        for key in ("micro_batch_s_p50", "micro_batch_s_p95", "requests_per_micro_batch")
        if baseline.get(key)
    }


def run(
    endpoint: Endpoint,
    bucket: str,
    workdir: Path,
    files: int = FILES,
) -> dict[str, Any]:
    """Every scenario of :data:`SCENARIOS` on its lines, with each preset of :data:`PRESETS`
    in turn (``files`` micro-batches per query); each shipped row carries its ratios to the
    baseline row before it."""
    rows = []
    for scenario, queries, appends, lines in SCENARIOS:
        for line in lines:
            python = line_python(by_name(line))
            baseline = None
            for preset, conf in PRESETS:
                name = f"{scenario}-{line}-{preset.replace(' ', '-')}"
                row = {
                    "scenario": scenario,
                    "line": line,
                    "preset": preset,
                    **_scenario(
                        endpoint,
                        bucket,
                        workdir,
                        name,
                        queries,
                        appends,
                        conf,
                        files,
                        python,
                    ),
                }
                if baseline is None:
                    baseline = row
                else:
                    row["vs_baseline"] = _ratios(row, baseline)
                rows.append(row)
    return {
        "latency_ms": LATENCY_MS,
        "files": files,
        "rows_per_file": ROWS_PER_FILE,
        "rows": rows,
    }


def _jobs_cell(row: dict[str, Any]) -> str:
    snapshot = sum(
        n
        for d, n in row.get("spark_jobs_by_description_per_micro_batch", {}).items()
        if "Compute snapshot" in d
    )
    return f"{row['spark_jobs_per_micro_batch']:.1f} ({snapshot:.1f})"


def markdown(section: dict[str, Any]) -> list[str]:
    labels = {"alone": "one query", "two_queries_and_batch": "two queries + a batch writer"}
    lines = [
        "| line | scenario | preset | micro-batches | micro-batch p50 / p95 | Delta write+commit "
        "p50 / p95 | Spark jobs per micro-batch (of which `Compute snapshot`) | S3 requests per "
        "micro-batch | on the checkpoint (by kind) | table log reads | other | vs baseline: "
        "p50, p95, requests | exactly once |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in section.get("rows", []):
        ckpt = row["checkpoint_requests"]["q0"]
        kinds = ", ".join(
            f"{k.removeprefix('s3 ')} {v:.1f}" for k, v in ckpt["by_kind_per_batch"].items()
        )
        ratios = row.get("vs_baseline")
        vs = (
            f"{ratios['micro_batch_s_p50']:.2f}x, {ratios['micro_batch_s_p95']:.2f}x, "
            f"{ratios['requests_per_micro_batch']:.2f}x"
            if ratios
            else "(baseline)"
        )
        lines.append(
            f"| {row['line']} | {labels[row['scenario']]} | {row['preset']} | "
            f"{row['micro_batches']} | {row['micro_batch_s_p50']:.2f} / "
            f"{row['micro_batch_s_p95']:.2f} s | {row['add_batch_s_p50']:.2f} / "
            f"{row['add_batch_s_p95']:.2f} s | {_jobs_cell(row)} | "
            f"{row['requests_per_micro_batch']:.1f} | {ckpt['per_batch']:.1f} ({kinds}) | "
            f"{row['log_reads_per_micro_batch']:.1f} | "
            f"{row['other_requests_per_micro_batch']:.1f} | {vs} | "
            f"{'yes' if row['exactly_once'] else 'NO'} |"
        )
    lines += [
        "",
        "Spark jobs per micro-batch by job description (the query's name: `<query>`):",
        "",
    ]
    lines += [
        "| line | scenario | preset | job description | per micro-batch |",
        "|---|---|---|---|---|",
    ]
    for row in section.get("rows", []):
        for d, n in row.get("spark_jobs_by_description_per_micro_batch", {}).items():
            text = d.replace("\n", " ").replace("|", "/")
            lines.append(
                f"| {row['line']} | {labels[row['scenario']]} | {row['preset']} | `{text}` | "
                f"{n:.2f} |"
            )
    return [*lines, ""]
