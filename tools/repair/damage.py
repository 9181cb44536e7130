"""Which live files of a snapshot a reader cannot read: the dangling references a repair
removes. The audit's own file check (:mod:`deltaguard.tools.deltalog.live_files`, one
definition of each rule): ``exists`` (one listing: missing data or deletion vector files,
data files whose size is not the logged one, deletion vector files too short for their
descriptor) and ``footers`` (also each data file's Parquet footer), and the files outside the
table root checked one by one (one that cannot be checked is left alone).

A storage error while checking a file raises (:class:`StorageError`): a file that could not be
read is never called broken.
"""

from __future__ import annotations

from dataclasses import dataclass

from deltaguard.tools.deltalog.live_files import (
    MISSING_DATA,
    SIZE_MISMATCH,
    check_footers,
    check_listed,
    check_outside,
    listed_sizes,
)
from deltaguard.tools.deltalog.snapshot import Snapshot
from deltaguard.tools.repair.modes import CheckMode
from deltaguard.tools.storage import TableStore


@dataclass(frozen=True)
class Dangling:
    """A live entry no reader can read: ``key`` is the replay's file key (decoded path and DV
    id), ``path`` the decoded log path, ``reason`` what is wrong, naming the file (the audit
    finding's message), ``code`` the audit finding's code."""

    key: str
    path: str
    reason: str
    code: str = MISSING_DATA


def find_dangling(
    store: TableStore, snap: Snapshot, mode: CheckMode, threads: int = 8
) -> list[Dangling]:
    """Every live entry of ``snap`` a reader cannot read (see the module docstring), one per
    entry (its first problem), sorted by path. Raises :class:`StorageError` when the table
    cannot be listed or a file not read."""
    sizes = listed_sizes(store)
    problems, external = check_listed(store, snap, sizes)
    outside, _seen = check_outside(store, external)
    problems += outside
    if mode is CheckMode.FOOTERS:
        broken = {p.key for p in problems if p.code in (MISSING_DATA, SIZE_MISMATCH)}
        problems += check_footers(store, snap, sizes, broken, threads)
    out: dict[str, Dangling] = {}
    for p in problems:
        out.setdefault(p.key, Dangling(p.key, p.path, p.message, p.code))
    return sorted(out.values(), key=lambda d: (d.path, d.key))
