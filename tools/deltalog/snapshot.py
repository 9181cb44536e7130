"""Snapshot replay: the state of a table at a version or a timestamp.

Reconciliation follows PROTOCOL.md ("Action Reconciliation"): start from the newest complete,
readable checkpoint at or before the version, then apply every later commit (or a compaction
covering a range whose commits were cleaned up) in order. A file is keyed by (decoded path,
deletion-vector unique id); the newest add or remove of a key wins; removes are kept as
tombstones (expiry is the caller's choice, see :meth:`Snapshot.unexpired_tombstones`). The
newest protocol and metaData win, txn per appId, domainMetadata per domain (``removed`` drops
it).

``_last_checkpoint`` only narrows the listing; when it is missing, damaged or stale (it names a
checkpoint that is not there) the whole ``_delta_log`` is listed instead. A checkpoint that
cannot be read is skipped for the next older one (recorded in ``LogSegment.skipped``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaguard.tools.deltalog import filetable
from deltaguard.tools.deltalog.actions import (
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    iter_json_actions,
    parse_json_actions,
)
from deltaguard.tools.deltalog.checkpoint import (
    LOG_DIR,
    CheckpointRef,
    CheckpointState,
    read_checkpoint,
)
from deltaguard.tools.deltalog.errors import (
    CorruptLogError,
    IncompleteActionError,
    VersionNotFoundError,
)
from deltaguard.tools.deltalog.features import check_readable
from deltaguard.tools.deltalog.filetable import FileActions
from deltaguard.tools.deltalog.history import read_history
from deltaguard.tools.deltalog.listing import (
    JsonPiece,
    LastCheckpointError,
    LogListing,
    json_chain,
    list_log,
    read_last_checkpoint,
)
from deltaguard.tools.deltalog.paths import (
    ABSOLUTE,
    is_absolute,
    relative_to_root,
    relativize,
)
from deltaguard.tools.deltalog.retention import DELETED_FILE_RETENTION
from deltaguard.tools.deltalog.times import iso_utc
from deltaguard.tools.storage import (
    S3Options,
    TableStore,
    open_table,
    read_many,
    table_not_found,
)
from deltaguard.tools.storage.errors import DeltaLogError, StorageError


@dataclass(frozen=True)
class LogSegment:
    """The files a snapshot was built from. ``skipped``: newer checkpoints that could not be
    read, with the reason."""

    version: int
    checkpoint: CheckpointRef | None
    pieces: tuple[JsonPiece, ...]
    skipped: tuple[tuple[CheckpointRef, str], ...] = ()


@dataclass
class Snapshot:
    """The reconciled state of a table at ``version``.

    ``adds`` are the live files, ``removes`` every tombstone still in the log (expired ones
    included: use :meth:`unexpired_tombstones`). Paths are decoded: relative to the table root,
    or absolute URIs for files outside it (an absolute path inside the root is given
    relative; :meth:`location` resolves either). ``timestamp_ms`` is the commit's timestamp
    (in-commit timestamp if present, else the commit file's modification time). ``listing`` is
    the listing the replay used: for the latest version it may start at the checkpoint that
    ``_last_checkpoint`` names (``listing.complete`` is then False); call :func:`list_log`
    for the whole log.
    """

    store: TableStore
    version: int
    timestamp_ms: int | None
    protocol: Protocol
    metadata: Metadata
    adds: FileActions
    removes: FileActions
    txns: dict[str, Txn]
    domain_metadata: dict[str, DomainMetadata]
    segment: LogSegment
    listing: LogListing
    commit_info: CommitInfo | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def table_uri(self) -> str:
        return self.store.uri

    @property
    def configuration(self) -> dict[str, str]:
        return dict(self.metadata.configuration)

    def deleted_file_retention_ms(self) -> int:
        """``delta.deletedFileRetentionDuration`` (:mod:`.retention`). Raises ValueError if the
        property is not a valid interval."""
        return DELETED_FILE_RETENTION.ms(self.metadata.configuration)

    def live_files(self) -> Iterator[AddFile]:
        """Typed live files (no stats: checkpoints are read pruned)."""
        return iter(self.adds)

    def tombstones(self) -> Iterator[RemoveFile]:
        return iter(self.removes)

    def unexpired_tombstones(self, now_ms: int) -> FileActions:
        """Tombstones with ``deletionTimestamp`` > now - retention (a tombstone without a
        timestamp never expires here: it is kept, to be safe)."""
        cutoff = now_ms - self.deleted_file_retention_ms()
        ts = self.removes.table["deletion_timestamp"]
        keep = pc.or_kleene(pc.greater(ts, cutoff), pc.is_null(ts))
        return FileActions(self.removes.table.filter(keep), RemoveFile)

    def location(self, path: str) -> str:
        """The absolute location of a decoded log path (relative or absolute)."""
        return path if is_absolute(path) else self.store.location(path)

    def live_locations(self) -> list[str]:
        """Absolute locations of every live file (what ``inputFiles()`` lists, decoded)."""
        paths = self.adds.table["path"]
        prefix = self.store.location("").rstrip("/") + "/"
        joined = pc.binary_join_element_wise(prefix, paths, "")
        absolute = pc.match_substring_regex(paths, ABSOLUTE)
        return pc.if_else(absolute, paths, joined).to_pylist()  # type: ignore[no-any-return]


def _listing_for(store: TableStore, want_latest: bool) -> LogListing:
    """The cheapest listing that can serve the request (see module docstring)."""
    if want_latest:
        try:
            hint = read_last_checkpoint(store)
        except (LastCheckpointError, StorageError):
            hint = None
        if hint is not None:
            partial = list_log(store, after_version=hint.version)
            if any(c.version == hint.version for c in partial.checkpoints):
                return partial
    return list_log(store)


def version_at(store: TableStore, listing: LogListing, timestamp_ms: int) -> int:
    """The newest version committed at or before ``timestamp_ms`` (the latest version for a
    time after it). Raises :class:`VersionNotFoundError` for a time before the oldest
    retained commit."""
    history = read_history(store, listing=listing, gaps=False)
    stamps = {e.version: e.timestamp_ms for e in history if e.timestamp_ms is not None}
    eligible = [v for v, ts in stamps.items() if ts <= timestamp_ms]
    if not eligible:
        oldest = min(stamps.values()) if stamps else None
        raise VersionNotFoundError(
            f"no version of {store.uri} was committed at or before {iso_utc(timestamp_ms)}"
            + (f" (oldest retained commit: {iso_utc(oldest)})" if oldest is not None else "")
        )
    return max(eligible)


class _Reconciler:
    """Newest-wins replay of JSON pieces on top of a checkpoint."""

    def __init__(self, store: TableStore) -> None:
        self.store = store
        self.files: dict[str, AddFile | RemoveFile] = {}
        self.protocol: Protocol | None = None
        self.metadata: Metadata | None = None
        self.txns: dict[str, Txn] = {}
        self.domains: dict[str, DomainMetadata] = {}
        self.commit_info: CommitInfo | None = None

    def apply_small(self, action: Any) -> None:
        if isinstance(action, Protocol):
            self.protocol = action
        elif isinstance(action, Metadata):
            self.metadata = action
        elif isinstance(action, Txn):
            self.txns[action.app_id] = action
        elif isinstance(action, DomainMetadata):
            if action.removed:
                self.domains.pop(action.domain, None)
            else:
                self.domains[action.domain] = action

    def apply_piece(self, store: TableStore, piece: JsonPiece, data: bytes, target: int) -> None:
        rel = f"{LOG_DIR}/{piece.name}"
        parsed = parse_json_actions(data)
        if parsed.errors:
            err = parsed.errors[0]
            if err.incomplete:
                raise IncompleteActionError(
                    f"{store.location(rel)}:{err.line}: incomplete action (the file is intact): "
                    f"{err.message}",
                    rel,
                    err.line,
                )
            raise CorruptLogError(f"{store.location(rel)}:{err.line}: {err.message}", rel, err.line)
        self.commit_info = None
        for action in parsed.actions:
            if isinstance(action, AddFile | RemoveFile):
                relative = relative_to_root(action.path, self.store)
                if relative is not None and relative != action.path:
                    action = dataclasses.replace(action, path=relative)
                dv = action.deletion_vector
                self.files[filetable.key_string(action.path, dv.unique_id if dv else None)] = action
            elif isinstance(action, CommitInfo):
                if piece.end == target:
                    self.commit_info = action
            else:
                self.apply_small(action)


def _merge(
    base: pa.Table,
    tail: list[AddFile | RemoveFile],
    touched: pa.Array,
    kind: type,
    store: TableStore,
) -> pa.Table:
    if base.num_rows:
        base = base.set_column(0, "path", relativize(base["path"], store))
    if len(touched) and base.num_rows:
        base = base.filter(pc.invert(pc.is_in(filetable.keys(base), value_set=touched)))
    newer = filetable.from_actions(a for a in tail if isinstance(a, kind))
    return pa.concat_tables([base, newer]) if newer.num_rows else base


def commit_info_in(lines: Callable[[], Iterator[bytes]]) -> CommitInfo | None:
    """The ``commitInfo`` action of one commit file (``lines()`` yields its lines, each call
    from the start), or None. Writers put it on a line of its own that starts with
    ``{"commitInfo"`` (Spark and delta-rs write it first), so only such lines are parsed; a
    commit without one is parsed whole, a second pass (a checkpointed commit can hold hundreds
    of thousands of adds, and only this one action is needed)."""
    for line in lines():
        if line.startswith(b'{"commitInfo"'):
            parsed = parse_json_actions(line)
            if parsed.actions and isinstance(parsed.actions[0], CommitInfo):
                return parsed.actions[0]
    return next((a for a in iter_json_actions(lines()) if isinstance(a, CommitInfo)), None)


def load_snapshot(
    table: str | TableStore,
    version: int | None = None,
    timestamp_ms: int | None = None,
    *,
    s3: S3Options | None = None,
    listing: LogListing | None = None,
) -> Snapshot:
    """The table's snapshot at ``version``, at the newest version committed at or before
    ``timestamp_ms``, or at the latest version.

    ``table`` is a location (local path, ``file:``, ``s3://``, ``s3a://``) or a store;
    ``listing`` reuses a full listing made by the caller. Raises :class:`TableNotFoundError`,
    :class:`VersionNotFoundError`, :class:`CorruptLogError`, :class:`UnsupportedTableError`
    or :class:`StorageError` (all :class:`DeltaLogError`), each naming the file at fault.
    """
    if version is not None and timestamp_ms is not None:
        raise ValueError("give a version or a timestamp, not both")
    store = open_table(table, s3) if isinstance(table, str) else table
    if listing is None:
        listing = _listing_for(store, version is None and timestamp_ms is None)
        if not listing.complete:
            try:
                return _load(store, listing, version, timestamp_ms)
            except DeltaLogError:
                listing = list_log(store)  # the hinted checkpoint did not serve: list it all
    return _load(store, listing, version, timestamp_ms)


def _load(
    store: TableStore, listing: LogListing, version: int | None, timestamp_ms: int | None
) -> Snapshot:
    latest = listing.latest_version
    if latest is None:
        raise table_not_found(store, f"no commits in {LOG_DIR}/")
    if timestamp_ms is not None:
        version = version_at(store, listing, timestamp_ms)
    target = latest if version is None else version
    if target > latest or target < 0:
        raise VersionNotFoundError(f"{store.uri} has no version {target} (latest: {latest})")
    skipped: list[tuple[CheckpointRef, str]] = []
    for ref in [*reversed([c for c in listing.checkpoints if c.version <= target]), None]:
        start = ref.version + 1 if ref is not None else 0
        chain = json_chain(listing, start, target)
        if isinstance(chain, int):
            raise unreconstructable(store.uri, target, chain, ref, skipped)
        state: CheckpointState | None = None
        if ref is not None:
            try:
                state = read_checkpoint(store, ref)
            except CorruptLogError as exc:
                skipped.append((ref, str(exc)))
                continue
        return _replay(store, listing, target, ref, state, chain, skipped)
    raise AssertionError("unreachable: the loop ends with ref=None")


def unreconstructable(
    uri: str,
    target: int,
    missing: int,
    ref: CheckpointRef | None,
    skipped: list[tuple[CheckpointRef, str]],
) -> CorruptLogError | VersionNotFoundError:
    """Why version ``target`` cannot be built from checkpoint ``ref`` (None: from commit 0)
    when commit ``missing`` after it is gone, the older checkpoints in ``skipped`` having been
    damaged (with why): the first damaged checkpoint if every usable one was, else the missing
    commit. One wording for both orphans engines and the audit."""
    if ref is None and skipped:
        return CorruptLogError(
            f"{uri}: every usable checkpoint is damaged ({skipped[0][1]})", skipped[0][0].files[0]
        )
    return VersionNotFoundError(
        f"{uri}: cannot reconstruct version {target}: commit "
        f"{LOG_DIR}/{missing:020d}.json is missing"
        + (
            f" after checkpoint {ref.version}"
            if ref is not None
            else " and no checkpoint covers it"
        )
    )


def _replay(
    store: TableStore,
    listing: LogListing,
    target: int,
    ref: CheckpointRef | None,
    state: CheckpointState | None,
    chain: list[JsonPiece],
    skipped: list[tuple[CheckpointRef, str]],
) -> Snapshot:
    rec = _Reconciler(store)
    if state is not None:
        for action in state.actions:
            rec.apply_small(action)
    contents = read_many(store, [f"{LOG_DIR}/{piece.name}" for piece in chain])
    for piece, data in zip(chain, contents, strict=True):
        rec.apply_piece(store, piece, data, target)
    if rec.protocol is None or rec.metadata is None:
        raise CorruptLogError(
            f"{store.uri}: version {target} has no {'protocol' if rec.protocol is None else 'metaData'} action",
            f"{LOG_DIR}/{chain[0].name}" if chain else None,
        )
    check_readable(rec.protocol, store.uri)
    tail = list(rec.files.values())
    touched = pa.array(list(rec.files), pa.string())
    base_adds = state.adds if state is not None else filetable.empty()
    base_removes = state.removes if state is not None else filetable.empty()
    adds = _merge(base_adds, tail, touched, AddFile, store)
    removes = _merge(base_removes, tail, touched, RemoveFile, store)
    commit_name = listing.commits.get(target)
    if rec.commit_info is None and commit_name is not None:
        # the snapshot is a checkpoint with no commit after it: its commit still has the
        # commitInfo (the protocol reads commitInfo from the snapshot version's commit only)
        try:
            rel = f"{LOG_DIR}/{commit_name}"
            rec.commit_info = commit_info_in(lambda: store.read_lines(rel))
        except StorageError:
            pass
    timestamp = rec.commit_info.timestamp if rec.commit_info is not None else None
    if rec.commit_info is None or rec.commit_info.raw.get("inCommitTimestamp") is None:
        timestamp = listing.mtime_ms(commit_name) if commit_name else timestamp
    segment = LogSegment(target, ref, tuple(chain), tuple(skipped))
    return Snapshot(
        store,
        target,
        timestamp,
        rec.protocol,
        rec.metadata,
        FileActions(adds, AddFile),
        FileActions(removes, RemoveFile),
        rec.txns,
        rec.domains,
        segment,
        listing,
        rec.commit_info,
        [f"skipped checkpoint {r.files[0]}: {why}" for r, why in skipped],
    )


__all__ = [
    "DeltaLogError",
    "LogSegment",
    "Snapshot",
    "load_snapshot",
    "version_at",
]
