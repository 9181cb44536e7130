"""Streaming leftovers inside a table root: what orphans keeps, and why, written once for both
engines (the local :func:`~deltaguard.tools.orphans.classify.scan` and the Spark engine's
:func:`~deltaguard.tools.spark_engine.orphans_scan.scan_spark`).

* **A Structured Streaming checkpoint directory** is a directory holding a ``metadata`` file
  and files under ``offsets/`` or ``commits/`` (Spark writes ``metadata`` when the query first
  starts and ``offsets/<batch>`` before each micro-batch runs). Its query needs every file of
  it to restart exactly once, so none is ever a candidate, whatever its age; the directory is
  reported in ``kept_dirs`` with :data:`CHECKPOINT_REASON`. When its name is not hidden
  (e.g. ``checkpoints/q1``) VACUUM would delete its files: this is a deliberate difference
  from VACUUM DRY RUN (docs/design/orphans.md), and comparisons with VACUUM leave such files out.
  A checkpoint whose query never started a micro-batch holds only ``metadata`` and is not
  recognised; a hidden-named checkpoint (``_checkpoint``) is never listed, as by VACUUM.
* **A file sink's metadata log** (``_spark_metadata``, the list of files the sink committed)
  is hidden, so it is never listed nor deleted; it is reported in ``kept_dirs`` with
  :data:`SPARK_METADATA_REASON`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: The files that mark a streaming checkpoint directory: ``<dir>/metadata``,
#: ``<dir>/offsets/<n>``, ``<dir>/commits/<n>`` (paths relative to the table root).
CHECKPOINT_MARKER_REGEX = r"(^|/)(metadata|offsets/[^/]+|commits/[^/]+)$"
SPARK_METADATA_DIR = "_spark_metadata"
CHECKPOINT_REASON = (
    "Structured Streaming checkpoint (metadata, offsets/, commits/): its query needs it to "
    "restart exactly once; never deleted (VACUUM would delete it unless its name is hidden)"
)
SPARK_METADATA_REASON = (
    "a file sink's metadata log (_spark_metadata): readers of the sink's output need it; "
    "hidden, never deleted"
)
_MARKER = re.compile(CHECKPOINT_MARKER_REGEX)


@dataclass(frozen=True, slots=True)
class KeptDir:
    """A directory below the table root that orphans never cleans up, and why."""

    path: str
    reason: str


def checkpoint_dirs(paths: Iterable[str]) -> set[str]:
    """The streaming checkpoint directories among listed files (``paths`` relative to the
    root; only the ones matching :data:`CHECKPOINT_MARKER_REGEX` matter, so a caller may pass
    just those): every directory with a ``metadata`` file and a file under ``offsets/`` or
    ``commits/``. ``""`` is the table root itself."""
    with_metadata: set[str] = set()
    with_log: set[str] = set()
    for path in paths:
        match = _MARKER.search(path)
        if match is None:
            continue
        folder = path[: match.start(2)].removesuffix("/")
        (with_metadata if match.group(2) == "metadata" else with_log).add(folder)
    return with_metadata & with_log


def in_checkpoint(path: str, dirs: set[str]) -> bool:
    """True if ``path`` (relative to the root) lies in one of the checkpoint ``dirs``."""
    if "" in dirs:
        return True
    parts = path.split("/")
    return any("/".join(parts[:i]) in dirs for i in range(1, len(parts)))


def kept_dirs(checkpoints: set[str], hidden_dirs: Iterable[str]) -> list[KeptDir]:
    """The ``kept_dirs`` of a report: the checkpoint directories and the ``_spark_metadata``
    directories among the hidden ones, sorted by path."""
    kept = [KeptDir(d, CHECKPOINT_REASON) for d in checkpoints]
    kept += [
        KeptDir(d, SPARK_METADATA_REASON)
        for d in hidden_dirs
        if d.rstrip("/").rpartition("/")[2] == SPARK_METADATA_DIR
    ]
    return sorted(kept, key=lambda k: k.path)
