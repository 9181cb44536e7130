"""Committed versions per second on one table with 1, 4 and 8 concurrent writers, at a
realistic S3 round trip: every request the writers make passes the fault proxy with a fixed
delay (:data:`LATENCY_MS` per request) on its way to LocalStack.

Spark drivers, one JVM each (:func:`deltaguard.localstack.multi_driver.run_multi_driver`), for
three commit paths (:data:`SPARK_STORES`): Delta's own ``S3SingleDriverLogStore`` with default
settings (it loses commits with more than one driver: they are counted, not raised), the
conditional store with the pre-issue-15 preset (:func:`untuned_conditional_conf`), with the
pre-issue-23 preset (:func:`baseline_conditional_conf`, the baseline: checksums off) and with
the ``s3-conditional`` preset as shipped (checksums on, written with one PUT). Per writer count
the rows report commits/s and the commit call's p50/p95; ``scaling`` is each row's commits/s
at N writers over its 1-writer figure in the same run (issue 23: 4 drivers >= 1). Anchors on the same endpoint with
the same delay (:data:`ANCHORS`): deltaguard's Python writer and delta-rs writers.

The runs of one point (commit path, writer count) are rounds of the same writer processes,
each round on a fresh table: a JVM start per point, not per run, keeps the section near 25
minutes on 2 cores. Every round starts behind a barrier: writers start and warm up (what a
Spark driver does before it is ready: :mod:`deltaguard.localstack.append_job`, "Start
barrier"), then all start appending at once; commits/s is
the data commits found over the span from that start to the last append's end, and the proxy's
request counts run from that start to the next round's (so JVM start-up is in neither). Per
append, the writer times its commit call (p50/p95 pooled over the runs' appends) and its
process CPU seconds. Ratios are per run (round i against round i) against the baseline of the
same bench run. The verification (delta-rs, reading LocalStack directly) is not counted. Where
the CPU went during each round's appending span (:mod:`bench.cpu_share`): the machine's busy
share of its cores, and CPU seconds per commit of LocalStack, the fault proxy and the rest
(the writers), so a figure that does not grow with writers can say whether CPU was short.
"""

from __future__ import annotations

import os
import statistics
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.fault_proxy import FaultProxy, FaultRule
from deltaguard.localstack.multi_driver import MultiDriverResult, run_multi_driver_rounds
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.request_tuning import checksums_off_conf, untuned_conf
from deltaguard.spark_conf.session import delta_conf
from deltaguard.spark_conf.spark_lines import installed_line

from .cpu_share import CpuSampler
from .stats import percentile
from .worker import work_dir

#: The delay the proxy adds to every request: a real S3 round trip is 10-50 ms.
LATENCY_MS = 20.0
#: Appends per Spark driver, by drivers: 16 versions per round at every driver count, so every
#: round crosses the checkpoint Delta writes at version 10 (``delta.checkpointInterval``), as a
#: writer's steady state does once in 10 versions. A checkpoint append costs about ten plain
#: ones, and while its driver rebuilds the state the other drivers' commits find no checksum
#: to derive theirs from (docs/design/logstore.md, "The checkpoint version under contention").
#: Rounds of 4 or 8 versions, as before, never saw it.
SPARK_APPENDS = {1: 16, 4: 4, 8: 2}
#: Appends per anchor writer process, by writers (an anchor append takes well under a second).
ANCHOR_APPENDS = {1: 10, 4: 5, 8: 3}
BASELINE = "s3-conditional-checksums-off"


def untuned_conditional_conf(endpoint: Endpoint) -> dict[str, str]:
    """The pre-issue-15 ``s3-conditional`` preset: the shipped preset with the request-saving
    settings of :mod:`deltaguard.spark_conf.request_tuning` put back to Hadoop's and Delta's
    defaults (``untuned_conf``), for the installed line. The plugin jar is the one under test:
    changes inside the store apply to every row."""
    line = installed_line()
    return {
        **delta_conf(endpoint.s3_storage(), PresetName.S3_CONDITIONAL, line=line),
        **untuned_conf(line),
    }


def baseline_conditional_conf(endpoint: Endpoint) -> dict[str, str]:
    """The pre-issue-23 ``s3-conditional`` preset, the BASELINE of the Spark rows: the shipped
    preset with checksums off and Spark's rename-based file manager (``checksums_off_conf``)."""
    line = installed_line()
    return {
        **delta_conf(endpoint.s3_storage(), PresetName.S3_CONDITIONAL, line=line),
        **checksums_off_conf(line),
    }


@dataclass(frozen=True)
class Writers:
    """One row of a table: who commits (engine) through which commit path."""

    name: str  # the JSON key
    label: str  # the markdown row
    engine: str  # append_job's --engine
    preset: PresetName
    conf: Callable[[Endpoint], dict[str, str]] | None = None  # replaces the preset's settings


SPARK_STORES = (
    Writers(
        "s3-single-driver",
        "Delta S3SingleDriverLogStore, defaults (unsafe with >1 driver: loses commits)",
        "spark",
        PresetName.S3_SINGLE_DRIVER,
    ),
    Writers(
        "s3-conditional-baseline",
        "conditional store, pre-issue-15 preset (untuned)",
        "spark",
        PresetName.S3_CONDITIONAL,
        untuned_conditional_conf,
    ),
    Writers(
        BASELINE,
        "conditional store, pre-issue-23 preset: checksums off (baseline)",
        "spark",
        PresetName.S3_CONDITIONAL,
        baseline_conditional_conf,
    ),
    Writers(
        "s3-conditional",
        "conditional store, s3-conditional preset as shipped",
        "spark",
        PresetName.S3_CONDITIONAL,
    ),
)
ANCHORS = (
    Writers(
        "deltaguard-python",
        "deltaguard Python writer (conditional store)",
        "python",
        PresetName.S3_CONDITIONAL,
    ),
    Writers("delta-rs", "delta-rs (conditional PUT)", "delta-rs", PresetName.S3_CONDITIONAL),
)


#: Counts (never alters: a zero delay) every PUT of a commit file ``_delta_log/<v>.json``: one
#: per commit attempt, whatever the store, so attempts per commit - 1 is the lost races per
#: commit (the stores' one-off probe of If-None-Match writes another key and is not counted).
COMMIT_PUTS = FaultRule("delay", method="PUT", path_regex=r"_delta_log/\d{20}\.json$")


def _commit_puts(stats: dict[str, Any]) -> int:
    return int(stats["rules"][0]["matched"])


def _samples(
    endpoint: Endpoint,
    proxy: FaultProxy,
    bucket: str,
    who: Writers,
    writers: int,
    appends: int,
    runs: int,
    cpu: CpuSampler,
) -> list[dict[str, Any]]:
    """``runs`` runs of ``writers`` writers, as rounds of the same writer processes (one JVM
    start per point instead of per run), each round on a fresh table behind a start barrier;
    requests are counted from one round's start to the next one's (the last: to the exit);
    CPU (``cpu``) over each round's appending span."""
    with work_dir("deltaguard-bench-") as workdir:
        marks: list[dict[str, Any]] = []
        results: list[MultiDriverResult] = run_multi_driver_rounds(
            f"s3a://{bucket}/tput-{who.name}-{writers}-{uuid.uuid4().hex[:6]}",
            writer_endpoint_url=proxy.endpoint.url,
            reader_endpoint_url=endpoint.url,
            logstore=who.preset,
            writers=writers if who.engine == "spark" else 0,
            python_writers=writers if who.engine == "python" else 0,
            deltars_writers=writers if who.engine == "delta-rs" else 0,
            appends=appends,
            workdir=workdir,
            spark_conf=who.conf(proxy.endpoint) if who.conf else None,
            start_together=True,
            on_all_ready=lambda: marks.append(proxy.stats()),
            rounds=runs,
            verify_with_deltars=True,
        )
    marks.append(proxy.stats())
    return [
        {**_sample(who, r, marks[i], marks[i + 1]), **_cpu_share(cpu, r)}
        for i, r in enumerate(results)
    ]


def _cpu_share(cpu: CpuSampler, result: MultiDriverResult) -> dict[str, Any]:
    """Where the CPU went while the round's writers appended (from the first append's start
    to the last one's end): the machine's busy share of all its cores, and CPU seconds per
    committed version of LocalStack, the fault proxy and everything else (the writers, their
    JVMs' compiler and GC threads, this process)."""
    start, end = result.append_span
    used = cpu.used(start, end)
    commits = max(1, len(result.found_tags))
    servers = used["localstack"] + used["proxy"]
    return {
        "machine_busy_share": used["machine"] / ((end - start) * (os.cpu_count() or 1)),
        "localstack_cpu_s_per_commit": used["localstack"] / commits,
        "proxy_cpu_s_per_commit": used["proxy"] / commits,
        "writers_cpu_s_per_commit": max(0.0, used["machine"] - servers) / commits,
    }


def _sample(
    who: Writers, result: MultiDriverResult, start: dict[str, Any], end: dict[str, Any]
) -> dict[str, Any]:
    """One run's numbers; raises AssertionError if a multi-writer commit path lost or
    duplicated a commit (the single-driver store's losses are counted instead). Appends that
    failed visibly (a writer giving up after its retries) are counted, not raised."""
    unsafe = who.preset is PresetName.S3_SINGLE_DRIVER
    if result.duplicated_tags or (not unsafe and result.lost_tags):
        raise AssertionError(f"{who.name}: commits lost or duplicated: {result.summary()}")
    commits = len(result.found_tags)
    before = start["by_kind"]
    by_kind = {
        k: (n - before.get(k, 0)) / commits
        for k, n in end["by_kind"].items()
        if n != before.get(k, 0)
    }
    attempts = _commit_puts(end) - _commit_puts(start)
    return {
        "commits_per_s": result.commits_per_second,
        "commits": commits,
        "lost_commits": len(result.lost_tags),
        "failed_appends": len(result.failed_appends),
        "requests_per_commit": sum(by_kind.values()),
        "s3_requests_per_commit": sum(v for k, v in by_kind.items() if k.startswith("s3 ")),
        "by_kind": by_kind,
        "commit_attempts_per_commit": attempts / commits,
        "rejected_puts_per_commit": {
            k: (n - start["by_kind_status"].get(k, 0)) / commits
            for k, n in end["by_kind_status"].items()
            if k.startswith("s3 PutObject ") and n != start["by_kind_status"].get(k, 0)
        },
        "commit_call_s": result.commit_call_s,
        "cpu_s_per_append": statistics.median(result.append_cpu_s_per_append),
        "startup_s": statistics.median(r["startup_s"] for r in result.reports),
        "spark_jobs_per_append": statistics.median(result.spark_jobs_per_append or [0.0]),
    }


#: The per-run figures of :func:`_cpu_share`.
CPU_SHARE_KEYS = (
    "machine_busy_share",
    "localstack_cpu_s_per_commit",
    "proxy_cpu_s_per_commit",
    "writers_cpu_s_per_commit",
)


def _row(samples: list[dict[str, Any]], appends: int) -> dict[str, Any]:
    kinds = sorted({k for x in samples for k in x["by_kind"]})
    calls = [t for x in samples for t in x["commit_call_s"]]

    def med(key: str) -> float:
        return float(statistics.median(x[key] for x in samples))

    return {
        "commits_per_s_median": med("commits_per_s"),
        "commit_latency_s_p50": percentile(calls, 50),
        "commit_latency_s_p95": percentile(calls, 95),
        "requests_per_commit_median": med("requests_per_commit"),
        "s3_requests_per_commit_median": med("s3_requests_per_commit"),
        "by_kind_median": {
            k: statistics.median(x["by_kind"].get(k, 0.0) for x in samples) for k in kinds
        },
        "lost_commits_median": med("lost_commits"),
        "lost_commits_total": sum(x["lost_commits"] for x in samples),
        "failed_appends_total": sum(x["failed_appends"] for x in samples),
        "commits_found_median": med("commits"),
        "commit_attempts_per_commit_median": med("commit_attempts_per_commit"),
        "cpu_s_per_append_median": med("cpu_s_per_append"),
        "startup_s_median": med("startup_s"),
        "spark_jobs_per_append_median": med("spark_jobs_per_append"),
        **{f"{key}_median": med(key) for key in CPU_SHARE_KEYS},
        "appends_per_writer": appends,
        "runs": [round(x["commits_per_s"], 3) for x in samples],
    }


def run(
    endpoint: Endpoint,
    bucket: str,
    group: tuple[Writers, ...],
    runs: int,
    appends: dict[int, int],
    workdir: Path,
    localstack_pid: int,
    latency_ms: float = LATENCY_MS,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Per commit path (``group``) and writer count (the keys of ``appends``): medians over
    ``runs`` runs of ``appends[writers]`` appends per writer (commits/s, requests per committed version, in total and by kind, lost
    races and lost commits, CPU seconds per append) and the commit call's p50/p95 over all the
    runs' appends. With the baseline in ``group``: per writer count, the median of the per-run
    ratios against it (commits/s and requests per commit). ``on_progress(partial)``: after
    each writer count, what is measured so far (a long run keeps its results).
    ``localstack_pid``: the server's process, whose CPU is reported apart (:func:`_cpu_share`)."""
    rows: dict[str, Any] = {who.name: {} for who in group}
    ratios: dict[str, Any] = {}
    with (
        FaultProxy(endpoint, workdir, latency_ms=latency_ms) as proxy,
        CpuSampler({"localstack": localstack_pid, "proxy": _pid(proxy)}) as cpu,
    ):
        proxy.set_rules([COMMIT_PUTS])
        for writers, each in appends.items():
            samples = {
                who.name: _samples(endpoint, proxy, bucket, who, writers, each, runs, cpu)
                for who in group
            }
            for who in group:
                rows[who.name][str(writers)] = _row(samples[who.name], each)
            if BASELINE in samples:
                base = samples[BASELINE]
                ratios[str(writers)] = {
                    who.name: {
                        key: statistics.median(
                            s[key] / b[key] for s, b in zip(samples[who.name], base, strict=True)
                        )
                        for key in ("commits_per_s", "requests_per_commit")
                    }
                    for who in group
                    if who.name != BASELINE
                }
            if on_progress is not None:
                on_progress(_section(latency_ms, rows, ratios))
    return _section(latency_ms, rows, ratios)


def _pid(proxy: FaultProxy) -> int:
    if proxy.server is None:
        raise RuntimeError("the fault proxy is not running")
    return proxy.server.pid


def _scaling(rows: dict[str, Any]) -> dict[str, Any]:
    """Per row: commits/s (median) at each writer count over the row's 1-writer figure."""
    out: dict[str, Any] = {}
    for name, by_count in rows.items():
        one = by_count.get("1", {}).get("commits_per_s_median")
        if one:
            out[name] = {
                n: row["commits_per_s_median"] / one for n, row in by_count.items() if n != "1"
            }
    return out


def merge_counts(earlier: dict[str, Any], section: dict[str, Any]) -> dict[str, Any]:
    """``section`` (a run of some writer counts) with the rows and ratios of ``earlier`` (a
    previous run's section of the same group) at the writer counts it did not measure."""
    merged = dict(section)
    for key in ("stores", "over_baseline_median"):
        if key not in earlier:
            continue
        if key == "stores":
            merged[key] = {
                name: _by_count({**earlier[key].get(name, {}), **rows})
                for name, rows in section.get(key, {}).items()
            }
        else:
            merged[key] = _by_count({**earlier[key], **section.get(key, {})})
    merged["scaling"] = _scaling(merged.get("stores", {}))
    return merged


def _by_count(rows: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(rows.items(), key=lambda kv: int(kv[0])))


def _section(latency_ms: float, rows: dict[str, Any], ratios: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"latency_ms": latency_ms, "stores": rows, "scaling": _scaling(rows)}
    if ratios:
        out["over_baseline_median"] = ratios
    return out
