"""Orphan scan vs Spark's ``VACUUM ... RETAIN 0 HOURS DRY RUN`` on the same table.

The table is synthesized (:func:`deltaguard.localstack.synthetic_table.build_wide_table`): empty
data files in 200 partitions, one commit and a checkpoint naming the live ones, and 2.5%
uncommitted files, all ten days old. Each side runs in its own process: our scan
(``deltaguard orphans TABLE --retention 0 --json``, whole process wall time, interpreter start
included, and its peak RSS) against Spark's VACUUM DRY RUN timed inside one warm session (JVM
start excluded), first on local disk, then on LocalStack after uploading the same files with
parallel PUTs. Both must report the same number of files.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.peak_rss import measured_cli
from bench.worker import REPO
from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.failed_job import run_vacuum_dry_run
from deltaguard.localstack.multi_driver import driver_env
from deltaguard.localstack.synthetic_table import build_wide_table
from deltaguard.localstack.table_copies import upload_table

PARTITIONS = 200
PREFIX = "orphans-bench"
DAY_MS = 86_400_000


def _ours(table: str, endpoint: Endpoint | None) -> dict[str, float]:
    """One scan in a fresh process: wall seconds, in-process scan seconds, peak RSS (MiB, the
    process's own: :mod:`bench.peak_rss`)."""
    with tempfile.TemporaryDirectory(prefix="orphans-bench-rss-") as tmp:
        peak = Path(tmp) / "peak"
        args = [*measured_cli(peak), "orphans", table, "--retention", "0", "--json"]
        if endpoint is not None:
            args += ["--endpoint", endpoint.url, "--region", endpoint.region, "--path-style"]
        started = time.perf_counter()
        proc = subprocess.run(
            args,
            capture_output=True,
            text=True,
            env=driver_env(endpoint),
            check=False,
            cwd=REPO,
        )
        wall = time.perf_counter() - started
        if proc.returncode not in (0, 1):
            raise RuntimeError(
                f"deltaguard orphans failed ({proc.returncode}): {proc.stderr[-2000:]}"
            )
        peak_mib = int(peak.read_text())
    report = json.loads(proc.stdout)
    return {
        "wall_s": wall,
        "scan_s": report["scan_s"],
        "peak_rss_mib": peak_mib,
        "files": report["totals"]["orphan"]["files"]
        + report["totals"]["expired-tombstone"]["files"],
        "listed": report["listed_files"],
    }


def _spark(table: str, endpoint: Endpoint | None, runs: int, workdir: Path) -> dict[str, Any]:
    log = workdir / f"vacuum-{'s3' if endpoint else 'local'}.log"
    return run_vacuum_dry_run(table, log, endpoint, runs)


def _side(
    table: str, endpoint: Endpoint | None, runs: int, spark_runs: int, workdir: Path
) -> dict[str, Any]:
    ours = [_ours(table, endpoint) for _ in range(runs)]
    spark = _spark(table, endpoint, spark_runs, workdir)
    ours_median = statistics.median(r["wall_s"] for r in ours)
    spark_median = statistics.median(spark["seconds"])
    return {
        "deltaguard_wall_s_median": round(ours_median, 2),
        "deltaguard_scan_s_median": round(statistics.median(r["scan_s"] for r in ours), 2),
        "deltaguard_peak_rss_mib": round(max(r["peak_rss_mib"] for r in ours), 1),
        "spark_vacuum_dry_run_s_median": round(spark_median, 2),
        "speedup_median": round(spark_median / ours_median, 1),
        "files_reported": {"deltaguard": ours[0]["files"], "spark": len(spark["paths"])},
        "listed_files": ours[0]["listed"],
        "per_run": {"deltaguard": ours, "spark_s": spark["seconds"]},
    }


def run(
    endpoint: Endpoint | None,
    bucket: str | None,
    workdir: Path,
    files: int = 200_000,
    runs: int = 3,
    spark_runs: int = 3,
) -> dict[str, Any]:
    """Builds the table (``files`` data files, 2.5% of them orphans), benchmarks local disk,
    then (with an endpoint) LocalStack."""
    orphans = files // 40
    root = workdir / "orphans-table"
    started = time.perf_counter()
    build_wide_table(
        root, files - orphans, PARTITIONS, int(time.time() * 1000) - 10 * DAY_MS, orphans
    )
    out: dict[str, Any] = {
        "what": f"scan of {files} data files in {PARTITIONS} partitions ({orphans} orphans), "
        "deltaguard orphans (whole process) vs Spark VACUUM RETAIN 0 HOURS DRY RUN (warm session)",
        "partitions": PARTITIONS,
        "build_s": round(time.perf_counter() - started, 1),
        "local": _side(str(root), None, runs, spark_runs, workdir),
    }
    if endpoint is not None and bucket is not None:
        import boto3
        from botocore.config import Config

        s3 = boto3.client(
            "s3",
            **endpoint.boto3_kwargs(),
            config=Config(
                max_pool_connections=32,
                retries={"mode": "standard", "max_attempts": 5},
                s3={"addressing_style": "path"},
            ),
        )
        started = time.perf_counter()
        upload_table(root, s3, bucket, PREFIX, workers=16)
        upload_s = time.perf_counter() - started
        out["upload"] = {
            "files": files + 4,
            "s": round(upload_s, 1),
            "puts_per_s": round((files + 4) / upload_s),
        }
        # One ListObjectsV2 request for one partition, alone: as botocore sends it by default
        # (URL-encoded keys) and as deltaguard's clients and Spark's SDK send it (plain).
        out["localstack_list_request_s"] = _list_request_s(s3, bucket)
        out["localstack_list_request_plain_s"] = _list_request_s(endpoint.s3_client(), bucket)
        out["localstack"] = _side(f"s3a://{bucket}/{PREFIX}", endpoint, runs, spark_runs, workdir)
        # Listing a directory of the table is at least one ListObjectsV2 request each (the
        # root, _delta_log and every partition); LocalStack's cost per request grows with the
        # bucket, not the page.
        floor = (PARTITIONS + 2) * out["localstack_list_request_plain_s"]["median"]
        out["localstack"]["listing_floor_s"] = round(floor, 1)
    return out


def _list_request_s(s3: Any, bucket: str, samples: int = 5) -> dict[str, Any]:
    """Seconds LocalStack takes to answer one ListObjectsV2 request for one partition (1,000
    keys), alone: its provider sorts (and, when asked to URL-encode, quotes) every object of
    the bucket on each request, so this grows with the bucket, not the page."""
    seconds = []
    for i in range(samples):
        started = time.perf_counter()
        s3.list_objects_v2(Bucket=bucket, Prefix=f"{PREFIX}/p={i}/", Delimiter="/")
        seconds.append(time.perf_counter() - started)
    return {"median": round(statistics.median(seconds), 3), "runs": [round(x, 3) for x in seconds]}
