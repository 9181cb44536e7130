"""``make bench``: runs the benchmarks on a fresh LocalStack and writes
``bench/results/latest.json`` and ``bench/results/latest.md``."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from deltaguard.testbed.localstack_server import LocalStackServer

from . import commit_latency, replay, throughput

RESULTS = Path(__file__).parent / "results"


def markdown(results: dict[str, Any]) -> str:
    lines = [
        f"Measured {results['measured_at']} on {results['machine']}; medians of "
        f"{results['runs']} runs ({results['spark_runs']} for Spark drivers), baselines "
        "measured in the same run.",
        "",
    ]
    lat = results.get("commit_latency")
    if lat:
        lines += [
            "| commit latency (1 KiB, LocalStack) | plain PutObject | deltaguard LogStore | ratio (median, min-max) |",
            "|---|---|---|---|",
        ]
        for side in ("jvm", "python"):
            s = lat[side]
            lines.append(
                f"| {side.upper() if side == 'jvm' else 'Python'} | {s['plain_put_ms_median']:.2f} ms | "
                f"{s['logstore_ms_median']:.2f} ms | {s['ratio_median']:.2f} "
                f"({s['ratio_min']:.2f}-{s['ratio_max']:.2f}) |"
            )
        lines.append("")
    tput = results.get("throughput")
    if tput:
        counts = list(tput["python"].keys())
        lines += [
            "| committed versions/s, one table | "
            + " | ".join(f"{c} writer{'s' if c != '1' else ''}" for c in counts)
            + " |",
            "|---|" + "---|" * len(counts),
        ]
        for engine, label in (("python", "Python writers"), ("spark", "Spark drivers")):
            appends = tput[engine][counts[0]]["appends_per_writer"]
            lines.append(
                f"| {label} ({appends} appends each) | "
                + " | ".join(f"{tput[engine][c]['commits_per_s_median']:.2f}" for c in counts)
                + " |"
            )
        lines.append("")
    rep = results.get("replay")
    if rep:
        lines += [
            f"Snapshot replay (load + list live files), deltaguard vs delta-rs {rep.get('delta_rs_version', '')}, "
            f"medians of {rep.get('runs', '?')} runs, one process per sample:",
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--commits", type=int, default=100, help="commit/PUT pairs per latency run")
    parser.add_argument("--python-appends", type=int, default=25)
    parser.add_argument("--spark-appends", type=int, default=5)
    parser.add_argument("--spark-runs", type=int, default=3)
    parser.add_argument("--replay-runs", type=int, default=3)
    parser.add_argument("--only", choices=["latency", "throughput", "replay"])
    args = parser.parse_args(argv)
    started = time.monotonic()
    previous = RESULTS / "latest.json"
    # A partial run (--only) keeps the other benchmarks' latest results.
    kept = json.loads(previous.read_text()) if args.only and previous.exists() else {}
    results: dict[str, Any] = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores, Python {platform.python_version()}",
        "runs": args.runs,
        "spark_runs": args.spark_runs,
        **kept,
    }
    with LocalStackServer() as localstack:
        bucket = "deltaguard-bench"
        localstack.endpoint.s3_client().create_bucket(Bucket=bucket)
        if args.only in (None, "latency"):
            results["commit_latency"] = commit_latency.run(
                localstack.endpoint, bucket, args.runs, args.commits
            )
        if args.only in (None, "throughput"):
            results["throughput"] = {
                "what": "data commits per second, from the first append's start to the last one's end",
                "python": throughput.run(
                    localstack.endpoint, bucket, "python", args.runs, args.python_appends
                ),
                "spark": throughput.run(
                    localstack.endpoint, bucket, "spark", args.spark_runs, args.spark_appends
                ),
            }
        if args.only in (None, "replay"):
            from importlib.metadata import version

            results["replay"] = {
                "runs": args.replay_runs,
                "delta_rs_version": version("deltalake"),
                "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                **replay.run(localstack.endpoint, bucket, args.replay_runs),
            }
    results["wall_s"] = round(time.monotonic() - started, 1)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "latest.md").write_text(markdown(results) + "\n")
    sys.stdout.write(markdown(results) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
