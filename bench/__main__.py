"""``make bench``: runs the benchmarks on a fresh LocalStack and writes
``bench/results/latest.json`` and ``bench/results/latest.md``."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from deltaguard.localstack.localstack_server import LocalStackServer
from deltaguard.logstore.dynamodb_table import create_table

from . import commit_latency, orphans, orphans_engines, replay, spark_lines, throughput

RESULTS = Path(__file__).parent / "results"


def _latency_lines(lat: dict[str, Any]) -> list[str]:
    lines = [
        "| commit latency (1 KiB, LocalStack) | plain PutObject | conditional store | ratio (median, min-max) |",
        "|---|---|---|---|",
    ]
    for side in ("jvm", "python"):
        s = lat[side]
        lines.append(
            f"| {_SIDE[side]} | {s['plain_put_ms_median']:.2f} ms | "
            f"{s['logstore_ms_median']:.2f} ms | {_ratio(s)} |"
        )
    vs = lat.get("dynamodb_vs_conditional")
    if vs:
        lines += [
            "",
            "| commit latency (1 KiB, LocalStack) | conditional store | DynamoDB store | ratio (median, min-max) |",
            "|---|---|---|---|",
        ]
        for side in ("jvm", "python"):
            s = vs[side]
            lines.append(
                f"| {_SIDE[side]} | {s['logstore_ms_median']:.2f} ms | "
                f"{s['dynamodb_ms_median']:.2f} ms | {_ratio(s)} |"
            )
    return [*lines, ""]


def _throughput_lines(tput: dict[str, Any]) -> list[str]:
    lines = [
        "| commits/s on one table (requests per commit: S3 + DynamoDB) | store | "
        + " | ".join(f"{c} writer{'s' if c != '1' else ''}" for c in _writer_counts(tput))
        + " |",
        "|---|---|" + "---|" * len(_writer_counts(tput)),
    ]
    for engine, label in (("python", "Python writers"), ("spark", "Spark drivers")):
        if engine not in tput:
            continue
        stores = tput[engine]["stores"]
        counts = list(next(iter(stores.values())).keys())
        appends = next(iter(stores.values()))[counts[0]]["appends_per_writer"]
        for store, rows in stores.items():
            cells = [
                f"{r['commits_per_s_median']:.2f} ({r['s3_requests_per_commit_median']:.1f} + "
                f"{r['dynamodb_requests_per_commit_median']:.1f})"
                for r in (rows[c] for c in counts)
            ]
            lines.append(
                f"| {label} ({appends} appends each) | {store} | " + " | ".join(cells) + " |"
            )
        ratio = tput[engine]["commits_per_s_ratio"]
        lines.append(
            f"| {label}: DynamoDB / conditional commits/s | ratio (min-max) | "
            + " | ".join(
                f"{ratio[c]['dynamodb_over_conditional_median']:.2f} ({ratio[c]['min']:.2f}-{ratio[c]['max']:.2f})"
                for c in counts
            )
            + " |"
        )
    return [*lines, ""]


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
                f"bucket size: listing the table's {orphans.PARTITIONS + 2} directories costs at "
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


def _ratio(s: dict[str, Any]) -> str:
    return f"{s['ratio_median']:.2f} ({s['ratio_min']:.2f}-{s['ratio_max']:.2f})"


def _writer_counts(tput: dict[str, Any]) -> list[str]:
    engine = next(e for e in ("python", "spark") if e in tput)
    return list(next(iter(tput[engine]["stores"].values())).keys())


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
            f"Throughput, {_when(results['throughput'])} (Spark drivers: {results['throughput'].get('spark_runs', '?')}):",
            "",
        ]
        lines += _throughput_lines(results["throughput"])
    if results.get("orphans"):
        lines += [f"Orphan scan, {_when(results['orphans'])}:", ""]
        lines += _orphans_lines(results["orphans"])
    if results.get("orphans_engines"):
        lines += [f"Orphan scan engines, {_when(results['orphans_engines'])}:", ""]
        lines += orphans_engines.markdown(results["orphans_engines"])
    rep = results.get("replay")
    if rep:
        lines += [
            f"Snapshot replay (load + list live files), deltaguard vs delta-rs {rep.get('delta_rs_version', '')}, "
            f"{_when(rep)}, one process per sample:",
            "",
            "| table | storage | deltaguard | delta-rs | ratio | peak RSS deltaguard | peak RSS delta-rs |",
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--commits", type=int, default=100, help="commit/PUT pairs per latency run")
    parser.add_argument("--python-appends", type=int, default=25)
    parser.add_argument("--spark-appends", type=int, default=5)
    parser.add_argument("--tput-runs", type=int, default=3, help="runs per Python throughput point")
    parser.add_argument("--spark-runs", type=int, default=3)
    parser.add_argument(
        "--line-race-appends",
        type=int,
        default=10,
        help="appends per driver in each Spark line's staged race (4 drivers; 0: no race)",
    )

    parser.add_argument(
        "--orphan-files", type=int, default=200_000, help="files in the orphan-scan table"
    )
    parser.add_argument("--replay-runs", type=int, default=3)
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
        "--engine-spark-only-runs",
        type=int,
        default=1,
        help="orphans_engines: runs at the Spark-only sizes (one 4M-file run takes minutes)",
    )
    parser.add_argument(
        "--only",
        choices=["latency", "lines", "throughput", "replay", "orphans", "orphans_engines"],
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    previous = RESULTS / "latest.json"
    # A partial run (--only) keeps the other benchmarks' latest results.
    kept = json.loads(previous.read_text()) if args.only and previous.exists() else {}
    results: dict[str, Any] = {
        **kept,
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores, Python {platform.python_version()}",
    }

    def stamped(section: dict[str, Any], runs: int, **params: Any) -> dict[str, Any]:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        return {"measured_at": now, "runs": runs, **params, **section}

    workdir = Path(tempfile.mkdtemp(prefix="deltaguard-bench-"))
    with LocalStackServer(workdir / "localstack") as localstack:
        endpoint = localstack.endpoint
        bucket, ddb_table = "deltaguard-bench", "deltaguard-bench-commits"
        endpoint.s3_client().create_bucket(Bucket=bucket)
        create_table(endpoint.dynamodb_client(), ddb_table)
        if args.only in (None, "latency"):
            results["commit_latency"] = stamped(
                commit_latency.run(endpoint, bucket, args.runs, args.commits, ddb_table), args.runs
            )
        if args.only in (None, "lines"):
            results["spark_lines"] = stamped(
                spark_lines.run(
                    endpoint,
                    bucket,
                    args.runs,
                    args.commits,
                    workdir,
                    race_appends=args.line_race_appends,
                ),
                args.runs,
            )
        if args.only in (None, "throughput"):
            results["throughput"] = stamped(
                {
                    "what": "data commits per second, from the first append's start to the last "
                    "one's end, and every request the writers made per committed version",
                    "python": throughput.run(
                        endpoint,
                        bucket,
                        "python",
                        args.tput_runs,
                        args.python_appends,
                        ddb_table,
                        workdir,
                    ),
                    "spark": throughput.run(
                        endpoint,
                        bucket,
                        "spark",
                        args.spark_runs,
                        args.spark_appends,
                        ddb_table,
                        workdir,
                    ),
                },
                args.tput_runs,
                spark_runs=args.spark_runs,
            )
        if args.only in (None, "orphans"):
            results["orphans"] = stamped(
                orphans.run(
                    endpoint, bucket, workdir, args.orphan_files, args.runs, args.spark_runs
                ),
                args.runs,
                spark_runs=args.spark_runs,
            )
        if args.only in (None, "orphans_engines"):
            results["orphans_engines"] = stamped(
                orphans_engines.merge_sizes(
                    results.get("orphans_engines", {}),
                    orphans_engines.run(
                        workdir,
                        _sizes(args.engine_sizes),
                        _sizes(args.engine_spark_only_sizes),
                        args.engine_runs,
                        args.engine_spark_only_runs,
                    ),
                ),
                args.engine_runs,
                spark_only_runs=args.engine_spark_only_runs,
            )
        if args.only in (None, "replay"):
            from importlib.metadata import version

            results["replay"] = {
                "runs": args.replay_runs,
                "delta_rs_version": version("deltalake"),
                "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                **replay.run(localstack.endpoint, bucket, args.replay_runs),
            }
    results[f"wall_s_{args.only or 'all'}"] = round(time.monotonic() - started, 1)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "latest.md").write_text(markdown(results) + "\n")
    sys.stdout.write(markdown(results) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
