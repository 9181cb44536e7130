"""What starting ``deltaguard`` costs: the wall time of one CLI process, by command, against
the interpreter alone, same run.

The commands: ``--help`` (parsing only: what every usage error pays), and ``audit``,
``history`` and ``orphans`` of a small local table (one
:class:`~deltaguard.localstack.synthetic_table.SyntheticTable` of a few files: the work is
small, so the figure is mostly imports). The baseline is the same interpreter running ``pass``
(``python -S -c pass`` would be lower still, but every console script imports ``site``). One
sample runs each command once, in a fixed order; every command must exit 0.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from deltaguard.localstack.synthetic_table import SyntheticTable

from .worker import work_dir

_T0_MS = 1_700_000_000_000
BASELINE = "python -c pass"


def _table(root: Path) -> Path:
    t = SyntheticTable(root)
    t.create(_T0_MS)
    for i in range(3):
        rel = f"part-{i:03d}.parquet"
        size = t.write_parquet(rel, _T0_MS, [i])
        t.commit([{"add": t.add_action(rel, _T0_MS, size=size)}], _T0_MS + 1_000 * (i + 1))
    return root


def _commands(table: str) -> dict[str, list[str]]:
    cli = str(Path(sys.executable).parent / "deltaguard")
    return {
        BASELINE: [sys.executable, "-c", "pass"],
        "deltaguard --help": [cli, "--help"],
        "deltaguard audit (local)": [cli, "audit", table, "--json", "--no-progress"],
        "deltaguard history (local)": [cli, "history", table, "--json", "--no-progress"],
        "deltaguard orphans (local)": [cli, "orphans", table, "--json", "--no-progress"],
    }


def _wall(args: list[str]) -> float:
    started = time.monotonic()
    out = subprocess.run(args, capture_output=True, text=True, check=False, timeout=300)
    wall = time.monotonic() - started
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {out.returncode}: {out.stderr}")
    return wall


def run(runs: int) -> dict[str, Any]:
    with work_dir("deltaguard-bench-cli-start-") as work:
        commands = _commands(str(_table(work / "t")))
        walls: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, args in commands.items():
                walls[name].append(_wall(args))
    return {
        "commands": {
            name: {
                "wall_s_median": round(statistics.median(samples), 3),
                "above_baseline_s_median": round(
                    statistics.median(w - b for w, b in zip(samples, walls[BASELINE], strict=True)),
                    3,
                ),
                "samples": [round(w, 3) for w in samples],
            }
            for name, samples in walls.items()
        },
        "load": f"load average {os.getloadavg()[0]:.1f} at the end on {os.cpu_count()} cores",
    }


def markdown(section: dict[str, Any], when: str) -> list[str]:
    """The section's heading (``when``: when it was measured, over how many runs) and table."""
    lines = [
        f"Starting `deltaguard`: one process per command per sample, on a 3-commit local table "
        f"({section.get('load', '')}), {when}:",
        "",
        "| process | wall | above the interpreter alone: median of per-sample differences |",
        "|---|---|---|",
    ]
    for name, row in section["commands"].items():
        above = "-" if name == BASELINE else f"{row['above_baseline_s_median']:.2f} s"
        lines.append(f"| `{name}` | {row['wall_s_median']:.2f} s | {above} |")
    return [*lines, ""]
