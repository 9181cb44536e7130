"""``deltaguard history``: one entry per version of the retained log (from the oldest to the
newest listed commit), newest first, from the commits' ``commitInfo`` and ``txn`` actions (what
``DESCRIBE HISTORY`` shows, without Spark).

Every version gets an entry, whatever its commit file's :class:`CommitState`: a commit whose
lines cannot all be parsed (``damaged``), one that exists but cannot be read (``unreadable``: a
directory in its place, a dangling symbolic link, S3 403), and one that is not there
(``missing``) have ``problem`` set and ``finding``, the audit's code for it
(:func:`~deltaguard.tools.deltalog.listing.check_versions` gives a missing version's). Reading history never fails
on a damaged log.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from deltaguard.logstore.commit_names import commit_file_name
from deltaguard.tools.deltalog.actions import CommitInfo, Txn, parse_json_actions
from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.deltalog.findings import Finding
from deltaguard.tools.deltalog.listing import (
    LogListing,
    check_versions,
    list_log,
    unreadable_in_place,
)
from deltaguard.tools.deltalog.provenance import (
    CommitPath,
    Provenance,
    Writer,
    classify,
    temp_commit_versions,
)
from deltaguard.tools.progress import phase
from deltaguard.tools.storage import (
    S3Options,
    TableStore,
    open_table,
    read_each_with_metadata,
    table_not_found,
)
from deltaguard.tools.storage.errors import StorageError


class CommitState(StrEnum):
    """What became of a version's commit file."""

    OK = "ok"
    #: read, but some lines are not valid actions (finding corrupt-json-line/incomplete-action)
    DAMAGED = "damaged"
    #: it exists but could not be read (finding commit-unreadable)
    UNREADABLE = "unreadable"
    #: no commit file for a version between retained ones (finding version-gap(-covered))
    MISSING = "missing"


@dataclass(frozen=True)
class HistoryEntry:
    """One version. ``timestamp_ms`` is None when the commit is not listed (missing, or there
    but not a file) and could not be read; ``problem``
    says what is wrong and ``finding`` is the audit's code for it (None when ``state`` is
    ``ok``)."""

    version: int
    timestamp_ms: int | None
    operation: str | None
    parameters: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    txn_app_ids: dict[str, int] = field(default_factory=dict)
    engine: str | None = None
    user_metadata: str | None = None
    file: str = ""
    problem: str | None = None
    state: CommitState = CommitState.OK
    finding: str | None = None
    #: the writer ``engineInfo`` names (:class:`~.provenance.Writer`)
    writer: Writer = Writer.UNKNOWN
    #: how the commit was made (:class:`~.provenance.CommitPath`; ``unknown`` on local disk)
    commit_path: CommitPath = CommitPath.UNKNOWN
    #: the provenance mark on the commit object, as written (None without one)
    commit_mark: str | None = None

    @property
    def provenance(self) -> Provenance:
        return Provenance(self.writer, self.commit_path)

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, StrEnum) else v for k, v in asdict(self).items()}


#: ``history --json``'s ``schema``. Version 1 was a bare JSON list of the entries; version 2
#: had no ``state`` and ``finding``, no entry for a missing version, and always a timestamp;
#: version 3 had no ``writer``, ``commit_path`` and ``commit_mark``.
HISTORY_SCHEMA = "deltaguard.history/4"


def history_json(table: str, entries: list[HistoryEntry]) -> dict[str, Any]:
    """``history --json``: ``{"schema", "table" (as given), "entries": [entry, newest first]}``
    (docs/guides/audit.md)."""
    return {"schema": HISTORY_SCHEMA, "table": table, "entries": [e.to_json() for e in entries]}


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _entry(
    version: int,
    rel: str,
    data: tuple[bytes, dict[str, str] | None] | StorageError,
    mtime_ms: int | None,
    previous: int | None,
    evidence: _Evidence,
) -> HistoryEntry:
    """The entry of a commit file read as ``data`` (its bytes and user metadata, or the error
    reading it): its in-commit timestamp, else ``mtime_ms`` (None if unlisted) made later than
    ``previous``; its provenance (:func:`.provenance.classify`)."""
    ts = mtime_ms
    if ts is not None and previous is not None and ts <= previous:
        ts = previous + 1
    if isinstance(data, StorageError):
        return HistoryEntry(
            version, ts, None, file=rel, problem=str(data), state=CommitState.UNREADABLE,
            finding="commit-unreadable",
        )  # fmt: skip
    body, metadata = data
    parsed = parse_json_actions(body)
    actions = parsed.actions
    info = next((a for a in actions if isinstance(a, CommitInfo)), CommitInfo({}))
    ict = info.raw.get("inCommitTimestamp")
    if isinstance(ict, int) and not isinstance(ict, bool):
        ts = ict
    problem, state, finding = None, CommitState.OK, None
    if parsed.errors:
        error = parsed.errors[0]
        problem = f"line {error.line}: {error.message}"
        state = CommitState.DAMAGED
        finding = "incomplete-action" if error.incomplete else "corrupt-json-line"
    engine = _str(info.get("engineInfo"))
    origin = classify(
        engine,
        metadata,
        temp_commit=version in evidence.temp_versions,
        dynamodb_entry=version in evidence.dynamodb_versions,
    )
    return HistoryEntry(
        version,
        ts,
        _str(info.get("operation")),
        _dict(info.get("operationParameters")),
        _dict(info.get("operationMetrics")),
        {a.app_id: a.version for a in actions if isinstance(a, Txn)},
        engine,
        _str(info.get("userMetadata")),
        rel,
        problem,
        state,
        finding,
        origin.writer,
        origin.path,
        None if origin.mark is None else str(origin.mark),
    )


@dataclass(frozen=True)
class _Evidence:
    """What tells Delta's DynamoDB store from its single-driver store for unmarked Spark
    commits: versions with a listed temp commit, versions with a DynamoDB entry."""

    temp_versions: set[int]
    dynamodb_versions: set[int]


def _missing(version: int, rel: str, finding: Finding) -> HistoryEntry:
    return HistoryEntry(
        version, None, None, file=rel, problem=finding.message, state=CommitState.MISSING,
        finding=finding.code,
    )  # fmt: skip


def read_history(
    table: str | TableStore,
    *,
    s3: S3Options | None = None,
    limit: int | None = None,
    listing: LogListing | None = None,
    gaps: bool = True,
    dynamodb_versions: set[int] | None = None,
) -> list[HistoryEntry]:
    """Every version of the retained log, newest first (at most ``limit``). The timestamp is
    the in-commit timestamp when the commit has one, else the commit file's modification time,
    made strictly increasing as Delta does. With ``gaps`` (the default), a version with no
    listed commit file between the oldest and the newest listed one is an entry too: its file
    is read once more, so one that is there but unlisted (a directory, a dangling link) or
    unreadable is ``unreadable``, one that is not there ``missing`` (``gaps=False``: the
    listed commits only, for a ``listing`` that holds some commits only). Each entry's
    provenance comes from the same GET (:mod:`.provenance`); ``dynamodb_versions``: the
    versions with a DynamoDB entry, when the caller read them. Raises
    :class:`TableNotFoundError` or :class:`StorageError` (the log cannot be listed)."""
    store = open_table(table, s3) if isinstance(table, str) else table
    if listing is None:
        with phase("history: listing the log"):
            listing = list_log(store)
    if not listing.commits:
        raise table_not_found(store, f"no commits in {LOG_DIR}/")
    missing = check_versions(listing).missing if gaps else {}
    versions = sorted([*listing.commits, *missing])
    rels = [f"{LOG_DIR}/{listing.commits.get(v) or commit_file_name(v)}" for v in versions]
    with phase(f"history: reading {len(rels):,} commits", total=len(rels)) as shown:
        read = read_each_with_metadata(store, rels, on_read=shown.advance)
    evidence = _Evidence(temp_commit_versions(listing.temp_files), dynamodb_versions or set())
    entries: list[HistoryEntry] = []
    previous: int | None = None
    for version, rel, data in zip(versions, rels, read, strict=True):
        if version in missing and isinstance(data, StorageError) and not unreadable_in_place(data):
            entries.append(_missing(version, rel, missing[version]))
            continue
        name = rel[len(LOG_DIR) + 1 :]
        mtime = listing.mtime_ms(name) if name in listing.files else None
        entry = _entry(version, rel, data, mtime, previous, evidence)
        if entry.timestamp_ms is not None:
            previous = entry.timestamp_ms
        entries.append(entry)
    entries.reverse()
    return entries[:limit] if limit is not None else entries
