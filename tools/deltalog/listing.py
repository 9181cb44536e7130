"""The ``_delta_log`` directory as a classified listing, and ``_last_checkpoint``.

:func:`list_log` lists ``_delta_log`` once (optionally only names after a version, using the
store's sorted ``start_after`` listing) and sorts every entry into commits, checkpoints,
checksums, compactions, temp files, Hadoop ``.crc`` checksums, staged commits
(``_staged_commits/``: commits a catalog has not ratified yet, never interpreted here) and
stray files. Nothing here reads file contents except
:func:`read_last_checkpoint`.

From one listing, also: :func:`json_chain`, the JSON files a replay applies after a
checkpoint, and :func:`check_versions`, the versions the log is missing (the audit's and
history's one reading of a gap).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import orjson

from deltaguard.logstore.commit_names import commit_file_name
from deltaguard.tools.deltalog.checkpoint import LOG_DIR, CheckpointRef, group_checkpoints
from deltaguard.tools.deltalog.findings import Finding
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
from deltaguard.tools.storage.errors import FileMissingError, StorageError


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


@dataclass(frozen=True)
class JsonPiece:
    """One JSON file applied after the checkpoint: a commit (start == end) or a compaction."""

    start: int
    end: int
    name: str


def json_chain(listing: LogListing, start: int, target: int) -> list[JsonPiece] | int:
    """The JSON files covering versions [start, target] in order (commits, and compactions
    where a commit is missing), or the first version neither covers."""
    pieces: list[JsonPiece] = []
    version = start
    compactions: dict[int, list[tuple[int, str]]] = {}
    for c in listing.compactions:
        compactions.setdefault(c.version, []).append((c.end_version or c.version, c.name))
    while version <= target:
        if version in listing.commits:
            pieces.append(JsonPiece(version, version, listing.commits[version]))
            version += 1
            continue
        ends = [(e, name) for e, name in compactions.get(version, []) if e <= target]
        if not ends:
            return version
        end, name = max(ends)
        pieces.append(JsonPiece(version, end, name))
        version = end + 1
    return pieces


# The versions a log is missing, read from one listing: the audit's version findings
# (``version-gap``, ``version-gap-covered``, ``history-truncated``, ``log-cleaned-up``) and, for
# each commit missing between the oldest and the newest retained one, the finding that reports
# it (what ``deltaguard history`` shows in that version's row). One reading for both, so history
# and the audit never disagree about a gap.


@dataclass(frozen=True)
class VersionCheck:
    """``findings``: what the audit reports, in its order. ``missing``: each version without a
    commit file between the oldest and the newest listed commit, mapped to the finding about
    its run of missing versions (``version-gap``: the requested state needs it;
    ``version-gap-covered``: a later checkpoint or a compaction covers it)."""

    findings: list[Finding] = field(default_factory=list)
    missing: dict[int, Finding] = field(default_factory=dict)


def unreadable_in_place(data: bytes | StorageError) -> StorageError | None:
    """A version without a listed commit file, its ``N.json`` read once more (its bytes, or
    the error reading it): the error when something is there that cannot be read (a
    directory, a dangling symbolic link, S3 403: ``commit-unreadable``, history's
    ``unreadable``), None otherwise (not there: a gap, ``missing``). The one rule for both
    history and the audit."""
    if isinstance(data, StorageError) and not isinstance(data, FileMissingError):
        return data
    return None


def _log(name: str) -> str:
    return f"{LOG_DIR}/{name}"


def _holes(versions: list[int]) -> list[tuple[int, int]]:
    """The runs ``(start, end)`` of versions missing between the first and the last of the
    sorted ``versions``."""
    return [(a + 1, b - 1) for a, b in pairwise(versions) if b > a + 1]


def check_versions(listing: LogListing, target: int | None = None) -> VersionCheck:
    """The version findings for the state at ``target`` (default: the latest version)."""
    check = VersionCheck()
    commits = sorted(listing.commits)
    if not commits:
        return check
    first, last = commits[0], commits[-1]
    latest = listing.latest_version if target is None else target
    chain_ok = False
    missing: int | None = None
    for ref in [
        *reversed([c for c in listing.checkpoints if latest is not None and c.version <= latest]),
        None,
    ]:
        start = ref.version + 1 if ref is not None else 0
        chain = json_chain(listing, start, latest if latest is not None else last)
        if not isinstance(chain, int):
            chain_ok = True
            break
        if missing is None:
            missing = chain  # the newest checkpoint's view: what the latest state lacks
    needed: Finding | None = None
    if not chain_ok:
        if first > 0 and not any(c.version >= first - 1 for c in listing.checkpoints):
            check.findings.append(
                Finding.of(
                    "history-truncated",
                    f"the oldest retained commit is {first} and no checkpoint covers versions "
                    f"before it",
                    _log(listing.commits[first]),
                )
            )
        else:
            needed = Finding.of(
                "version-gap",
                f"commit {missing} is missing: version {latest} cannot be reconstructed",
                _log(commit_file_name(missing or 0)),  # set: a chain that fails names its gap
            )
            check.findings.append(needed)
    for start, end in _holes(commits):
        span = f"{start}" if start == end else f"{start}-{end}"
        holds_needed = missing is not None and start <= missing <= end
        if chain_ok:  # the requested state was reconstructable, so no hole is on its path
            finding = Finding.of(
                "version-gap-covered",
                f"commits {span} are missing between retained commits (a later checkpoint or a "
                "compaction covers them)",
                _log(commit_file_name(start)),
            )
            check.findings.append(finding)
        elif holds_needed and needed is not None:
            finding = needed
        else:
            finding = Finding.of(
                "version-gap", f"commits {start}-{end} are missing", _log(commit_file_name(start))
            )
            if not holds_needed:
                check.findings.append(finding)
        check.missing.update(dict.fromkeys(range(start, end + 1), finding))
    if first > 0 and any(c.version >= first - 1 for c in listing.checkpoints):
        check.findings.append(
            Finding.of(
                "log-cleaned-up", f"commits before version {first} were removed by log cleanup"
            )
        )
    return check
