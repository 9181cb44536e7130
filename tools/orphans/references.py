"""Which files the log references: what VACUUM protects, and what any retained entry names.

Built on :mod:`deltaguard.tools.deltalog` (issue 5's replay); nothing here parses the log
format itself. Every path is decoded and relative to the table root (absolute paths inside
the table are mapped in, paths outside it dropped: :func:`~deltaguard.tools.deltalog.paths.relative_to_root`), and each
deletion vector stored in its own file (``u``/``p`` storage) adds the DV file's path.

* :attr:`References.live`: files of the snapshot's adds (and their DV files).
* :attr:`References.protected`: VACUUM's valid set: ``live`` plus every tombstone of the
  snapshot whose ``deletionTimestamp`` is at or after the cut-off (and its DV file).
* :attr:`References.ever`: every file any retained log entry names: adds, removes and ``cdc``
  of every JSON commit (and compaction) in ``_delta_log``, plus the adds and removes of the
  oldest complete checkpoint and of every checkpoint that follows a gap in the commits. Every
  version that can still be reconstructed starts from one of those checkpoints (or from commit
  0) and applies retained commits, so its live files are all in ``ever``.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from deltaguard.tools.deltalog.actions import (
    AddFile,
    CdcFile,
    DeletionVector,
    RemoveFile,
    parse_json_actions,
)
from deltaguard.tools.deltalog.checkpoint import LOG_DIR, CheckpointRef, read_checkpoint
from deltaguard.tools.deltalog.errors import CorruptLogError
from deltaguard.tools.deltalog.filetable import FileActions
from deltaguard.tools.deltalog.listing import LogListing
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.deltalog.snapshot import Snapshot
from deltaguard.tools.deltalog.storage import TableStore

_READ_WORKERS = 8


@dataclass
class References:
    """Reference sets of one snapshot (see module docstring). ``tombstone_ms`` maps each
    tombstoned path (not live) to its newest deletion timestamp (None if the log has none)."""

    version: int
    cutoff_ms: int
    live: set[str] = field(default_factory=set)
    protected: set[str] = field(default_factory=set)
    ever: set[str] = field(default_factory=set)
    tombstone_ms: dict[str, int | None] = field(default_factory=dict)
    change_data: set[str] = field(default_factory=set)


def _dv_path(dv: DeletionVector, store: TableStore) -> str | None:
    path = dv.file_path()
    return relative_to_root(path, store) if path is not None else None


def _relative(paths: Iterable[str], store: TableStore) -> Iterable[str]:
    for p in paths:
        rel = relative_to_root(p, store)
        if rel is not None:
            yield rel


def table_paths(table: pa.Table, store: TableStore) -> set[str]:
    """Every file a FILE_SCHEMA table names: its paths and its DV files."""
    out = set(_relative(table["path"].to_pylist(), store))
    with_dv = table.filter(pc.is_valid(table["dv_storage_type"]))
    for _path, dv in FileActions(with_dv, AddFile).deletion_vectors():
        rel = _dv_path(dv, store)
        if rel is not None:
            out.add(rel)
    return out


def action_paths(
    actions: Iterable[object], store: TableStore, change_data: set[str] | None = None
) -> set[str]:
    """Every file the add, remove and cdc actions of one JSON log file name (and DV files).
    ``cdc`` paths are also added to ``change_data`` when given."""
    out: set[str] = set()
    for action in actions:
        if not isinstance(action, AddFile | RemoveFile | CdcFile):
            continue
        rel = relative_to_root(action.path, store)
        if rel is not None:
            out.add(rel)
            if isinstance(action, CdcFile) and change_data is not None:
                change_data.add(rel)
        dv = None if isinstance(action, CdcFile) else action.deletion_vector
        if dv is not None and (dv_rel := _dv_path(dv, store)) is not None:
            out.add(dv_rel)
    return out


def read_json_paths(store: TableStore, name: str, change_data: set[str]) -> set[str]:
    """The files one JSON file in ``_delta_log`` references. Raises :class:`CorruptLogError`
    naming the file and line if any line is not a valid action (a reference we cannot read is
    a reference we could miss, so cleanup must stop)."""
    rel = f"{LOG_DIR}/{name}"
    parsed = parse_json_actions(store.read(rel))
    if parsed.errors:
        err = parsed.errors[0]
        raise CorruptLogError(f"{store.location(rel)}:{err.line}: {err.message}", rel, err.line)
    return action_paths(parsed.actions, store, change_data)


def json_files(listing: LogListing) -> list[str]:
    """Every commit and compaction file of a listing."""
    return [*listing.commits.values(), *(c.name for c in listing.compactions)]


def checkpoints_to_read(listing: LogListing, snapshot: Snapshot) -> list[int]:
    """Indexes into ``listing.checkpoints`` whose file actions must be read: the oldest, and
    any checkpoint the commits before it do not reach (a gap), except the snapshot's own
    checkpoint (the snapshot's adds and tombstones already contain all its entries)."""
    return checkpoints_besides(listing, snapshot.segment.checkpoint)


def checkpoints_besides(listing: LogListing, own: CheckpointRef | None) -> list[int]:
    """:func:`checkpoints_to_read` for a snapshot built on checkpoint ``own`` (None: from
    commit 0)."""
    picked: list[int] = []
    previous: int | None = None
    for i, ref in enumerate(listing.checkpoints):
        if previous is not None and ref.version == previous:
            continue  # another file of an already handled version
        gap = previous is None or any(
            v not in listing.commits for v in range(previous + 1, ref.version + 1)
        )
        if gap:
            picked.append(i)
        previous = ref.version
    return [i for i in picked if listing.checkpoints[i] != own]


def collect_references(snapshot: Snapshot, cutoff_ms: int) -> References:
    """The reference sets of ``snapshot`` for a deletion cut-off (``now - retention``).
    Reads every retained JSON commit and the checkpoints :func:`checkpoints_to_read` picks,
    in parallel. Raises :class:`~deltaguard.tools.deltalog.errors.DeltaLogError` (naming the
    file) if any of them cannot be read."""
    store = snapshot.store
    refs = References(snapshot.version, cutoff_ms)
    refs.live = table_paths(snapshot.adds.table, store)
    removes = snapshot.removes.table
    ts = removes["deletion_timestamp"]
    unexpired = removes.filter(pc.or_kleene(pc.greater_equal(ts, cutoff_ms), pc.is_null(ts)))
    refs.protected = refs.live | table_paths(unexpired, store)
    for row in removes.select(["path", "deletion_timestamp"]).to_pylist():
        rel = relative_to_root(row["path"], store)
        if rel is None or rel in refs.live:
            continue
        old, new = refs.tombstone_ms.get(rel), row["deletion_timestamp"]
        refs.tombstone_ms[rel] = new if old is None else max(old, new or old)
    refs.ever = refs.live | table_paths(removes, store)
    listing = snapshot.listing
    with ThreadPoolExecutor(_READ_WORKERS, thread_name_prefix="log-read") as pool:
        commit_sets = list(
            pool.map(lambda n: read_json_paths(store, n, refs.change_data), json_files(listing))
        )
        states = list(
            pool.map(
                lambda i: read_checkpoint(store, listing.checkpoints[i]),
                checkpoints_to_read(listing, snapshot),
            )
        )
    for paths in commit_sets:
        refs.ever |= paths
    for state in states:
        refs.ever |= table_paths(state.adds, store) | table_paths(state.removes, store)
    return refs
