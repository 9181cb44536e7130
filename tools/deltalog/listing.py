"""The ``_delta_log`` directory as a classified listing, and ``_last_checkpoint``.

:func:`list_log` lists ``_delta_log`` once (optionally only names after a version, using the
store's sorted ``start_after`` listing) and sorts every entry into commits, checkpoints,
checksums, compactions, temp files, Hadoop ``.crc`` checksums, staged commits
(``_staged_commits/``: commits a catalog has not ratified yet, never interpreted here) and
stray files. Nothing here reads file contents except
:func:`read_last_checkpoint`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from deltaguard.tools.deltalog.checkpoint import LOG_DIR, CheckpointRef, group_checkpoints
from deltaguard.tools.deltalog.names import (
    AUXILIARY_FILES,
    LAST_CHECKPOINT,
    STAGED_COMMIT_DIRS,
    LogFileKind,
    LogFileName,
    is_hadoop_checksum,
    is_temp_name,
    parse_log_name,
)
from deltaguard.tools.storage import FileInfo, TableStore
from deltaguard.tools.storage.errors import FileMissingError


@dataclass
class LogListing:
    """One listing of ``_delta_log``. ``complete`` is False when the listing started after a
    version (versions below it were not looked at). Names are relative to ``_delta_log``."""

    files: dict[str, FileInfo] = field(default_factory=dict)
    commits: dict[int, str] = field(default_factory=dict)
    checkpoints: list[CheckpointRef] = field(default_factory=list)
    incomplete_checkpoints: list[CheckpointRef] = field(default_factory=list)
    checksums: dict[int, str] = field(default_factory=dict)
    compactions: list[LogFileName] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)
    stray_files: list[str] = field(default_factory=list)
    #: The listing's entry of each file in ``temp_files`` under ``.tmp/`` (size, mtime).
    temp_infos: dict[str, FileInfo] = field(default_factory=dict)
    #: Hadoop ``.<name>.crc`` checksum files directly in ``_delta_log``.
    hadoop_checksums: list[str] = field(default_factory=list)
    #: Files under ``_staged_commits/`` (or ``_commits/``), e.g. ``_staged_commits/x.json``.
    staged_commits: list[str] = field(default_factory=list)
    #: The listing's entry of each file in ``staged_commits`` (size, mtime).
    staged_infos: dict[str, FileInfo] = field(default_factory=dict)
    has_last_checkpoint: bool = False
    complete: bool = True

    @property
    def latest_version(self) -> int | None:
        """The newest version that has a commit or a checkpoint."""
        candidates = [*self.commits, *(c.version for c in self.checkpoints)]
        return max(candidates) if candidates else None

    def mtime_ms(self, name: str) -> int:
        return self.files[name].mtime_ms


#: Listings of ``_delta_log`` :func:`list_log` makes at most while its newest commits have a gap.
LISTINGS_WHILE_A_GAP = 3


def list_log(store: TableStore, after_version: int | None = None) -> LogListing:
    """Lists and classifies ``_delta_log`` (plus ``_delta_log/.tmp/``, the DynamoDB store's
    temp commits). With ``after_version``, only names sorting after that version's prefix are
    listed (``complete`` is then False).

    A listing that runs while a writer commits can miss a commit created during it and still
    hold a later one (a local directory is not listed in name order; an S3 listing may have
    paged past the key): the log then looks as if a commit were missing. So while the commits
    after the newest checkpoint have a gap, the log is listed again, up to
    :data:`LISTINGS_WHILE_A_GAP` listings in all; a gap that stays is the log's, and callers
    report it as before."""
    listing = _list_once(store, after_version)
    for _ in range(LISTINGS_WHILE_A_GAP - 1):
        if not _commit_gap(listing):
            break
        listing = _list_once(store, after_version)
    return listing


def _commit_gap(listing: LogListing) -> bool:
    """Whether a commit is missing between the newest checkpoint (or the oldest listed commit)
    and the newest commit: what a listing racing a writer can show."""
    if not listing.commits:
        return False
    checkpoints = [c.version for c in listing.checkpoints]
    base = max(checkpoints) + 1 if checkpoints else min(listing.commits)
    newest = max(listing.commits)
    return any(v not in listing.commits for v in range(base, newest + 1))


def _list_once(store: TableStore, after_version: int | None) -> LogListing:
    start_after = f"{after_version:020d}" if after_version is not None else None
    listing = LogListing(complete=after_version is None)
    entries = store.list_dir(LOG_DIR, start_after=start_after)
    names: list[LogFileName] = []
    for info in entries:
        name = info.path[len(LOG_DIR) + 1 :]
        listing.files[name] = info
        parsed = parse_log_name(name)
        if parsed is None:
            if is_hadoop_checksum(name):
                listing.hadoop_checksums.append(name)
                continue
            if is_temp_name(name):
                listing.temp_files.append(name)
            elif name not in AUXILIARY_FILES:
                listing.stray_files.append(name)
            continue
        if parsed.kind is LogFileKind.LAST_CHECKPOINT:
            listing.has_last_checkpoint = True
        elif parsed.kind is LogFileKind.COMMIT:
            listing.commits[parsed.version] = name
        elif parsed.kind is LogFileKind.CHECKSUM:
            listing.checksums[parsed.version] = name
        elif parsed.kind is LogFileKind.COMPACTION:
            listing.compactions.append(parsed)
        else:
            names.append(parsed)
    listing.checkpoints, listing.incomplete_checkpoints = group_checkpoints(names)
    if after_version is None:
        for info in store.list_dir(f"{LOG_DIR}/.tmp"):
            name = info.path[len(LOG_DIR) + 1 :]
            listing.temp_files.append(name)
            listing.temp_infos[name] = info
        for staged in STAGED_COMMIT_DIRS:
            for info in store.list_dir(f"{LOG_DIR}/{staged}"):
                staged_name = info.path[len(LOG_DIR) + 1 :]
                listing.staged_commits.append(staged_name)
                listing.staged_infos[staged_name] = info
    return listing


@dataclass(frozen=True)
class LastCheckpoint:
    """``_delta_log/_last_checkpoint``: the hint to the newest checkpoint."""

    version: int
    size: int | None
    parts: int | None
    v2_path: str | None
    raw: dict[str, Any]


class LastCheckpointError(ValueError):
    """``_last_checkpoint`` exists but is not valid JSON with an integer version."""


def read_last_checkpoint(store: TableStore) -> LastCheckpoint | None:
    """The parsed hint, None if absent. Raises :class:`LastCheckpointError` if damaged and
    :class:`StorageError` if unreadable."""
    rel = f"{LOG_DIR}/{LAST_CHECKPOINT}"
    try:
        data = store.read(rel)
    except FileMissingError:
        return None
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise LastCheckpointError(f"not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise LastCheckpointError("not a JSON object")
    version, size, parts = obj.get("version"), obj.get("size"), obj.get("parts")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise LastCheckpointError(f"version must be a non-negative integer, got {version!r}")
    v2 = obj.get("v2Checkpoint")
    v2_path = v2.get("path") if isinstance(v2, dict) and isinstance(v2.get("path"), str) else None
    return LastCheckpoint(
        version,
        size if isinstance(size, int) else None,
        parts if isinstance(parts, int) else None,
        v2_path,
        obj,
    )
