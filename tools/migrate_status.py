"""``deltaguard migrate status``: which phase of the move from DynamoDB to conditional writes a
table is in (docs/guides/migration.md), the evidence, and what is safe to do next.

The evidence (:mod:`deltaguard.tools.deltalog.protocol_mix`): each recent commit's DynamoDB
entry (with or without the transition marker, or none) and its provenance
(:mod:`deltaguard.tools.deltalog.provenance`, the classification ``history`` and ``audit``
use), which names the writer kind where it is a conditional-only writer (a delta-rs commit, or
one marked by deltaguard's conditional store, is ``conditional``, whatever entry its version
has); a writer on Delta's single-driver store next to others is unsafe too. Exit codes
(:class:`~deltaguard.tools.exit_codes.ExitCode`): 0 the table is consistently in a phase, 1 an
unsafe mix (a plain DynamoDB commit after a conditional one), 2 what it needs could not be read
(the table, its log, the DynamoDB table) or no commit is recent enough to tell.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltaguard.tools.deltalog.listing import LogListing, list_log
from deltaguard.tools.deltalog.protocol_mix import (
    Phase,
    ProtocolEvidence,
    WriterKind,
    gather_evidence,
    label_by_content,
)
from deltaguard.tools.deltalog.provenance import CommitPath, unsafe_writers, version_ranges
from deltaguard.tools.deltalog.times import iso_utc
from deltaguard.tools.exit_codes import ExitCode
from deltaguard.tools.storage import TableStore, table_not_found

if TYPE_CHECKING:
    from deltaguard.tools.deltalog.history import HistoryEntry

#: Commits shown with their engineInfo in the text report (JSON has them all).
SHOWN_COMMITS = 20


class MigrateStatusError(RuntimeError):
    """What the status needs could not be read; the message says what (exit code 2)."""


@dataclass
class MigrationStatus:
    table: str
    dynamodb_table: str
    evidence: ProtocolEvidence
    phase: Phase
    unsafe: bool
    next_step: str

    @property
    def exit_code(self) -> int:
        return int(ExitCode.FOUND if self.unsafe else ExitCode.CLEAN)

    def to_json(self) -> dict[str, Any]:
        last_plain = self.evidence.last_of(WriterKind.PLAIN)
        return {
            "schema": "deltaguard.migrate-status/1",
            "table": self.table,
            "dynamodb_table": self.dynamodb_table,
            "phase": str(self.phase),
            "unsafe": self.unsafe,
            "next": self.next_step,
            "last_unmarked_entry": None if last_plain is None else last_plain.to_json(),
            **{k: v for k, v in self.evidence.to_json().items() if k != "phase"},
        }


def _when(ms: int | None) -> str:
    return "time unknown" if ms is None else iso_utc(ms)


def next_step(evidence: ProtocolEvidence) -> str:
    """What is safe to do next, given the evidence (docs/guides/migration.md names the phases)."""
    mix = evidence.unsafe_mix()
    if mix is not None:
        return (
            f"UNSAFE: version {mix[1].version} was committed by a plain DynamoDB client after "
            f"version {mix[0].version} was committed without DynamoDB. Stop the "
            "conditional writers now, move every remaining s3-dynamodb job (readers too) to "
            "s3-dynamodb-transition, and run `deltaguard audit` with --dynamodb-table."
        )
    last_plain = evidence.last_of(WriterKind.PLAIN)
    conditional = evidence.of_kind(WriterKind.CONDITIONAL)
    phase = evidence.phase()
    if phase is Phase.DYNAMODB:
        return (
            "Phase 1: move each DynamoDB job, readers included, to the s3-dynamodb-transition "
            "preset, one at a time. Do not start conditional writers yet."
        )
    if phase is Phase.CONDITIONAL:
        return (
            "Phase 3 is done (or the table never used DynamoDB): no recent commit has a "
            "DynamoDB entry. Once no entry is newer than the entries' TTL, retire the DynamoDB "
            "table for this table."
        )
    if last_plain is not None and not conditional:
        return (
            f"Phase 1 in progress: an entry without the transition marker was written at "
            f"version {last_plain.version} ({_when(last_plain.written_ms)}): some job still runs a plain "
            "DynamoDB store (or reader). Do not start conditional writers until no unmarked "
            "entry appears for a whole window (longer than your longest job, shorter than the "
            "entries' TTL)."
        )
    if not conditional:
        return (
            "Phase 1 is done: every recent entry carries the transition marker. Conditional "
            "writers (s3-conditional, delta-rs >= 1.6.1, Trino) may start (phase 2), provided "
            "the window covers your longest job."
        )
    return (
        "Phase 2: conditional writers commit next to transition writers. Next (phase 3): move "
        "the s3-dynamodb-transition jobs to s3-conditional, one at a time."
    )


def migrate_status(
    store: TableStore,
    dynamodb_client: Any,
    dynamodb_table: str,
    table_paths: tuple[str, ...],
    *,
    window_s: float | None = None,
    now_ms: int | None = None,
) -> MigrationStatus:
    """Reads the log and the table's DynamoDB entries and decides. Raises
    :class:`MigrateStatusError` if the DynamoDB table cannot be read or no commit is recent
    enough; the log reader's own errors (DeltaLogError, OSError) propagate."""
    listing = list_log(store)
    if not listing.commits:
        raise table_not_found(store, "no commits in _delta_log/")
    entries = _entries(dynamodb_client, dynamodb_table, table_paths)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    evidence = gather_evidence(listing, entries, window_s=window_s, now_ms=now_ms)
    if not evidence.commits:
        raise MigrateStatusError(
            f"no commit of {store.uri} is recent enough to tell (window from "
            f"{_when(evidence.window_start_ms)}): commit once, or widen --window-hours"
        )
    history = _recent_history(store, listing, evidence)
    evidence.commits = [
        label_by_content(c, h.engine, h.commit_path) if h is not None else c
        for c in evidence.commits
        for h in [history.get(c.version)]
    ]
    single = [
        u
        for u in unsafe_writers({v: h.provenance for v, h in history.items()})
        if u.path is CommitPath.SINGLE_DRIVER
    ]
    step = next_step(evidence)
    if single:
        step = (
            f"UNSAFE: versions {version_ranges(single[0].versions)} were committed through "
            "Delta's single-driver store next to other writers; move that writer to the "
            f"{single[0].preset} preset first. " + step
        )
    return MigrationStatus(
        store.uri,
        dynamodb_table,
        evidence,
        evidence.phase(),
        evidence.unsafe_mix() is not None or bool(single),
        step,
    )


def _entries(
    dynamodb_client: Any, dynamodb_table: str, table_paths: tuple[str, ...]
) -> list[dict[str, Any]]:
    """The DynamoDB table's entries of each of ``table_paths``. Raises
    :class:`MigrateStatusError` if it cannot be read."""
    from botocore.exceptions import BotoCoreError, ClientError

    from deltaguard.logstore.aws_errors import describe
    from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore

    ddb = S3DynamoDBLogStore(None, dynamodb_client, dynamodb_table)
    try:
        return [e for path in table_paths for e in ddb.entries(path)]
    except (ClientError, BotoCoreError) as exc:
        raise MigrateStatusError(
            f"cannot read DynamoDB table {dynamodb_table}: {describe(exc)}"
        ) from None


def _recent_history(
    store: TableStore, listing: LogListing, evidence: ProtocolEvidence
) -> dict[int, HistoryEntry]:
    """The history entry (engine, commit path, provenance) of each recent commit, by version;
    the versions without a DynamoDB-written commit are read as such."""
    from deltaguard.tools.deltalog.history import read_history

    recent = LogListing(
        files=listing.files,
        commits={
            c.version: listing.commits[c.version]
            for c in evidence.commits
            if c.version in listing.commits
        },
    )
    dynamodb_versions = {
        c.version for c in evidence.commits if c.kind is not WriterKind.CONDITIONAL
    }
    entries = read_history(store, listing=recent, gaps=False, dynamodb_versions=dynamodb_versions)
    return {h.version: h for h in entries}


def render_text(status: MigrationStatus) -> str:
    """The human report: phase, evidence, the recent commits with their engineInfo, next step."""
    ev = status.evidence
    marked = ev.of_kind(WriterKind.TRANSITION)
    plain = ev.of_kind(WriterKind.PLAIN)
    conditional = ev.of_kind(WriterKind.CONDITIONAL)
    last_plain = ev.last_of(WriterKind.PLAIN)
    lines = [
        f"table {status.table}: phase {status.phase}{' (UNSAFE MIX)' if status.unsafe else ''}",
        f"evidence since {_when(ev.window_start_ms)} ({len(ev.commits)} commits):",
        f"  DynamoDB {status.dynamodb_table}: {len(marked)} entries with the transition marker, "
        f"{len(plain)} without",
        "  last unmarked entry: "
        + (
            "none in the window"
            if last_plain is None
            else f"version {last_plain.version} at {_when(last_plain.written_ms)}"
        ),
        f"  commits without a DynamoDB entry: {len(conditional)}"
        + (
            f" (versions {', '.join(str(c.version) for c in conditional[:10])}"
            f"{', ...' if len(conditional) > 10 else ''})"
            if conditional
            else ""
        ),
        "  recent commits (version, writer kind, engineInfo):",
    ]
    for c in ev.commits[-SHOWN_COMMITS:]:
        entry = f"  (DynamoDB entry: {c.entry_kind})" if c.entry_kind is not None else ""
        lines.append(f"    {c.version:>8}  {c.kind:<14}  {c.engine_info or '-'}{entry}")
    lines.append(f"next: {status.next_step}")
    return "\n".join(lines)
