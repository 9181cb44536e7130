"""Commit latency per Spark line, in one run: for each line, CommitLatency (the JVM LogStore
exactly as Spark loads it) on that line's own classpath (its pyspark jars, Delta, hadoop-aws
and AWS SDK, and its plugin jar), conditional commit against a plain PutObject of the same
bytes through the same S3A client, interleaved. Lines other than the installed one come from
their cached virtualenvs (``deltaguard.localstack.spark_line_venvs``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyspark

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.spark_line_venvs import ensure
from deltaguard.spark_conf.spark_lines import LINES, SparkLine, installed_line

from .commit_latency import _jvm_run
from .stats import summarize


def _spark_jars(line: SparkLine) -> Path:
    if line == installed_line():
        return Path(pyspark.__file__).parent / "jars"
    python = ensure(line)
    return next(python.parent.parent.glob("lib/python*/site-packages/pyspark/jars"))


def run(endpoint: Endpoint, bucket: str, runs: int, commits: int) -> dict[str, Any]:
    lines = [line for line in LINES if line.pip_hadoop]
    per_line = {}
    for line in lines:
        jars = _spark_jars(line)
        medians = [_jvm_run(endpoint, bucket, commits, None, line, jars) for _ in range(runs)]
        per_line[line.name] = {
            "coordinates": line.coordinates,
            "plugin": line.sdk.value,
            **summarize(medians, "plain_put_ms", "logstore_ms"),
        }
    return {
        "what": "median latency of one 1 KiB commit through the JVM conditional LogStore vs a "
        f"plain PutObject, per Spark line; {commits} interleaved pairs per run",
        "lines": per_line,
    }


def markdown(section: dict[str, Any]) -> list[str]:
    lines = [
        "| Spark line (plugin jar) | plain PutObject | conditional commit | ratio (median, min-max) |",
        "|---|---|---|---|",
    ]
    for name, s in section["lines"].items():
        lines.append(
            f"| {name} ({s['plugin']}) | {s['plain_put_ms_median']:.2f} ms | "
            f"{s['logstore_ms_median']:.2f} ms | {s['ratio_median']:.2f} "
            f"({s['ratio_min']:.2f}-{s['ratio_max']:.2f}) |"
        )
    return [*lines, ""]
