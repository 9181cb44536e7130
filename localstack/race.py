"""The deterministic commit race used by the demo and the tests.

A fault-proxy rule holds the first PUT of a commit file ``_delta_log/<N>.json`` until another
request for the same key has been answered. With Delta's default S3 LogStore
(S3SingleDriverLogStore: check ``exists`` then PUT) the held writer's PUT lands after the other
writer's commit of the same version and overwrites it: a commit is lost, every time. With a
conditional-write LogStore the held PUT carries If-None-Match and gets 412 instead.
"""

from __future__ import annotations

import re
from typing import Any

from deltaguard.localstack.fault_proxy import FaultRule
from deltaguard.logstore.commit_names import COMMIT_FILE_PATTERN, commit_file_name

# Commit files of versions >= 1 (version 0, the table creation, is left alone).
DATA_COMMIT_FILE_REGEX = rf"/_delta_log/(?!{re.escape(commit_file_name(0))}){COMMIT_FILE_PATTERN}$"


def hold_one_commit_put(timeout_s: float = 120.0) -> FaultRule:
    """Hold the first commit PUT of a version >= 1 until a peer's PUT of the same version has
    been answered, or ``timeout_s`` passed."""
    return FaultRule(
        "hold_until_peer",
        method="PUT",
        path_regex=DATA_COMMIT_FILE_REGEX,
        times=1,
        delay_s=timeout_s,
    )


def count_log_reads() -> list[FaultRule]:
    """Rules that never fire and only count (``matched``) the GETs and HEADs of files in
    ``_delta_log/``: the reads of peers' commits, which grow with the number of drivers. Set
    them right after :func:`hold_one_commit_put` (or any one rule): :func:`requests_per_commit`
    reads them from the second rule on."""
    log_file = r"/_delta_log/[^/]+$"
    return [FaultRule("delay", method=m, path_regex=log_file, rate=0.0) for m in ("GET", "HEAD")]


def requests_per_commit(stats: dict[str, Any], commits: int) -> dict[str, float]:
    """From a proxy's ``stats()`` with rules ``[one rule, *count_log_reads()]``: the S3 requests
    per commit besides reading log files (``own``), and the log-file reads per commit."""
    log_reads = sum(r["matched"] for r in stats["rules"][1:])
    own = sum(stats["by_kind"].values()) - log_reads
    return {"own": round(own / commits, 2), "log_reads": round(log_reads / commits, 2)}
