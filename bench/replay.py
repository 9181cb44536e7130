"""Snapshot replay, deltaguard vs delta-rs (the ``deltalake`` package), same tables, same run.

Two synthesized tables (:mod:`bench.synth_tables`): 10,000 commits with a checkpoint every 100,
and 1,000,000 live files (a checkpoint plus 1,000 JSON commits). Each is read from local disk
and from LocalStack. Every sample is one fresh process per reader (:mod:`bench.replay_worker`),
the two readers alternating; a sample times loading the table and listing its live files, and
records the process's peak RSS. Both readers must list the same number of files.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint

from . import synth_tables
from .worker import work_dir

SIDES = ("deltaguard", "delta-rs")


def _sample(side: str, table: str, endpoint: Endpoint | None) -> dict[str, Any]:
    env = dict(os.environ)
    args = [sys.executable, "-m", "bench.replay_worker", side, table]
    if endpoint is not None:
        args.append(endpoint.url)
        env.update(endpoint.credentials_env())
    out = subprocess.run(args, capture_output=True, text=True, env=env, check=False, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{side} failed on {table}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def upload(root: Path, endpoint: Endpoint, bucket: str, prefix: str) -> str:
    """Every file under ``root`` put under ``s3://bucket/prefix/`` (8 at a time); the URI."""
    s3 = endpoint.s3_client()
    files = [p for p in root.rglob("*") if p.is_file()]

    def put(path: Path) -> None:
        s3.put_object(
            Bucket=bucket,
            Key=f"{prefix}/{path.relative_to(root).as_posix()}",
            Body=path.read_bytes(),
        )

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, files))
    return f"s3://{bucket}/{prefix}"


def _measure(table: str, endpoint: Endpoint | None, runs: int, expected: int) -> dict[str, Any]:
    samples: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    for _ in range(runs):
        for side in SIDES:
            sample = _sample(side, table, endpoint)
            if sample["files"] != expected:
                raise AssertionError(f"{side} listed {sample['files']} files, expected {expected}")
            samples[side].append(sample)
    ratios = [
        ours["wall_s"] / theirs["wall_s"]
        for ours, theirs in zip(samples["deltaguard"], samples["delta-rs"], strict=True)
    ]
    row: dict[str, Any] = {"files": expected, "ratio_median": statistics.median(ratios)}
    for side in SIDES:
        row[side] = {
            "wall_s_median": statistics.median(s["wall_s"] for s in samples[side]),
            "peak_rss_mib_median": statistics.median(s["peak_rss_mib"] for s in samples[side]),
            "samples": samples[side],
        }
    return row


def run(
    endpoint: Endpoint, bucket: str, runs: int, commits: int = 10_000, files: int = 1_000_000
) -> dict[str, Any]:
    with work_dir("deltaguard-bench-replay-") as work:
        tables = {
            "many_commits": (
                synth_tables.many_commits(work / "many_commits", commits=commits),
                synth_tables.expected_live_files("many_commits", commits=commits),
            ),
            "many_files": (
                synth_tables.many_files(work / "many_files", files=files),
                synth_tables.expected_live_files("many_files", files=files),
            ),
        }
        results: dict[str, Any] = {
            "what": "load the table and list its live files; wall time and peak RSS per process",
            "tables": {
                "many_commits": f"{commits} commits, checkpoint every 100",
                "many_files": f"{files} live files: a checkpoint + 1000 JSON commits",
            },
        }
        for name, (root, expected) in tables.items():
            uri = upload(root, endpoint, bucket, f"replay/{name}")
            results[name] = {
                "local": _measure(str(root), None, runs, expected),
                "localstack": _measure(uri, endpoint, runs, expected),
            }
        return results
