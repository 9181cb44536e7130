"""Committed versions per second with 1, 4 and 8 concurrent writers on one table, through
deltaguard's conditional LogStore on LocalStack: Python writers and Spark drivers, each a
separate process (:func:`deltaguard.testbed.multi_driver.run_multi_driver`)."""

from __future__ import annotations

import statistics
import tempfile
import uuid
from pathlib import Path
from typing import Any

from deltaguard.spark_conf.session import LogStoreChoice
from deltaguard.testbed.endpoints import Endpoint
from deltaguard.testbed.multi_driver import run_multi_driver


def _one(
    endpoint: Endpoint, bucket: str, engine: str, writers: int, appends: int
) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="deltaguard-bench-"))
    result = run_multi_driver(
        f"s3a://{bucket}/tput-{engine}-{writers}-{uuid.uuid4().hex[:6]}",
        writer_endpoint_url=endpoint.url,
        reader_endpoint_url=endpoint.url,
        logstore=LogStoreChoice.S3_CONDITIONAL,
        writers=writers if engine == "spark" else 0,
        python_writers=writers if engine == "python" else 0,
        appends=appends,
        workdir=workdir,
    )
    if result.lost_tags or result.duplicated_tags or result.failed_appends:
        raise AssertionError(f"benchmark run lost or failed commits: {result.summary()}")
    return {"commits_per_s": result.commits_per_second, "commits": len(result.found_tags)}


def run(
    endpoint: Endpoint,
    bucket: str,
    engine: str,
    runs: int,
    appends: int,
    writer_counts: tuple[int, ...] = (1, 4, 8),
) -> dict[str, Any]:
    """Per writer count: median commits/s over ``runs`` runs of ``appends`` appends per writer."""
    rows: dict[str, Any] = {}
    for writers in writer_counts:
        samples = [_one(endpoint, bucket, engine, writers, appends) for _ in range(runs)]
        rows[str(writers)] = {
            "commits_per_s_median": statistics.median(s["commits_per_s"] for s in samples),
            "appends_per_writer": appends,
            "runs": [round(s["commits_per_s"], 3) for s in samples],
        }
    return rows
