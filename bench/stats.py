"""Medians over runs, and ratios against a baseline measured in the same run."""

from __future__ import annotations

import statistics
from typing import Any


def summarize(runs: list[dict[str, float]], baseline: str, subject: str) -> dict[str, Any]:
    """``runs``: per-run medians ``{baseline: x, subject: y}``. Returns the median of each over
    the runs and the median of the per-run ratios subject/baseline (each ratio comes from one
    run, so both sides saw the same server state)."""
    ratios = [r[subject] / r[baseline] for r in runs if r[baseline] > 0]
    return {
        "runs": len(runs),
        f"{baseline}_median": statistics.median(r[baseline] for r in runs),
        f"{subject}_median": statistics.median(r[subject] for r in runs),
        "ratio_median": statistics.median(ratios) if ratios else None,
        "ratio_min": min(ratios) if ratios else None,
        "ratio_max": max(ratios) if ratios else None,
        "per_run": runs,
    }


def percentile(values: list[float], q: int) -> float:
    """The ``q``-th percentile (inclusive method: within the observed range)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def ratio_cell(s: dict[str, Any]) -> str:
    """A summary's ratio as a table cell: the median of the per-run ratios, then (min-max)."""
    return f"{s['ratio_median']:.2f} ({s['ratio_min']:.2f}-{s['ratio_max']:.2f})"
