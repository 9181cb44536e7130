"""``make bench``: runs the benchmarks on a fresh LocalStack and writes
``bench/results/latest.json``, then ``bench/results/latest.md`` from it (:func:`render`;
``python -m bench --render`` re-renders without measuring)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.localstack_server import LocalStackServer
from deltaguard.logstore.dynamodb_table import create_table
from deltaguard.spark_conf.spark_lines import by_name

from . import (
    audit_depth,
    cli_start,
    commit_latency,
    log_cleanup,
    orphans,
    orphans_engines,
    orphans_synthetic,
    replay,
    snapshot_jobs,
    spark_lines,
    split_listing,
    streaming,
    throughput,
)
from .spark_lines import line_python
from .stats import ratio_cell
from .worker import work_dir

RESULTS = Path(__file__).parent / "results"


def _latency_lines(lat: dict[str, Any]) -> list[str]:
    lines = [
        "| commit latency (1 KiB, LocalStack) | plain PutObject | conditional store | ratio: median of per-run ratios (min-max) |",
        "|---|---|---|---|",
    ]
    for side in ("jvm", "python"):
        s = lat[side]
        lines.append(
            f"| {_SIDE[side]} | {s['plain_put_ms_median']:.2f} ms | "
            f"{s['logstore_ms_median']:.2f} ms | {ratio_cell(s)} |"
        )
    vs = lat.get("dynamodb_vs_conditional")
    if vs:
        lines += [
            "",
            "| commit latency (1 KiB, LocalStack) | conditional store | DynamoDB store | ratio: median of per-run ratios (min-max) |",
            "|---|---|---|---|",
        ]
        for side in ("jvm", "python"):
            s = vs[side]
            lines.append(
                f"| {_SIDE[side]} | {s['logstore_ms_median']:.2f} ms | "
                f"{s['dynamodb_ms_median']:.2f} ms | {ratio_cell(s)} |"
            )
    return [*lines, ""]


_KIND_ABBREV = {
    "s3 HeadObject": "HEAD",
    "s3 ListObjects": "LIST",
    "s3 GetObject": "GET",
    "s3 PutObject": "PUT",
    "s3 CopyObject": "COPY",
    "s3 DeleteObject": "DEL",
    "s3 DeleteObjects": "DELS",
}


def _by_kind(row: dict[str, Any]) -> str:
    """Requests per commit, total then by kind, e.g. ``40.0 (HEAD 19.2, LIST 14.0, ...)``."""
    kinds = sorted(row["by_kind_median"].items(), key=lambda kv: -kv[1])
    parts = [f"{_KIND_ABBREV.get(k, k)} {v:.1f}" for k, v in kinds if v >= 0.05]
    return f"{row['requests_per_commit_median']:.1f} ({', '.join(parts)})"


def _tput_row(label: str, writers: str, r: dict[str, Any]) -> str:
    return (
        f"| {label} | {writers} | {r['commits_per_s_median']:.2f} | "
        f"{r['commit_latency_s_p50']:.2f} / {r['commit_latency_s_p95']:.2f} s | {_by_kind(r)} | "
        f"{r['commit_attempts_per_commit_median']:.2f} | {r['cpu_s_per_append_median']:.2f} s"
    )


def _throughput_baseline(spark: dict[str, Any]) -> str:
    """What the ratios are against: the pre-issue-23 preset where the run measured it, else
    (a run from before issue 23) the pre-issue-15 preset, when "as shipped" had checksums off."""
    from bench.throughput import BASELINE

    if BASELINE in spark["stores"]:
        return "the pre-issue-23 preset (checksums off: the baseline)"
    return (
        "the pre-issue-15 preset (untuned: the baseline of this run, measured before issue 23, "
        "when the preset as shipped still had checksums off)"
    )


def _cpu_share_lines(spark: dict[str, Any]) -> list[str]:
    """Where the CPU went while the Spark drivers appended (bench/cpu_share.py), for the rows
    that measured it."""
    rows = [
        (name, writers, r)
        for name, by_count in spark["stores"].items()
        for writers, r in by_count.items()
        if "machine_busy_share_median" in r
    ]
    if not rows:
        return []
    lines = [
        "Where the CPU went while they appended (from the first append's start to the last "
        "one's end, medians of the runs): the machine's busy share of all its cores, and CPU "
        "seconds per committed version of the writers (their JVMs and Python, with everything "
        "else on the machine), LocalStack and the fault proxy.",
        "",
        "| commit path | drivers | machine busy | writers and the rest | LocalStack | fault proxy |",
        "|---|---|---|---|---|---|",
    ]
    for name, writers, r in rows:
        lines.append(
            f"| {throughput_labels().get(name, name)} | {writers} | "
            f"{r['machine_busy_share_median']:.0%} | "
            f"{r['writers_cpu_s_per_commit_median']:.2f} s | "
            f"{r['localstack_cpu_s_per_commit_median']:.2f} s | "
            f"{r['proxy_cpu_s_per_commit_median']:.2f} s |"
        )
    return [*lines, ""]


def _throughput_lines(tput: dict[str, Any]) -> list[str]:
    """One table for the Spark drivers (with lost commits and ratios against the baseline),
    one for the anchors."""
    lines: list[str] = []
    spark = tput.get("spark")
    if spark and "latency_ms" in spark:
        lines += [
            f"Spark drivers ({_appends_text(spark)}) at {spark['latency_ms']:.0f} ms per S3 "
            "request; lost commits: committed by a writer, in no version (Delta's single-driver "
            "store overwrites a concurrent N.json; counted, not raised). Commit PUTs per "
            "commit: attempts at N.json (1.00: no lost race). CPU: process CPU seconds (JVM + "
            "Python) per append, and Spark jobs per append. Ratios: the median of the per-run "
            f"ratios against {_throughput_baseline(spark)} of the same run, not the ratio of the "
            "medians shown. Scaling: commits/s at N drivers over the same row's 1-driver figure.",
            "",
            "| commit path | drivers | commits/s | commit p50 / p95 | requests per commit (by kind) "
            "| commit PUTs per commit | CPU per append | lost (failed) commits, total | commits/s, requests vs baseline | scaling |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        ratios = spark.get("over_baseline_median", {})
        scaling = spark.get("scaling", {})
        for name, rows in spark["stores"].items():
            label = throughput_labels().get(name, name)
            for writers, r in rows.items():
                ratio = ratios.get(writers, {}).get(name)
                vs = (
                    f"{ratio['commits_per_s']:.2f}x, {ratio['requests_per_commit']:.2f}x"
                    if ratio
                    else "(baseline)"
                )
                lines.append(
                    _tput_row(label, writers, r)
                    + f" ({r['spark_jobs_per_append_median']:.1f} jobs)"
                    + f" | {r['lost_commits_total']} ({r['failed_appends_total']}) | {vs} | "
                    + (f"{scaling[name][writers]:.2f}x" if writers in scaling.get(name, {}) else "")
                    + " |"
                )
        lines += ["", *_cpu_share_lines(spark)]
    anchors = tput.get("anchors")
    if anchors:
        lines += [
            f"Anchors on the same endpoint at {anchors['latency_ms']:.0f} ms per request "
            f"({_appends_text(anchors)}):",
            "",
            "| writers | processes | commits/s | commit p50 / p95 | requests per commit (by kind) "
            "| commit PUTs per commit | CPU per append | appends failed visibly (total) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, rows in anchors["stores"].items():
            label = throughput_labels().get(name, name)
            lines += [
                _tput_row(label, w, r) + f" | {r['failed_appends_total']} |"
                for w, r in rows.items()
            ]
        lines.append("")
    return lines


def _appends_text(section: dict[str, Any]) -> str:
    rows = next(iter(section["stores"].values()))
    return "appends per writer: " + ", ".join(
        f"{r['appends_per_writer']} at {w}" for w, r in rows.items()
    )


def throughput_labels() -> dict[str, str]:
    return {w.name: w.label for w in (*throughput.SPARK_STORES, *throughput.ANCHORS)}


def _orphans_lines(orph: dict[str, Any]) -> list[str]:
    lines = [
        f"Orphan scan: {orph['what']}.",
        "",
        "| storage | deltaguard orphans (wall, scan) | Spark VACUUM DRY RUN | speedup | peak RSS | files found (ours / Spark) |",
        "|---|---|---|---|---|---|",
    ]
    for side, label in (("local", "local disk"), ("localstack", "LocalStack (s3a://)")):
        if side not in orph:
            continue
        s = orph[side]
        lines.append(
            f"| {label} | {s['deltaguard_wall_s_median']:.2f} s ({s['deltaguard_scan_s_median']:.2f} s) | "
            f"{s['spark_vacuum_dry_run_s_median']:.2f} s | {s['speedup_median']:.1f}x | "
            f"{s['deltaguard_peak_rss_mib']:.0f} MiB | {s['files_reported']['deltaguard']} / {s['files_reported']['spark']} |"
        )
    if "localstack_list_request_s" in orph:
        encoded = orph["localstack_list_request_s"]["median"]
        text = (
            f"LocalStack answers one ListObjectsV2 request for one partition in {encoded:.2f} s "
            "with URL-encoded keys (botocore's default)"
        )
        if "localstack_list_request_plain_s" in orph:
            plain = orph["localstack_list_request_plain_s"]["median"]
            text += (
                f" and {plain:.2f} s without (deltaguard's and Spark's requests), alone, at this "
                f"bucket size: listing the table's {orph['partitions'] + 2} directories costs at "
                f"least {orph['localstack']['listing_floor_s']:.0f} s whoever lists it"
            )
        upload = orph["upload"]
        text += (
            f". Upload: {upload['files']} files in {upload['s']:.0f} s "
            f"({upload['puts_per_s']} PUT/s)."
        )
        lines += ["", text]
    return [*lines, ""]


_SIDE = {"jvm": "JVM", "python": "Python"}


def _when(section: dict[str, Any]) -> str:
    """Each section says when it was measured and over how many runs: ``--only`` re-measures
    one section and keeps the others from earlier runs."""
    return f"measured {section.get('measured_at', '?')}, medians of {section.get('runs', '?')} runs"


def markdown(results: dict[str, Any]) -> str:
    lines = [
        f"On {results['machine']}; baselines measured in the same run as what they are compared with.",
        "",
    ]
    if results.get("commit_latency"):
        lines += [f"Commit latency, {_when(results['commit_latency'])}:", ""]
        lines += _latency_lines(results["commit_latency"])
    if results.get("spark_lines"):
        lines += [f"Commit latency per Spark line (JVM), {_when(results['spark_lines'])}:", ""]
        lines += spark_lines.markdown(results["spark_lines"])
    if results.get("throughput"):
        lines += [
            f"Throughput, {_when(results['throughput'])} (Spark drivers: "
            f"{results['throughput'].get('spark_runs', '?')} runs; {results['throughput'].get('load', '')}):",
            "",
        ]
        lines += _throughput_lines(results["throughput"])
    if results.get("orphans"):
        lines += [f"Orphan scan, {_when(results['orphans'])}:", ""]
        lines += _orphans_lines(results["orphans"])
    if results.get("snapshot_jobs", {}).get("rows"):
        lines += [
            f"Spark jobs per append, alone and with another writer's commit before each append "
            f"(one driver on LocalStack through the conditional store, "
            f"{results['snapshot_jobs']['rows'][0]['appends_per_phase']} appends per phase; "
            f"{results['snapshot_jobs'].get('load', '')}), {_when(results['snapshot_jobs'])} "
            "(each row: when it was measured, last column; `--jobs-presets` keeps the others' "
            "earlier rows):",
            "",
        ]
        lines += snapshot_jobs.markdown(results["snapshot_jobs"])
    if results.get("orphans_engines"):
        lines += [f"Orphan scan engines, {_when(results['orphans_engines'])}:", ""]
        lines += orphans_engines.markdown(results["orphans_engines"])
    if results.get("split_listing"):
        sl = results["split_listing"]
        lines += [
            f"Listing one flat S3 prefix, `--engine spark`: one stream and key ranges "
            f"({sl['range_files']:,} files per range; {sl.get('load', '')}), {_when(sl)}:",
            "",
        ]
        lines += split_listing.markdown(sl)
    if results.get("orphans_synthetic"):
        lines += [f"Orphan scan, synthetic inventory, {_when(results['orphans_synthetic'])}:", ""]
        lines += orphans_synthetic.markdown(results["orphans_synthetic"])
    if results.get("streaming"):
        st = results["streaming"]
        lines += [
            f"Streaming micro-batches ({st['files']} of {st['rows_per_file']} rows per query, "
            f"one run, {st['latency_ms']:.0f} ms per S3 request, {st.get('load', '')}), "
            f"{_when(st)}:",
            "",
        ]
        lines += streaming.markdown(st)
    if results.get("audit_depth"):
        ad = results["audit_depth"]
        lines += [
            f"`deltaguard audit` of {ad['files']:,} live files at each depth (one process per "
            f"sample, the depths alternating; {ad.get('load', '')}), {_when(ad)}:",
            "",
        ]
        lines += audit_depth.markdown(ad)
    if results.get("cli_start"):
        lines += cli_start.markdown(results["cli_start"], _when(results["cli_start"]))
    if results.get("log_cleanup"):
        lines += [f"Log cleanup, {_when(results['log_cleanup'])}:", ""]
        lines += log_cleanup.markdown(results["log_cleanup"])
    rep = results.get("replay")
    if rep:
        lines += [
            f"Snapshot replay (load + list live files), deltaguard vs delta-rs {rep.get('delta_rs_version', '')}, "
            f"{_when(rep)}, one process per sample:",
            "",
            "Wall times and peak RSS are medians over the samples; the ratio deltaguard / "
            "delta-rs is the median of the per-sample ratios (each sample runs both sides back "
            "to back), not the ratio of the two medians.",
            "",
            "| table | storage | deltaguard (wall) | delta-rs (wall) "
            "| deltaguard / delta-rs: median of per-sample ratios "
            "| peak RSS deltaguard | peak RSS delta-rs |",
            "|---|---|---|---|---|---|---|",
        ]
        for name in ("many_commits", "many_files"):
            for storage in ("local", "localstack"):
                row = rep[name][storage]
                ours, theirs = row["deltaguard"], row["delta-rs"]
                lines.append(
                    f"| {rep['tables'][name]} | {storage} | {ours['wall_s_median']:.2f} s | "
                    f"{theirs['wall_s_median']:.2f} s | {row['ratio_median']:.2f} | "
                    f"{ours['peak_rss_mib_median']:.0f} MiB | {theirs['peak_rss_mib_median']:.0f} MiB |"
                )
        lines.append("")
    return "\n".join(lines)


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def _appends(
    default: dict[int, int], each: int | None, counts: tuple[int, ...] | None = None
) -> dict[int, int]:
    """Appends per writer by writer count: ``default``, or ``each`` at every count; only the
    writer ``counts`` given (default: all of ``default``'s)."""
    chosen = {k: v for k, v in default.items() if counts is None or k in counts}
    return chosen if each is None else dict.fromkeys(chosen, each)


def _sections(value: str) -> list[str]:
    """``--only``'s value: known section names, comma-separated."""
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in SECTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown section(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(SECTIONS)}"
        )
    return names


def _parser() -> argparse.ArgumentParser:
    """The command line: what to measure (``--only``), how often, and each section's sizes."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--commits", type=int, default=100, help="commit/PUT pairs per latency run")
    parser.add_argument(
        "--python-appends",
        type=int,
        help="appends per anchor writer process at every writer count "
        f"(default: {throughput.ANCHOR_APPENDS} by writers)",
    )
    parser.add_argument(
        "--spark-appends",
        type=int,
        help=f"appends per Spark driver at every driver count (default: {throughput.SPARK_APPENDS})",
    )
    parser.add_argument(
        "--writer-counts",
        help="throughput: only these writer counts (comma-separated, e.g. 8); the other "
        "counts' rows of the previous results are kept",
    )
    parser.add_argument("--tput-runs", type=int, default=3, help="runs per anchor point")
    parser.add_argument("--spark-runs", type=int, default=3)
    parser.add_argument(
        "--line-race-appends",
        type=int,
        default=10,
        help="appends per driver in each Spark line's staged race (0: no race)",
    )
    parser.add_argument(
        "--line-race-drivers",
        type=int,
        default=4,
        help="Spark drivers in each Spark line's staged race",
    )

    parser.add_argument(
        "--orphan-files", type=int, default=200_000, help="files in the orphan-scan table"
    )
    parser.add_argument("--replay-runs", type=int, default=3)
    parser.add_argument(
        "--split-files",
        type=int,
        default=100_000,
        help="split_listing: objects in the flat prefix (versitygw)",
    )
    parser.add_argument("--split-runs", type=int, default=3, help="split_listing: runs")
    parser.add_argument(
        "--jobs-appends", type=int, default=6, help="snapshot_jobs: appends per phase (mean)"
    )
    parser.add_argument(
        "--jobs-presets",
        default=",".join(snapshot_jobs.PRESETS),
        help="snapshot_jobs: only the rows of these presets (comma-separated, of: "
        f"{', '.join(snapshot_jobs.PRESETS)}); the other rows are kept from the latest results",
    )
    parser.add_argument(
        "--engine-sizes",
        default="200000,1000000",
        help="orphans_engines: table sizes every engine scans (comma-separated)",
    )
    parser.add_argument(
        "--engine-spark-only-sizes",
        default="4000000",
        help="orphans_engines: table sizes only the Spark engine scans",
    )
    parser.add_argument("--engine-runs", type=int, default=3)
    parser.add_argument(
        "--engine-only",
        default=",".join(orphans_engines.ENGINES),
        help="orphans_engines: the engines to run (comma-separated: local, spark, vacuum); "
        "the other engines' rows of the previous results are kept",
    )
    parser.add_argument(
        "--engine-tables",
        type=Path,
        default=None,
        help="orphans_engines and orphans_synthetic: a directory where the bench tables "
        "(and their inventories) are built once and reused (default: built and deleted in "
        "each run)",
    )
    parser.add_argument(
        "--synthetic-sizes",
        default="10000000",
        help="orphans_synthetic: table sizes scanned with --inventory from a synthetic "
        "inventory, no data files on disk (comma-separated; one run each)",
    )
    parser.add_argument(
        "--engine-spark-only-runs",
        type=int,
        default=1,
        help="orphans_engines: runs at the Spark-only sizes (one 4M-file run takes minutes)",
    )
    parser.add_argument(
        "--audit-files",
        type=int,
        default=5000,
        help="audit_depth: live files of the audited table",
    )
    parser.add_argument(
        "--audit-runs", type=int, default=3, help="audit_depth: samples of each depth"
    )
    parser.add_argument(
        "--cli-runs", type=int, default=9, help="cli_start: samples of each command"
    )
    parser.add_argument(
        "--log-commits",
        type=int,
        default=100_000,
        help="log_cleanup: commits of the never-cleaned log on local disk",
    )
    parser.add_argument(
        "--log-commits-localstack",
        type=int,
        default=100_000,
        help="log_cleanup: commits of the never-cleaned log on LocalStack",
    )
    parser.add_argument(
        "--only",
        type=_sections,
        help=f"only these sections, comma-separated, in one run (of: {', '.join(SECTIONS)}); "
        "the other sections' latest results are kept",
    )
    parser.add_argument(
        "--render",
        action="store_true",
        help="measure nothing: rewrite latest.md from latest.json (after a merge of results "
        "or a change of this renderer)",
    )
    return parser


def _stamped(section: dict[str, Any], runs: int, **params: Any) -> dict[str, Any]:
    """A section's results with when they were measured and how many runs each figure has."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    return {"measured_at": now, "runs": runs, **params, **section}


@dataclass(frozen=True)
class _Bench:
    """What every section runs against: the parsed options, one LocalStack (its endpoint, a
    bucket and a DynamoDB commit table, its process), a scratch directory, and the results so
    far (each section adds its own key; a long section also writes them part way)."""

    args: argparse.Namespace
    endpoint: Endpoint
    bucket: str
    ddb_table: str
    workdir: Path
    results: dict[str, Any]
    localstack_pid: int


def _measure_latency(b: _Bench) -> None:
    a = b.args
    b.results["commit_latency"] = _stamped(
        commit_latency.run(b.endpoint, b.bucket, a.runs, a.commits, b.ddb_table), a.runs
    )


def _measure_lines(b: _Bench) -> None:
    a = b.args
    b.results["spark_lines"] = _stamped(
        spark_lines.run(
            b.endpoint,
            b.bucket,
            a.runs,
            a.commits,
            b.workdir,
            race_drivers=a.line_race_drivers,
            race_appends=a.line_race_appends,
        ),
        a.runs,
    )


def _measure_throughput(b: _Bench) -> None:
    """The anchors' rows, then the Spark drivers' rows; each part is written as it finishes,
    and a run of some ``--writer-counts`` keeps the other counts' earlier rows."""
    a, results = b.args, b.results
    load_before = os.getloadavg()
    section: dict[str, Any] = {
        "what": "data commits per second from the common start (a barrier after "
        "every writer started and warmed) to the last append's end, the commit "
        "call's latency, and every request the writers made per committed version, "
        f"each request delayed {throughput.LATENCY_MS:.0f} ms by the fault proxy",
    }
    counts = _sizes(a.writer_counts) if a.writer_counts else None
    earlier = results.get("throughput", {}) if counts else {}

    def keep(part: str, partial: dict[str, Any]) -> None:
        load = os.getloadavg()
        section[part] = throughput.merge_counts(earlier.get(part, {}), partial)
        section["load"] = (
            f"load average {load_before[0]:.1f} at the start, {load[0]:.1f} at the "
            f"end (15 min: {load[2]:.1f}) on {os.cpu_count()} cores, shared"
        )
        if counts:
            section["load"] = (
                f"writer counts {a.writer_counts} measured "
                f"{datetime.now(UTC).isoformat(timespec='minutes')}, "
                f"{section['load']}; the others {earlier.get('measured_at', '?')}, "
                f"{earlier.get('load', '')}"
            )
        results["throughput"] = _stamped(dict(section), a.tput_runs, spark_runs=a.spark_runs)
        _write(results)

    throughput.run(
        b.endpoint,
        b.bucket,
        throughput.ANCHORS,
        a.tput_runs,
        _appends(throughput.ANCHOR_APPENDS, a.python_appends, counts),
        b.workdir,
        b.localstack_pid,
        on_progress=lambda p: keep("anchors", p),
    )
    throughput.run(
        b.endpoint,
        b.bucket,
        throughput.SPARK_STORES,
        a.spark_runs,
        _appends(throughput.SPARK_APPENDS, a.spark_appends, counts),
        b.workdir,
        b.localstack_pid,
        on_progress=lambda p: keep("spark", p),
    )


def _measure_snapshot_jobs(b: _Bench) -> None:
    pythons = {name: line_python(by_name(name)) for name in snapshot_jobs.ROWS}
    b.results["snapshot_jobs"] = _stamped(
        snapshot_jobs.run(
            b.endpoint,
            b.bucket,
            b.workdir,
            pythons,
            b.args.jobs_appends,
            presets=tuple(p for p in b.args.jobs_presets.split(",") if p),
            earlier=b.results.get("snapshot_jobs"),
        ),
        1,
        load=f"load average {os.getloadavg()[0]:.1f} at the end",
    )


def _measure_orphans(b: _Bench) -> None:
    a = b.args
    b.results["orphans"] = _stamped(
        orphans.run(b.endpoint, b.bucket, b.workdir, a.orphan_files, a.runs, a.spark_runs),
        a.runs,
        spark_runs=a.spark_runs,
    )


def _measure_orphans_engines(b: _Bench) -> None:
    a = b.args
    b.results["orphans_engines"] = _stamped(
        orphans_engines.merge_sizes(
            b.results.get("orphans_engines", {}),
            orphans_engines.run(
                b.workdir,
                _sizes(a.engine_sizes),
                _sizes(a.engine_spark_only_sizes),
                a.engine_runs,
                a.engine_spark_only_runs,
                only=tuple(e for e in a.engine_only.split(",") if e),
                tables=a.engine_tables,
            ),
        ),
        a.engine_runs,
        spark_only_runs=a.engine_spark_only_runs,
    )


def _measure_orphans_synthetic(b: _Bench) -> None:
    """One run per ``--synthetic-sizes`` size; the sizes it does not measure are kept from the
    earlier results (:func:`orphans_engines.merge_sizes`)."""
    b.results["orphans_synthetic"] = _stamped(
        orphans_engines.merge_sizes(
            b.results.get("orphans_synthetic", {}),
            orphans_synthetic.run(b.workdir, _sizes(b.args.synthetic_sizes), b.args.engine_tables),
        ),
        1,
    )


def _measure_split_listing(b: _Bench) -> None:
    a = b.args
    b.results["split_listing"] = _stamped(
        split_listing.run(b.workdir, a.split_files, a.split_runs), a.split_runs
    )


def _measure_streaming(b: _Bench) -> None:
    load = os.getloadavg()
    b.results["streaming"] = _stamped(
        streaming.run(b.endpoint, b.bucket, b.workdir),
        1,
        load=f"load average {load[0]:.1f} at the start on {os.cpu_count()} cores",
    )


def _measure_replay(b: _Bench) -> None:
    from importlib.metadata import version

    b.results["replay"] = {
        "runs": b.args.replay_runs,
        "delta_rs_version": version("deltalake"),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **replay.run(b.endpoint, b.bucket, b.args.replay_runs),
    }


def _measure_audit_depth(b: _Bench) -> None:
    a = b.args
    b.results["audit_depth"] = _stamped(
        audit_depth.run(b.endpoint, b.bucket, a.audit_runs, a.audit_files), a.audit_runs
    )


def _measure_cli_start(b: _Bench) -> None:
    b.results["cli_start"] = _stamped(cli_start.run(b.args.cli_runs), b.args.cli_runs)


def _measure_log_cleanup(b: _Bench) -> None:
    a = b.args
    b.results["log_cleanup"] = _stamped(
        log_cleanup.run(b.endpoint, b.bucket, a.log_commits, a.log_commits_localstack), 1
    )


#: Each section's measurement, by the name ``--only`` takes, in the order a full run measures
#: them.
MEASURE: dict[str, Callable[[_Bench], None]] = {
    "latency": _measure_latency,
    "spark_lines": _measure_lines,
    "throughput": _measure_throughput,
    "snapshot_jobs": _measure_snapshot_jobs,
    "orphans": _measure_orphans,
    "orphans_engines": _measure_orphans_engines,
    "orphans_synthetic": _measure_orphans_synthetic,
    "split_listing": _measure_split_listing,
    "streaming": _measure_streaming,
    "replay": _measure_replay,
    "audit_depth": _measure_audit_depth,
    "log_cleanup": _measure_log_cleanup,
    "cli_start": _measure_cli_start,
}

#: The sections ``--only`` chooses from.
SECTIONS = tuple(MEASURE)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.render:
        render()
        return 0
    started = time.monotonic()
    previous = RESULTS / "latest.json"
    # A partial run (--only) keeps the other benchmarks' latest results.
    kept = json.loads(previous.read_text()) if args.only and previous.exists() else {}
    results: dict[str, Any] = {
        **kept,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    with (
        work_dir("deltaguard-bench-") as workdir,
        LocalStackServer(workdir / "localstack") as localstack,
    ):
        assert localstack.server is not None  # started by the with
        bench = _Bench(
            args,
            localstack.endpoint,
            "deltaguard-bench",
            "deltaguard-bench-commits",
            workdir,
            results,
            localstack.server.pid,
        )
        bench.endpoint.s3_client().create_bucket(Bucket=bench.bucket)
        create_table(bench.endpoint.dynamodb_client(), bench.ddb_table)
        for name in SECTIONS:
            if args.only is None or name in args.only:
                MEASURE[name](bench)
    results[f"wall_s_{'_and_'.join(args.only) if args.only else 'all'}"] = round(
        time.monotonic() - started, 1
    )
    _write(results)
    sys.stdout.write(markdown(results) + "\n")
    return 0


def _write(results: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps(results, indent=2) + "\n")
    render()


def render(results_dir: Path = RESULTS) -> str:
    """Writes ``latest.md`` from ``latest.json`` and returns it: the markdown is a function of
    the JSON alone (nothing is measured, read or timed here), so
    ``tests/test_bench_results.py`` can regenerate it and find no difference."""
    text = markdown(json.loads((results_dir / "latest.json").read_text())) + "\n"
    (results_dir / "latest.md").write_text(text)
    return text


if __name__ == "__main__":
    sys.exit(main())
