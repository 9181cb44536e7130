"""What ``deltaguard repair`` does, behind the thin click command in :mod:`deltaguard.tools.cli`.

1. List the log; plan the DynamoDB temp commits (:mod:`.stranded`). A refusal (a version only
   the DynamoDB entry could prove, an entry naming a temp file that is not there) stops here:
   exit 2, nothing written.
2. With ``--yes``: restore each provable temp commit (create-exclusive), complete the entries.
3. The log's own damage (:mod:`.log_repair`): broken checkpoints and a wrong
   ``_last_checkpoint``, planned (dry run) or rebuilt from the commits (``--yes``). Versions
   nothing can rebuild are named and nothing is written: exit 1, or exit 2 when the latest
   version is among them (the table cannot be read).
3b. Replay the latest snapshot, refuse a table deltaguard may not write (exit 2), find the
   dangling references (:mod:`.damage`).
4. Name the audit's other errors, which no remove commit fixes (``not repaired: ...``, exit 1):
   the table is never called repaired while the audit would still fail it.
5. Dry run (no ``--yes``): print the plan; exit 1 if there is something to repair, else 0.
6. ``--yes``: right before committing, re-read the log and re-check the planned files (a file
   that reappeared, or a version another writer committed, changes the plan); commit one
   version through the table's protocol (:mod:`.committer`); when another writer takes the
   version, read the commits that won (:mod:`.catch_up`), drop the entries they decided
   about, and try again at the next version (up to ``attempts`` times; a protocol or metadata
   change re-plans on a full snapshot). Never an overwrite.

Exit codes (:class:`~deltaguard.tools.exit_codes.ExitCode`): 0 nothing to repair, or all
repaired; 1 dry run with something to repair, or damage no repair can fix (a gap with no
source) left after the run, or a temp commit that may be a stranded commit only
``--dynamodb-table`` can prove; 2 the table could not be read or was refused, a setting was
refused, or a commit's outcome is unknown; 130 stopped by Ctrl-C (143 SIGTERM, the command's
generic line). Each line of output is printed when its step is
done, so an interrupted run leaves a true record of what it did.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from botocore.exceptions import BotoCoreError, ClientError

from deltaguard.logstore.commit_names import commit_file_name
from deltaguard.logstore.errors import LogFileExistsError
from deltaguard.tools.checkpoint.build import classic_checkpoint
from deltaguard.tools.deltalog.audit import UNREADABLE_CODES, audit_table
from deltaguard.tools.deltalog.check_depth import CheckMode
from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.deltalog.commit import VersionTakenError, commit_next
from deltaguard.tools.deltalog.findings import Finding, Severity
from deltaguard.tools.deltalog.listing import LogListing, list_log
from deltaguard.tools.deltalog.live_files import FILE_CODES
from deltaguard.tools.deltalog.snapshot import Snapshot, load_snapshot
from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
from deltaguard.tools.exit_codes import ExitCode, Terminated
from deltaguard.tools.output import write_tsv
from deltaguard.tools.repair.catch_up import catch_up
from deltaguard.tools.repair.committer import CommitSettingError, Committer, open_committer
from deltaguard.tools.repair.log_repair import (
    LAST_CHECKPOINT,
    LOG_CODES,
    Built,
    apply_log_repair,
    describe,
    plan_log_repair,
)
from deltaguard.tools.repair.modes import CommitProtocol
from deltaguard.tools.repair.raw_adds import raw_adds
from deltaguard.tools.repair.remove_commit import (
    Dangling,
    check_writable,
    find_damage,
    find_dangling,
    in_commit_timestamps,
    repair_actions,
)
from deltaguard.tools.repair.restore_lost import LostRefused, needs_attention, restore_lost
from deltaguard.tools.repair.stranded import (
    Restore,
    StrandedPlan,
    complete_entry,
    create_exclusive,
    plan_stranded,
)
from deltaguard.tools.storage import S3Options, TableStore, open_table, table_not_found
from deltaguard.tools.storage.errors import DeltaLogError


@dataclass(frozen=True)
class RepairRequest:
    """The command line, as plain values."""

    table: str
    s3: S3Options = field(default_factory=S3Options)
    dynamodb: DynamoDBCheck | None = None
    protocol: CommitProtocol | None = None
    check: CheckMode = CheckMode.FOOTERS
    yes: bool = False
    as_json: bool = False
    attempts: int = 20
    #: ``--format tsv``: no text lines; one row per action at the end (:data:`REPAIR_TSV_COLUMNS`)
    tsv: bool = False
    #: ``--restore-lost``: restore lost blind appends instead (:mod:`.restore_lost`)
    restore_lost: bool = False


@dataclass
class _Record:
    """What the run found and did (the JSON report)."""

    table: str
    dry_run: bool
    check: str
    restored: list[int] = field(default_factory=list)
    to_restore: list[int] = field(default_factory=list)
    completed_entries: list[str] = field(default_factory=list)
    gaps: list[int] = field(default_factory=list)
    unproven: list[str] = field(default_factory=list)
    #: the audit's other errors, which no remove commit fixes: {"code", "file", "message"}
    not_repaired: list[dict[str, Any]] = field(default_factory=list)
    dangling: list[dict[str, str]] = field(default_factory=list)
    committed_version: int | None = None
    commit_protocol: str | None = None
    attempts: int = 0
    error: str | None = None
    #: the version a commit is being attempted at (an interrupt then leaves it undecided)
    in_flight: int | None = None
    #: the log's own damage (:mod:`.log_repair`): broken checkpoints {"version", "kind",
    #: "files", "reason"}, checkpoints written, files set aside, ``_last_checkpoint``
    log: dict[str, Any] = field(default_factory=dict)
    #: (first, last) version ranges nothing can rebuild (nothing of the log was changed)
    lost_versions: list[list[int]] = field(default_factory=list)
    log_found: bool = False
    #: ``--restore-lost``: one outcome per lost commit (:class:`.restore_lost.LostOutcome`)
    lost_commits: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self, exit_code: int) -> dict[str, Any]:
        return {"schema": "deltaguard.repair/1", **self.__dict__, "exit_code": exit_code}

    def rows(self) -> list[tuple[object, ...]]:
        """``--format tsv``'s rows (:data:`REPAIR_TSV_COLUMNS`): what was done or would be."""
        done = "planned" if self.dry_run else "done"
        rows: list[tuple[object, ...]] = []
        for version in self.restored:
            rows.append(("restore-commit", version, None, "from its DynamoDB temp commit", "done"))
        for version in self.to_restore:
            rows.append(("restore-commit", version, None, "from its DynamoDB temp commit", done))
        for name in self.completed_entries:
            rows.append(("complete-dynamodb-entry", None, name, "", done))
        for b in self.log.get("broken", []):
            state = "not-repairable" if self.lost_versions else done
            rows.append(("rebuild-checkpoint", b["version"], None, b["reason"], state))
        for moved in self.log.get("quarantined", []):
            rows.append(("set-aside", None, moved["file"], moved["moved_to"], "done"))
        if self.log.get("hint"):
            rows.append(("point-last-checkpoint", None, None, self.log["hint"], done))
        for version in self.gaps:
            reason = "no commit file and no temp commit"
            rows.append(("gap", version, None, reason, "not-repairable"))
        removed = "done" if self.committed_version is not None else "planned"
        for d in self.dangling:
            rows.append(
                ("remove-dangling", self.committed_version, d["path"], d["reason"], removed)
            )
        return rows


#: ``repair --format tsv``'s columns (docs/reference/output.md): one row per action.
REPAIR_TSV_COLUMNS = ("action", "version", "path", "reason", "state")


class _Out:
    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def line(self, text: str) -> None:
        if not self.as_json:
            print(text, flush=True)


class _Refused(Exception):
    """A one-line refusal: exit 2."""


def _snapshot(store: TableStore) -> Snapshot:
    snap = load_snapshot(store)
    check_writable(snap)
    return snap


def _recheck(
    store: TableStore, snap: Snapshot, planned: list[Dangling], mode: CheckMode
) -> list[Dangling]:
    """The planned entries that are still live in ``snap`` and still broken, checked again
    (a file that reappeared, or an entry another writer removed, leaves the plan; damage found
    only now waits for the next run, which the user can review first)."""
    if not planned:
        return []
    again = {d.key: d for d in find_dangling(store, snap, mode)}
    return [again[d.key] for d in planned if d.key in again]


def _commit_removes(
    req: RepairRequest,
    store: TableStore,
    planned: list[Dangling],
    rec: _Record,
    out: _Out,
) -> int:
    committer = open_committer(store, req.protocol, req.s3, req.dynamodb)
    rec.commit_protocol = committer.protocol
    snap: Snapshot | None = None
    by_key: dict[str, dict[str, Any]] = {}
    read_version, ict_after = -1, None
    for attempt in range(1, req.attempts + 1):
        rec.attempts = attempt
        if snap is None:  # the re-read right before committing (and a full re-plan)
            snap = _snapshot(store)
            planned = _recheck(store, snap, planned, req.check)
            keys, paths = {d.key for d in planned}, {d.path for d in planned}
            by_key = raw_adds(snap, keys, paths) if planned else {}
            read_version = snap.version
            ict_after = (snap.timestamp_ms or 0) if in_commit_timestamps(snap) else None
        if not planned:
            out.line(f"nothing left to remove at version {read_version}: no commit")
            return ExitCode.CLEAN
        adds = [by_key[d.key] for d in planned]
        reasons = {str(by_key[d.key]["path"]): d.reason for d in planned}
        actions = repair_actions(read_version, adds, reasons, req.check.value, ict_after)
        rec.in_flight = read_version + 1
        try:
            version = commit_next(committer.store, committer.table_uri, read_version, actions)
        except VersionTakenError:
            rec.in_flight = None
            news = catch_up(store, read_version, {d.key for d in planned})
            out.line(
                f"version {read_version + 1} was taken by another writer: re-planning on "
                + ("a full snapshot" if news.replan else f"version {news.version}")
            )
            if news.replan:
                snap = None
                continue
            planned = [d for d in planned if d.key not in news.touched]
            read_version = news.version
            if ict_after is not None:
                ict_after = max(ict_after, news.timestamp_ms or 0)
            continue
        rec.committed_version, rec.in_flight = version, None
        rec.dangling = [{"path": str(a["path"]), "reason": reasons[str(a["path"])]} for a in adds]
        out.line(
            f"committed version {version} ({committer.protocol}): removed {len(adds)} "
            "dangling reference(s)"
        )
        return ExitCode.CLEAN
    raise _Refused(f"no free version after {req.attempts} attempts: nothing committed")


#: Audit findings :func:`_repair` reports otherwise (the file check's, its gap lines, its
#: stranded-commit plan for temp commits: leftover ones are for ``orphans``/``log-cleanup``) or
#: that mean the audit could not read something the repair's own replay did read.
_REPORTED_OTHERWISE = frozenset(
    {
        *FILE_CODES,
        "external-file",
        "version-gap",
        "version-gap-covered",
        "temp-file",
        *UNREADABLE_CODES,
    }
)


def _beyond_repair(store: TableStore, planned: frozenset[str] = frozenset()) -> list[Finding]:
    """The audit's errors and warnings on ``store`` that a remove commit does not fix (a
    damaged checkpoint, ``_last_checkpoint`` naming none or disagreeing with its checkpoint, a
    corrupt line before the checkpoint, a ``.crc`` that disagrees, a stray log file, ...):
    repair names them rather than call the table repaired, so its exit 0 means the audit's
    would be 0 too (leftover temp files aside: :data:`_REPORTED_OTHERWISE`). The audit's log checks (no file check: :func:`find_dangling` is that)."""
    report = audit_table(store, check_files=False)
    return [
        f
        for f in report.findings
        if f.severity in (Severity.ERROR, Severity.WARNING)
        and f.code not in _REPORTED_OTHERWISE
        and f.code not in planned
    ]


def _open(req: RepairRequest) -> tuple[TableStore, LogListing]:
    """The table and its log listing; with ``--yes``, the commit settings checked before
    anything is written. Raises :class:`TableNotFoundError` for an empty or missing log."""
    store = open_table(req.table, req.s3)
    listing = list_log(store)
    if listing.latest_version is None and not listing.files:
        raise table_not_found(store, f"{LOG_DIR}/ is empty or missing")
    if req.yes:  # refuse bad settings before writing anything
        open_committer(store, req.protocol, req.s3, req.dynamodb)
    return store, listing


def _repair(req: RepairRequest, rec: _Record, out: _Out) -> int:
    """The repair's steps in order: the stranded commits and DynamoDB entries, the log's own
    damage, then the dangling references; returns the exit code."""
    store, listing = _open(req)
    plan = plan_stranded(listing, req.dynamodb)
    if plan.refused:
        raise _Refused(plan.refused[0])
    rec.gaps = plan.gaps
    for restore in plan.restore:
        _restore(req, store, restore, rec, out)
    for entry in plan.complete:
        _complete(req, entry, rec, out)
    for gap in plan.gaps:
        out.line(f"gap: version {gap} has no commit file and no temp commit: not repairable")
    rec.unproven = plan.unproven
    for line in plan.unproven:
        out.line(line)
    if rec.to_restore:
        out.line("dangling references are checked once the stranded commits are restored")
        return ExitCode.FOUND
    if _mend_log(req, store, rec, out):
        return ExitCode.FOUND
    return _repair_files(req, store, plan, rec, out)


def _restore(
    req: RepairRequest, store: TableStore, restore: Restore, rec: _Record, out: _Out
) -> None:
    """A stranded commit: restored from its temp commit with ``--yes`` (its DynamoDB entry
    then completed), else planned."""
    target = f"{LOG_DIR}/{commit_file_name(restore.version)}"
    if not req.yes:
        rec.to_restore.append(restore.version)
        out.line(
            f"stranded commit: version {restore.version} would be restored from "
            f"{LOG_DIR}/{restore.temp} (its DynamoDB entry names it)"
        )
        return
    body = store.read(f"{LOG_DIR}/{restore.temp}")
    try:
        created = create_exclusive(store, req.s3, target, body)
    except LogFileExistsError:
        raise _Refused(
            f"{store.location(target)} appeared meanwhile with other bytes than "
            f"{restore.temp}: not overwritten"
        ) from None
    assert req.dynamodb is not None
    complete_entry(req.dynamodb, restore.entry)
    rec.restored.append(restore.version)
    how = "restored" if created else "was already restored (same bytes)"
    out.line(f"stranded commit: version {restore.version} {how} from {restore.temp}")


def _complete(req: RepairRequest, entry: dict[str, Any], rec: _Record, out: _Out) -> None:
    """A DynamoDB entry left incomplete: completed with ``--yes``, else planned."""
    if req.yes:
        assert req.dynamodb is not None
        complete_entry(req.dynamodb, entry)
        out.line(f"DynamoDB entry {entry['fileName']} of {entry['tablePath']}: completed")
    else:
        out.line(f"DynamoDB entry {entry['fileName']} of {entry['tablePath']}: would be completed")
    rec.completed_entries.append(str(entry["fileName"]))


def _repair_files(
    req: RepairRequest, store: TableStore, plan: StrandedPlan, rec: _Record, out: _Out
) -> int:
    """The dangling references: a remove commit with ``--yes``, else planned; what a remove
    commit does not fix is named (:func:`_beyond_repair`). Returns the exit code."""
    snap = _snapshot(store)
    planned, kept = find_damage(store, snap, req.check)
    for d in planned:
        out.line(f"dangling: {d.reason}")
    for d in kept:
        out.line(f"not repaired: {d.code}: {d.path}: {d.reason}")
        rec.not_repaired.append({"code": d.code, "file": d.path, "message": d.reason})
    # a dry run's plan already names the log damage --yes mends; after --yes the audit is fresh
    for f in _beyond_repair(store, LOG_CODES if rec.log_found and not req.yes else frozenset()):
        where = f"{f.file}:{f.line}" if f.file and f.line else (f.file or "")
        out.line(f"not repaired: {f.code}: {where + ': ' if where else ''}{f.message}")
        rec.not_repaired.append({"code": f.code, "file": f.file, "message": f.message})
    found = bool(planned or plan.complete or plan.unproven or rec.not_repaired or rec.log_found)
    if not req.yes:
        rec.dangling = [{"path": d.path, "reason": d.reason} for d in planned]
        if planned:
            out.line(
                f"dry run: would commit version {snap.version + 1} removing {len(planned)} "
                "file(s); run again with --yes"
            )
        elif not found and not plan.gaps:
            out.line(f"{store.uri}: nothing to repair at version {snap.version}")
        return ExitCode.FOUND if found or plan.gaps else ExitCode.CLEAN
    code = _commit_removes(req, store, planned, rec, out) if planned else ExitCode.CLEAN
    if not planned and not rec.restored and not plan.complete and not found:
        out.line(f"{store.uri}: nothing to repair at version {snap.version}")
    return ExitCode.FOUND if plan.gaps or plan.unproven or rec.not_repaired else code


def _build(snap: Snapshot) -> Built:
    made = classic_checkpoint(snap, int(time.time() * 1000))
    return Built(made.body, made.actions, made.add_files)


def _mend_log(req: RepairRequest, store: TableStore, rec: _Record, out: _Out) -> bool:
    """The log's own damage (:mod:`.log_repair`): planned in a dry run, mended with ``--yes``.
    Returns whether versions are lost (nothing of the log is then changed)."""
    if req.yes:
        plan, done = apply_log_repair(store, req.s3, _build, out.line)
    else:
        plan, _listing = plan_log_repair(store)
        done = None
    rec.log = {
        "broken": [
            {"version": b.version, "kind": b.kind, "files": list(b.files), "reason": b.reason}
            for b in plan.broken
        ],
        "rebuilt": plan.rebuild,
        "hint": plan.hint,
        "written": done.written if done else [],
        "quarantined": done.quarantined if done else [],
        "last_checkpoint": done.last_checkpoint if done else None,
    }
    rec.lost_versions = [[a, b] for a, b in plan.lost]
    if not req.yes:
        for line in describe(plan):
            out.line(line)
    if plan.lost:
        first, last = plan.lost[-1]
        if plan.latest is not None and last >= plan.latest:
            raise _Refused(
                f"{store.uri}: versions {first} to {last} (the latest among them) cannot be "
                "rebuilt from a good checkpoint and the commits: the table cannot be read; "
                "nothing written"
            )
        return True
    if not req.yes:
        for version in plan.rebuild:
            out.line(f"dry run: would write a checkpoint of version {version} from the commits")
        if plan.hint:
            out.line(f"dry run: would rewrite {LAST_CHECKPOINT}: {plan.hint}")
    rec.log_found = plan.found
    return False


def _restore_lost(req: RepairRequest, rec: _Record, out: _Out) -> int:
    """``--restore-lost`` (:mod:`.restore_lost`); its outcomes go to ``rec.lost_commits``."""
    store, _listing = _open(req)

    def committer() -> Committer:
        c = open_committer(store, req.protocol, req.s3, req.dynamodb)
        rec.commit_protocol = c.protocol
        return c

    outcomes = restore_lost(store, req.yes, committer, out.line, req.attempts)
    rec.lost_commits = [o.to_json() for o in outcomes]
    restored = [o.committed_version for o in outcomes if o.committed_version is not None]
    rec.committed_version = restored[-1] if restored else None
    return ExitCode.FOUND if needs_attention(outcomes) else ExitCode.CLEAN


def run_repair(req: RepairRequest) -> int:
    """Runs the command (see the module docstring) and returns its exit code. Errors are one
    line on stderr, never a traceback."""
    out = _Out(req.as_json or req.tsv)
    rec = _Record(req.table, not req.yes, req.check.value)
    try:
        code = _restore_lost(req, rec, out) if req.restore_lost else _repair(req, rec, out)
    except (DeltaLogError, _Refused, CommitSettingError, LostRefused, OSError) as exc:
        rec.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"deltaguard repair: {rec.error}", file=sys.stderr, flush=True)
        code = ExitCode.UNREADABLE
    except (ClientError, BotoCoreError) as exc:
        rec.error = f"AWS request failed: {exc}"
        print(f"deltaguard repair: {rec.error}", file=sys.stderr, flush=True)
        code = ExitCode.UNREADABLE
    except (KeyboardInterrupt, Terminated) as exc:
        sigterm = isinstance(exc, Terminated)
        rec.error = "interrupted: the lines above are what was done" + (
            f"; the commit of version {rec.in_flight} was in flight and may have landed: "
            "check `deltaguard history`"
            if rec.in_flight is not None
            else ""
        )
        print(f"deltaguard repair: {rec.error}", file=sys.stderr, flush=True)
        code = ExitCode.SIGTERM if sigterm else ExitCode.SIGINT
    if req.as_json:
        print(orjson.dumps(rec.to_json(int(code)), option=orjson.OPT_INDENT_2).decode())
    elif req.tsv:
        write_tsv(REPAIR_TSV_COLUMNS, rec.rows())
    return int(code)
