"""``deltaguard history``: one entry per retained commit, newest first, from the commits'
``commitInfo`` and ``txn`` actions (what ``DESCRIBE HISTORY`` shows, without Spark).

A commit whose lines cannot all be parsed still gets an entry, with ``problem`` set; reading
history never fails on a damaged commit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from deltaguard.tools.deltalog.actions import CommitInfo, Txn, parse_json_actions
from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.deltalog.listing import LogListing, list_log
from deltaguard.tools.progress import phase
from deltaguard.tools.storage import (
    S3Options,
    TableStore,
    open_table,
    read_each,
    table_not_found,
)
from deltaguard.tools.storage.errors import StorageError


@dataclass(frozen=True)
class HistoryEntry:
    version: int
    timestamp_ms: int
    operation: str | None
    parameters: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    txn_app_ids: dict[str, int] = field(default_factory=dict)
    engine: str | None = None
    user_metadata: str | None = None
    file: str = ""
    problem: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


#: ``history --json``'s ``schema``. Version 1 was a bare JSON list of the entries.
HISTORY_SCHEMA = "deltaguard.history/2"


def history_json(table: str, entries: list[HistoryEntry]) -> dict[str, Any]:
    """``history --json``: ``{"schema", "table" (as given), "entries": [entry, newest first]}``
    (docs/guides/audit.md)."""
    return {"schema": HISTORY_SCHEMA, "table": table, "entries": [e.to_json() for e in entries]}


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def read_history(
    table: str | TableStore,
    *,
    s3: S3Options | None = None,
    limit: int | None = None,
    listing: LogListing | None = None,
) -> list[HistoryEntry]:
    """The retained commits, newest first (at most ``limit``). The timestamp is the in-commit
    timestamp when the commit has one, else the commit file's modification time, made strictly
    increasing as Delta does. Raises :class:`TableNotFoundError` or :class:`StorageError`."""
    store = open_table(table, s3) if isinstance(table, str) else table
    if listing is None:
        with phase("history: listing the log"):
            listing = list_log(store)
    if not listing.commits:
        raise table_not_found(store, f"no commits in {LOG_DIR}/")
    versions = sorted(listing.commits)
    entries: list[HistoryEntry] = []
    previous: int | None = None
    rels = [f"{LOG_DIR}/{listing.commits[v]}" for v in versions]
    with phase(f"history: reading {len(rels):,} commits", total=len(rels)) as shown:
        read = read_each(store, rels, on_read=shown.advance)
    for version, rel, data in zip(versions, rels, read, strict=True):
        name = listing.commits[version]
        problem = None
        if isinstance(data, StorageError):
            actions, problem = [], str(data)
        else:
            parsed = parse_json_actions(data)
            actions = parsed.actions
            if parsed.errors:
                problem = f"line {parsed.errors[0].line}: {parsed.errors[0].message}"
        info = next((a for a in actions if isinstance(a, CommitInfo)), CommitInfo({}))
        txns = {a.app_id: a.version for a in actions if isinstance(a, Txn)}
        ts = listing.mtime_ms(name)
        ict = info.raw.get("inCommitTimestamp")
        if isinstance(ict, int) and not isinstance(ict, bool):
            ts = ict
        elif previous is not None and ts <= previous:
            ts = previous + 1
        previous = ts
        entries.append(
            HistoryEntry(
                version,
                ts,
                _str(info.get("operation")),
                _dict(info.get("operationParameters")),
                _dict(info.get("operationMetrics")),
                txns,
                _str(info.get("engineInfo")),
                _str(info.get("userMetadata")),
                rel,
                problem,
            )
        )
    entries.reverse()
    return entries[:limit] if limit is not None else entries
