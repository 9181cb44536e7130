"""Which files the log references: what VACUUM protects, and what any retained entry names.

Built on :mod:`deltaguard.tools.deltalog` (issue 5's replay); nothing here parses the log
format itself. Every path is decoded and relative to the table root (absolute paths inside
the table are mapped in, paths outside it dropped: :func:`~deltaguard.tools.deltalog.paths.relative_to_root`), and each
deletion vector stored in its own file (``u``/``p`` storage) adds the DV file's path.

* :attr:`References.live`: files of the snapshot's adds (and their DV files).
* :attr:`References.protected`: VACUUM's valid set: ``live`` plus every tombstone of the
  snapshot whose ``deletionTimestamp`` is at or after the cut-off (and its DV file).
* :attr:`References.named_in_log`: every file any retained log entry names: adds, removes and ``cdc``
  of every JSON commit (and compaction) in ``_delta_log``, plus the adds and removes of the
  oldest complete checkpoint and of every checkpoint that follows a gap in the commits. Every
  version that can still be reconstructed starts from one of those checkpoints (or from commit
  0) and applies retained commits, so its live files are all in ``named_in_log``.
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
    LineError,
    RemoveFile,
    iter_json_actions,
)
from deltaguard.tools.deltalog.checkpoint import LOG_DIR, CheckpointRef, read_checkpoint
from deltaguard.tools.deltalog.errors import CorruptLogError, IncompleteActionError
from deltaguard.tools.deltalog.filetable import FileActions
from deltaguard.tools.deltalog.findings import CODES
from deltaguard.tools.deltalog.listing import LogListing
from deltaguard.tools.deltalog.paths import relative_paths, relative_to_root
from deltaguard.tools.deltalog.snapshot import Snapshot
from deltaguard.tools.orphans.pathset import PathSet, PathUnion, chunked
from deltaguard.tools.storage import TableStore
from deltaguard.tools.storage.errors import DeltaLogError, StorageError

_READ_WORKERS = 8
#: Actions of a commit parsed before their paths go to Arrow (bounds the Python objects held).
_PARSE_CHUNK = 4096


@dataclass
class References:
    """Reference sets of one snapshot (see module docstring), columnar (no Python string per
    path: :mod:`.pathset`); ``live``, ``protected`` and ``named_in_log`` share their paths. ``tombstones``: each tombstoned path (not live);
    ``tombstone_ms[tombstones.index(p)]`` is its newest deletion timestamp (None if the log
    has none): see :meth:`tombstone`."""

    version: int
    cutoff_ms: int
    live: PathUnion = field(default_factory=PathUnion)
    protected: PathUnion = field(default_factory=PathUnion)
    named_in_log: PathUnion = field(default_factory=PathUnion)
    tombstones: PathSet = field(default_factory=PathSet)
    tombstone_ms: pa.Array = field(default_factory=lambda: pa.array([], pa.int64()))
    change_data: PathSet = field(default_factory=PathSet)

    def tombstone(self, path: str) -> tuple[bool, int | None]:
        """Whether ``path`` is a snapshot tombstone, and its newest deletion timestamp."""
        at = self.tombstones.index(path)
        if at is None:
            return False, None
        ms: int | None = self.tombstone_ms[at].as_py()
        return True, ms


def _dv_path(dv: DeletionVector, store: TableStore) -> str | None:
    path = dv.file_path()
    return relative_to_root(path, store) if path is not None else None


def table_paths(table: pa.Table, store: TableStore) -> pa.ChunkedArray:
    """Every file a FILE_SCHEMA table names: its paths and its DV files (relative to the
    root, outside ones dropped; a path may appear more than once)."""
    paths = relative_paths(table["path"], store)
    with_dv = table.filter(pc.is_valid(table["dv_storage_type"]))
    if not with_dv.num_rows:
        return paths
    dvs = [
        rel
        for _path, dv in FileActions(with_dv, AddFile).deletion_vectors()
        if (rel := _dv_path(dv, store)) is not None
    ]
    return chunked([paths, pa.array(dvs, pa.string())])


def action_paths(
    actions: Iterable[object], store: TableStore, change_data: list[str] | None = None
) -> list[str]:
    """Every file the add, remove and cdc actions of one JSON log file name (and DV files),
    in order, possibly repeated. ``cdc`` paths are also appended to ``change_data`` when
    given."""
    out: list[str] = []
    for action in actions:
        if not isinstance(action, AddFile | RemoveFile | CdcFile):
            continue
        rel = relative_to_root(action.path, store)
        if rel is not None:
            out.append(rel)
            if isinstance(action, CdcFile) and change_data is not None:
                change_data.append(rel)
        dv = None if isinstance(action, CdcFile) else action.deletion_vector
        if dv is not None and (dv_rel := _dv_path(dv, store)) is not None:
            out.append(dv_rel)
    return out


@dataclass
class JsonPaths:
    """The files one JSON log file names that a known set does not hold (each once), and
    its ``cdc`` files."""

    new: pa.Array
    change_data: pa.Array


def read_json_paths(store: TableStore, name: str, known: PathUnion | None = None) -> JsonPaths:
    """The files one JSON file in ``_delta_log`` references, less those in ``known``. The
    file is read and parsed in chunks (never held whole, on local disk). Raises
    :class:`CorruptLogError` naming the file and line if any line is not a valid action (a
    reference we cannot read is a reference we could miss, so cleanup must stop)."""
    rel = f"{LOG_DIR}/{name}"
    new: list[pa.Array] = []
    change_data: list[str] = []
    chunk: list[object] = []

    def flush() -> None:
        paths = action_paths(chunk, store, change_data)
        if known is not None and paths:
            paths = [p for p, hit in zip(paths, known.contains_all(paths), strict=True) if not hit]
        if paths:
            new.append(pc.unique(pa.array(paths, pa.string())))
        chunk.clear()

    for item in iter_json_actions(store.read_lines(rel)):
        if isinstance(item, LineError):
            location = store.location(rel)
            kind = IncompleteActionError if item.incomplete else CorruptLogError
            raise kind(f"{location}:{item.line}: {item.message}", rel, item.line)
        chunk.append(item)
        if len(chunk) >= _PARSE_CHUNK:
            flush()
    flush()
    return JsonPaths(
        pc.unique(pa.concat_arrays(new)) if new else pa.array([], pa.string()),
        pa.array(change_data, pa.string()),
    )


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


def _tombstones(removes: pa.Table, live: PathUnion, store: TableStore) -> tuple[PathSet, pa.Array]:
    """The snapshot's tombstoned paths that are not live, and each one's newest deletion
    timestamp (null if none of its removes has one)."""
    if not removes.num_rows:
        return PathSet(), pa.array([], pa.int64())
    paths = relativize_all(removes["path"], store)
    rows = pa.table({"path": paths, "ts": removes["deletion_timestamp"]})
    rows = rows.filter(pc.is_valid(rows["path"]))
    rows = rows.filter(pc.invert(pa.array(live.contains_all(rows["path"].to_pylist()))))
    newest = rows.group_by("path").aggregate([("ts", "max")])
    tombstones = PathSet(newest["path"])
    at = pc.index_in(tombstones.paths, value_set=newest["path"])
    return tombstones, pc.take(newest["ts_max"], at).combine_chunks()


def relativize_all(paths: pa.Array | pa.ChunkedArray, store: TableStore) -> pa.Array:
    """Each decoded log path relative to the root, null where it is outside the table (one
    entry per input, unlike :func:`relative_paths`)."""
    return pa.array([relative_to_root(p, store) for p in paths.to_pylist()], pa.string())


#: Why orphans stops at a log file it cannot read (both engines' refusal lines).
WHY_EVERY_LOG_FILE = (
    "to tell an orphan from a file an older version still needs, orphans reads what every "
    "retained commit and the oldest checkpoint (and any after a gap) name, so it stops "
    "without this file (nothing deleted)"
)


def unreadable_reference(exc: DeltaLogError, store: TableStore, checkpoint: bool) -> str:
    """The one line for ``exc``, raised reading a retained commit (or, ``checkpoint``, a
    checkpoint :func:`checkpoints_to_read` picks) while collecting the reference sets: the
    file and what is wrong (``exc``), why orphans refuses the table the audit can read, and
    the audit finding (and its hint) that says what to do."""
    if isinstance(exc, StorageError):
        code = "commit-unreadable"
    elif isinstance(exc, IncompleteActionError):
        code = "incomplete-action"
    else:
        code = "checkpoint-unreadable" if checkpoint else "corrupt-json-line"
    return (
        f"{exc}: {WHY_EVERY_LOG_FILE}, although the latest version reads without it. "
        f"`deltaguard audit {store.uri}` reports it as {code}: {CODES[code][1]}"
    )


def collect_references(snapshot: Snapshot, cutoff_ms: int) -> References:
    """The reference sets of ``snapshot`` for a deletion cut-off (``now - retention``).
    Reads every retained JSON commit and the checkpoints :func:`checkpoints_to_read` picks
    (a few at a time, each commit in chunks, keeping only the paths not already known).
    Raises :class:`~deltaguard.tools.deltalog.errors.DeltaLogError` (naming the file) if any
    of them cannot be read, of the class it was raised with, its message saying why orphans
    needs the file (:func:`unreadable_reference`)."""
    store = snapshot.store
    refs = References(snapshot.version, cutoff_ms)
    refs.live = PathUnion([PathSet(table_paths(snapshot.adds.table, store))])
    removes = snapshot.removes.table
    ts = removes["deletion_timestamp"]
    unexpired = removes.filter(pc.or_kleene(pc.greater_equal(ts, cutoff_ms), pc.is_null(ts)))
    refs.protected = refs.live.extended([table_paths(unexpired, store)])
    refs.tombstones, refs.tombstone_ms = _tombstones(removes, refs.live, store)
    base = refs.protected.extended([table_paths(removes, store)])
    listing = snapshot.listing
    extra: list[pa.Array | pa.ChunkedArray] = []
    change_data: list[pa.Array] = []
    with ThreadPoolExecutor(_READ_WORKERS, thread_name_prefix="log-read") as pool:
        try:
            for found in pool.map(lambda n: read_json_paths(store, n, base), json_files(listing)):
                extra.append(found.new)
                change_data.append(found.change_data)
        except DeltaLogError as exc:
            message = unreadable_reference(exc, store, checkpoint=False)
            raise type(exc)(message, exc.path, exc.line) from exc
    for i in checkpoints_to_read(listing, snapshot):
        try:
            state = read_checkpoint(store, listing.checkpoints[i])
        except DeltaLogError as exc:
            message = unreadable_reference(exc, store, checkpoint=True)
            raise type(exc)(message, exc.path, exc.line) from exc
        extra += [base.new_paths(table_paths(part, store)) for part in (state.adds, state.removes)]
        del state
    refs.named_in_log = PathUnion([*base.layers, PathSet(chunked(extra))])
    refs.change_data = PathSet(pa.chunked_array(change_data, pa.string()))
    return refs
