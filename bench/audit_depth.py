"""What the default audit depth costs: ``deltaguard audit`` at ``--check exists`` (the listing
only) and at ``--check footers`` (the default: each live file's Parquet footer read too), same
table, same run.

One table of ``files`` live Parquet files (:class:`~deltaguard.localstack.synthetic_table.SyntheticTable`,
real files of a few hundred bytes, one commit), on local disk and on LocalStack. Every sample
is one ``deltaguard audit --json`` process; the two depths alternate. Both must exit 0 and
the footers run must say it read the footers.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.synthetic_table import SyntheticTable

from .replay import upload
from .stats import ratio_cell
from .worker import work_dir

DEPTHS = ("exists", "footers")
_T0_MS = 1_700_000_000_000


def _table(root: Path, files: int) -> Path:
    t = SyntheticTable(root)
    t.create(_T0_MS)
    adds = []
    for i in range(files):
        rel = f"p={i % 10}/part-{i:06d}.parquet"
        adds.append({"add": t.add_action(rel, _T0_MS, size=t.write_parquet(rel, _T0_MS, [i]))})
    t.commit(adds, _T0_MS + 1_000)
    return root


def _sample(depth: str, table: str, endpoint: Endpoint | None) -> float:
    cli = str(Path(sys.executable).parent / "deltaguard")
    args = [cli, "audit", table, "--json", "--no-progress", "--check", depth]
    env = dict(os.environ)
    if endpoint is not None:
        args += ["--endpoint-url", endpoint.url, "--path-style"]
        env.update(endpoint.credentials_env())
    started = time.monotonic()
    out = subprocess.run(args, capture_output=True, text=True, env=env, check=False, timeout=1800)
    wall = time.monotonic() - started
    if out.returncode != 0:
        raise RuntimeError(f"audit --check {depth} {table}: exit {out.returncode}: {out.stderr}")
    checked = json.loads(out.stdout)["summary"]["data_files_checked"]
    if (depth == "footers") != ("Parquet footer" in checked):
        raise AssertionError(f"audit --check {depth} says it checked: {checked}")
    return wall


def _measure(table: str, endpoint: Endpoint | None, runs: int) -> dict[str, Any]:
    walls: dict[str, list[float]] = {d: [] for d in DEPTHS}
    for _ in range(runs):
        for depth in DEPTHS:
            walls[depth].append(_sample(depth, table, endpoint))
    ratios = [f / e for e, f in zip(walls["exists"], walls["footers"], strict=True)]
    return {
        **{f"{d}_wall_s_median": round(statistics.median(walls[d]), 2) for d in DEPTHS},
        "ratio_median": round(statistics.median(ratios), 2),
        "ratio_min": round(min(ratios), 2),
        "ratio_max": round(max(ratios), 2),
        "samples": walls,
    }


def run(endpoint: Endpoint, bucket: str, runs: int, files: int) -> dict[str, Any]:
    with work_dir("deltaguard-bench-audit-depth-") as work:
        root = _table(work / "t", files)
        uri = upload(root, endpoint, bucket, "audit-depth/t")
        return {
            "files": files,
            "local": _measure(str(root), None, runs),
            "localstack": _measure(uri, endpoint, runs),
            "load": f"load average {os.getloadavg()[0]:.1f} at the end on {os.cpu_count()} cores",
        }


def markdown(section: dict[str, Any]) -> list[str]:
    lines = [
        "| storage | `--check exists` (listing only) | `--check footers` (default) "
        "| footers / exists: median of per-run ratios (min-max) |",
        "|---|---|---|---|",
    ]
    for storage in ("local", "localstack"):
        row = section[storage]
        lines.append(
            f"| {storage} | {row['exists_wall_s_median']:.2f} s | "
            f"{row['footers_wall_s_median']:.2f} s | {ratio_cell(row)} |"
        )
    return [*lines, ""]
