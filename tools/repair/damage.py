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

from deltaguard.tools.deltalog import filetable
from deltaguard.tools.deltalog.check_depth import CheckMode
from deltaguard.tools.deltalog.live_files import (
    MISSING_DATA,
    SIZE_MISMATCH,
    check_footers,
    check_listed,
    check_outside,
    listed_sizes,
    parquet_footer_problem,
)
from deltaguard.tools.deltalog.snapshot import Snapshot
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
    """The removable entries of :func:`find_damage`."""
    return find_damage(store, snap, mode, threads)[0]


def find_damage(
    store: TableStore, snap: Snapshot, mode: CheckMode, threads: int = 8
) -> tuple[list[Dangling], list[Dangling]]:
    """Every live entry of ``snap`` a reader cannot read (see the module docstring), one per
    entry (its first problem), sorted by path: (to remove, to keep). A data file longer than
    its ``add``'s ``size`` (bytes appended after the commit) is kept: readers locate its
    footer from the logged size and may read every row, so removing it would lose them. It
    is removed only with ``--check footers`` when its footer at the logged size cannot be
    read. A shorter one (a footer past its end) is always removed. Raises
    :class:`StorageError` when the table cannot be listed or a file not read."""
    sizes = listed_sizes(store)
    problems, external = check_listed(store, snap, sizes)
    outside, _seen = check_outside(store, external)
    problems += outside
    if mode is CheckMode.FOOTERS:
        broken = {p.key for p in problems if p.code in (MISSING_DATA, SIZE_MISMATCH)}
        problems += check_footers(store, snap, sizes, broken, threads)
    logged = _logged_sizes(snap, {p.key for p in problems if p.code == SIZE_MISMATCH})
    remove: dict[str, Dangling] = {}
    keep: dict[str, Dangling] = {}
    for p in problems:
        if p.key in remove or p.key in keep:
            continue
        size = logged.get(p.key)
        if p.code == SIZE_MISMATCH and size is not None and sizes.get(p.file, 0) > size:
            if mode is CheckMode.FOOTERS:
                why = parquet_footer_problem(store, p.file, size)
                if why is not None:
                    remove[p.key] = Dangling(
                        p.key, p.path, f"{p.message}; at the logged size {why}", p.code
                    )
                    continue
                keep[p.key] = Dangling(p.key, p.path, f"{p.message}; {_GROWN_READABLE}", p.code)
            else:
                keep[p.key] = Dangling(p.key, p.path, f"{p.message}; {_GROWN_UNCHECKED}", p.code)
            continue
        remove[p.key] = Dangling(p.key, p.path, p.message, p.code)

    def ordered(d: dict[str, Dangling]) -> list[Dangling]:
        return sorted(d.values(), key=lambda x: (x.path, x.key))

    return ordered(remove), ordered(keep)


_GROWN_UNCHECKED = (
    "longer than logged: delta-rs reads it at the logged size, Spark fails on it (it looks "
    "for the footer at the file's end); kept, as removing it would drop rows delta-rs reads. "
    "`repair --check footers` (the default) removes it only if its footer at the logged size "
    "is unreadable; truncate it to the logged size or restore the committed file from a "
    "backup"
)
_GROWN_READABLE = (
    "longer than logged, but its footer at the logged size reads: delta-rs reads it, Spark "
    "fails on it (it looks for the footer at the file's end); kept, as removing it would drop "
    "rows delta-rs reads. Truncate it to the logged size (the committed file) or restore the "
    "committed file from a backup"
)


def _logged_sizes(snap: Snapshot, keys: set[str]) -> dict[str, int]:
    """The ``add`` ``size`` of each entry in ``keys``."""
    if not keys:
        return {}
    table = snap.adds.table
    return {
        k: s
        for k, s in zip(filetable.keys(table).to_pylist(), table["size"].to_pylist(), strict=True)
        if k in keys and s is not None
    }
