"""Per Spark line, in one run:

- commit latency: CommitLatency (the JVM LogStore exactly as Spark loads it) on that line's own
  classpath (its pyspark jars, Delta, hadoop-aws and AWS SDK, and its plugin jar), conditional
  commit against a plain PutObject of the same bytes through the same S3A client, interleaved;
- the staged race at full size (the tests run it at 3 drivers x 5 appends): drivers of that line
  through the conditional store and through Delta's default store, commits lost/duplicated, and
  the S3 requests per commit through the proxy (the log-file reads, which grow with the number
  of drivers, apart; the CREATE and each driver's start-up included).

Lines other than the installed one come from their cached virtualenvs
(``deltaguard.localstack.spark_line_venvs``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pyspark

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.fault_proxy import FaultProxy
from deltaguard.localstack.multi_driver import run_multi_driver
from deltaguard.localstack.race import count_log_reads, hold_one_commit_put, requests_per_commit
from deltaguard.localstack.spark_line_venvs import ensure
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.spark_lines import LINES, SparkLine, installed_line

from .commit_latency import _jvm_run
from .stats import ratio_cell, summarize


def _spark_jars(line: SparkLine) -> Path:
    if line == installed_line():
        return Path(pyspark.__file__).parent / "jars"
    python = ensure(line)
    return next(python.parent.parent.glob("lib/python*/site-packages/pyspark/jars"))


def line_python(line: SparkLine) -> str:
    """The interpreter that runs ``line``'s drivers: this one, or the line's cached venv's."""
    return sys.executable if line == installed_line() else str(ensure(line))


def _race(
    endpoint: Endpoint,
    bucket: str,
    workdir: Path,
    line: SparkLine,
    store: PresetName,
    drivers: int,
    appends: int,
) -> dict[str, Any]:
    python = line_python(line)
    run_dir = workdir / f"race-{line.name}-{store.value}"
    with FaultProxy(endpoint, run_dir, seed=7) as proxy:
        proxy.set_rules([hold_one_commit_put(), *count_log_reads()])
        result = run_multi_driver(
            f"s3a://{bucket}/race-{line.name}-{store.value}",
            writer_endpoint_url=proxy.endpoint.url,
            reader_endpoint_url=endpoint.url,
            logstore=store,
            writers=drivers,
            appends=appends,
            workdir=run_dir,
            pythons=[python] * drivers,
            verify_python=python,
        )
        # every version the table has: the CREATE and each append (lost ones overwrote one)
        versions = len(result.verified["versions"])
        return {
            **result.summary(),
            "commits_per_s": round(result.commits_per_second, 3),
            "race_staged": proxy.fired()[:1] == [1],
            "requests_per_commit": requests_per_commit(proxy.stats(), versions),
        }


def run(
    endpoint: Endpoint,
    bucket: str,
    runs: int,
    commits: int,
    workdir: Path,
    race_drivers: int = 4,
    race_appends: int = 10,
) -> dict[str, Any]:
    load_before = os.getloadavg()
    per_line = {}
    for line in LINES:
        jars = _spark_jars(line)
        medians = [_jvm_run(endpoint, bucket, commits, None, line, jars) for _ in range(runs)]
        per_line[line.name] = {
            "coordinates": line.coordinates,
            "plugin": line.sdk.value,
            **summarize(medians, "plain_put_ms", "logstore_ms"),
        }
        if race_appends > 0:
            per_line[line.name]["race"] = {
                store.value: _race(
                    endpoint, bucket, workdir, line, store, race_drivers, race_appends
                )
                for store in (PresetName.S3_CONDITIONAL, PresetName.S3_SINGLE_DRIVER)
            }
    return {
        "what": "median latency of one 1 KiB commit through the JVM conditional LogStore vs a "
        f"plain PutObject, per Spark line; {commits} interleaved pairs per run; the staged "
        f"race with {race_drivers} drivers x {race_appends} appends per line and store",
        "lines": per_line,
        # other engineers share the 2 cores: the load average (1, 5, 15 min) around the run
        "load_before": [round(x, 1) for x in load_before],
        "load_after": [round(x, 1) for x in os.getloadavg()],
    }


def _requests(race: dict[str, Any]) -> str:
    per = race.get("requests_per_commit")
    return f"{per['own']:.1f} (+ {per['log_reads']:.1f})" if per else "n/a"


def markdown(section: dict[str, Any]) -> list[str]:
    lines = []
    if "load_before" in section:
        before, after = section["load_before"], section["load_after"]
        lines += [
            f"Load average on the 2 shared cores: {before[0]} (15 min: {before[2]}) at the start, "
            f"{after[0]} (15 min: {after[2]}) at the end.",
            "",
        ]
    lines += [
        "| Spark line (plugin jar) | plain PutObject | conditional commit | ratio: median of per-run ratios (min-max) |",
        "|---|---|---|---|",
    ]
    for name, s in section["lines"].items():
        lines.append(
            f"| {name} ({s['plugin']}) | {s['plain_put_ms_median']:.2f} ms | "
            f"{s['logstore_ms_median']:.2f} ms | {ratio_cell(s)} |"
        )
    races = {name: s["race"] for name, s in section["lines"].items() if "race" in s}
    if races:
        lines += [
            "",
            "| Spark line: staged race | store | data commits claimed | lost | duplicated | "
            "contiguous | commits/s | S3 requests per commit (+ log reads) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, stores in races.items():
            for store, r in stores.items():
                lines.append(
                    f"| {name} ({r['writers']} drivers x {r['appends_per_writer']}) | {store} | "
                    f"{r['data_commits_claimed_by_writers']} | {r['commits_lost']} | "
                    f"{r['commits_duplicated']} | {r['versions_contiguous']} | "
                    f"{r.get('commits_per_s', 0):.2f} | {_requests(r)} |"
                )
    return [*lines, ""]
