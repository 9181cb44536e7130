"""What ``deltaguard log-cleanup`` does, behind the thin click command in
:mod:`deltaguard.tools.cli`: scan (:func:`.log_cleanup.scan_log`), report, and with ``--yes``
delete through the orphans machinery (:func:`.cleanup.execute` with the log-cleanup plan: the
manifest, the re-read of the log right before deleting, interruption).

Exit codes (:class:`~deltaguard.tools.exit_codes.ExitCode`), as ``orphans``: 0 nothing to
clean, or ``--yes`` deleted everything it meant to; 1 files to clean (dry run), or damage
(``stranded-commit``); 2 the table could not be read or a setting was refused (nothing
deleted); 3 some deletions failed or their outcome is unknown; 4 SIGINT or SIGTERM stopped
``--yes`` while deleting (the manifest says ``interrupted`` and what was deleted). A signal
before then is the CLI's 130/143 (nothing changed). A retention under 24 hours is refused with
``--yes`` unless ``--unsafe-retention`` (:func:`.rules.check_retention`). Manifests go to
``--manifest`` or the state directory's ``log-cleanup/``; a run continues the table's latest
unfinished log-cleanup run there (:func:`.manifest.unfinished_run`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
from deltaguard.tools.deltalog.times import duration_text, iso_utc
from deltaguard.tools.orphans import run_outcome
from deltaguard.tools.orphans.classify import FileClass
from deltaguard.tools.orphans.cleanup import CleanupOptions, CleanupResult, execute
from deltaguard.tools.orphans.interrupt import StopSignal
from deltaguard.tools.orphans.log_cleanup import (
    KEPT_LOG_CLASSES,
    LOG_CLEANUP_CLASSES,
    LogScan,
    OutsideLogError,
    log_cleanup_plan,
    scan_log,
)
from deltaguard.tools.orphans.manifest import Manifest
from deltaguard.tools.orphans.rules import RetentionTooShortError, check_retention
from deltaguard.tools.orphans.run_outcome import CleanupSteps, Outcome, RunFailed
from deltaguard.tools.output import write_tsv
from deltaguard.tools.state_dir import log_cleanup_manifests_dir
from deltaguard.tools.storage import S3Options, TableStore, open_table
from deltaguard.tools.storage.errors import DeltaLogError

COMMAND = "log-cleanup"
REPORT_SCHEMA = "deltaguard.log-cleanup.report/1"


@dataclass(frozen=True)
class LogCleanupRequest:
    """The command line, as plain values."""

    table: str
    s3: S3Options = field(default_factory=S3Options)
    #: ``--retention`` in ms (None: the table's ``delta.logRetentionDuration``).
    retention_ms: int | None = None
    unsafe_retention: bool = False
    yes: bool = False
    as_json: bool = False
    tsv: bool = False
    manifest_path: Path | None = None
    dynamodb: DynamoDBCheck | None = None
    #: The clock (epoch ms; None: now): what the cut-off is computed from. Not an option of
    #: the command: tests on stores whose modification times they cannot set move it.
    now_ms: int | None = None


def _kind_totals(scan: LogScan) -> dict[str, dict[str, int]]:
    """Files and bytes per kind among the files ``--yes`` deletes."""
    files: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    for c in scan.result.of(*LOG_CLEANUP_CLASSES):
        kind = scan.kinds.get(c.path, "other")
        files[kind] += 1
        sizes[kind] += c.size
    return {k: {"files": files[k], "bytes": sizes[k]} for k in sorted(files)}


def to_json(scan: LogScan, cleanup: dict[str, Any] | None) -> dict[str, Any]:
    """The ``--json`` document (docs/reference/json-schemas.md, log-cleanup)."""
    r = scan.result
    totals = {
        c.value: {
            "files": len(r.of(c)),
            "bytes": sum(x.size for x in r.of(c)),
        }
        for c in (*LOG_CLEANUP_CLASSES, *KEPT_LOG_CLASSES)
    }
    return {
        "schema": REPORT_SCHEMA,
        "table": r.table,
        "version": r.version,
        "log_objects": scan.log_objects,
        "log_bytes": scan.log_bytes,
        "retention_ms": r.retention_ms,
        "retention_source": r.retention_source,
        "cutoff_ms": r.cutoff_ms,
        "cutoff": iso_utc(r.cutoff_ms),
        "truncation_version": scan.truncation_version,
        "notes": r.notes,
        "totals": totals,
        "kinds": _kind_totals(scan),
        "files": [
            {
                "path": c.path,
                "class": c.file_class.value,
                "kind": scan.kinds.get(c.path, "other"),
                "size": c.size,
                "mtime_ms": c.mtime_ms,
                "reason": c.reason,
            }
            for c in r.candidates
        ],
        "cleanup": cleanup,
    }


def print_report(scan: LogScan, out: Console) -> None:
    """The terminal report: the log, the retention and cut-off, the notes, the totals per
    class and kind, and each kept temp commit with why."""
    r = scan.result
    out.print(
        f"{r.table} version {r.version}: _delta_log holds {scan.log_objects} objects, "
        f"{scan.log_bytes} bytes",
        highlight=False,
        soft_wrap=True,
    )
    out.print(
        f"log retention {duration_text(r.retention_ms)} ({r.retention_source}); cut-off "
        f"{iso_utc(r.cutoff_ms)} (now - retention, truncated to the UTC day as Delta does)",
        highlight=False,
        soft_wrap=True,
    )
    for note in r.notes:
        out.print(f"note: {note}", highlight=False, soft_wrap=True)
    for kind, t in _kind_totals(scan).items():
        out.print(f"  {kind}: {t['files']} files, {t['bytes']} bytes", highlight=False)
    for c in r.of(FileClass.PENDING_COMMIT, FileClass.STRANDED_COMMIT):
        out.print(
            f"kept {c.file_class.value} {c.path}: {c.reason}", highlight=False, soft_wrap=True
        )
    if evidence := r.of(FileClass.COMMIT_EVIDENCE):
        out.print(
            f"kept {len(evidence)} commit-evidence: finished DynamoDB temp commits of retained "
            "versions (they go with their versions)",
            highlight=False,
            soft_wrap=True,
        )


def _tsv(scan: LogScan) -> None:
    rows = (
        (c.path, c.file_class.value, scan.kinds.get(c.path, "other"), c.size, c.mtime_ms, c.reason)
        for c in scan.result.candidates
    )
    write_tsv(("path", "class", "kind", "size", "mtime_ms", "reason"), rows)


def run_log_cleanup(req: LogCleanupRequest) -> int:
    """Runs the command; returns the exit code."""
    return run_outcome.one_line_failures(COMMAND, partial(_run, req))


def _run(req: LogCleanupRequest) -> int:
    """Scan, clean up with ``--yes``, print the outcome (:mod:`.run_outcome`)."""
    store, scan = _scan(req)
    planned_files = scan.result.of(*LOG_CLEANUP_CLASSES)
    planned = len(planned_files)
    cleanup = (
        run_outcome.clean_up(_cleanup_steps(req, store, scan), scan.result, planned)
        if req.yes
        else None
    )
    damaged = len(scan.result.of(FileClass.STRANDED_COMMIT))
    outcome = Outcome(
        COMMAND,
        cleanup,
        planned,
        sum(c.size for c in planned_files),
        damaged,
        findings=(run_outcome.damage_line(FileClass.STRANDED_COMMIT, damaged),),
        only_yes_missing=True,
        json_doc=partial(to_json, scan),
        text=partial(print_report, scan),
        tsv=lambda _err: _tsv(scan),
    )
    return run_outcome.render(outcome, req)


def _scan(req: LogCleanupRequest) -> tuple[TableStore, LogScan]:
    """The table and its log-cleanup scan, the retention checked before it when given and
    after it with ``--yes``. Raises :class:`.run_outcome.RunFailed` (exit 2) when it cannot
    be done."""
    try:
        if req.retention_ms is not None and req.yes:
            check_retention(req.retention_ms, req.unsafe_retention)
        store = open_table(req.table, req.s3)
        scan = scan_log(
            store, now_ms=req.now_ms, retention_ms=req.retention_ms, dynamodb=req.dynamodb
        )
        if req.yes:
            check_retention(scan.result.retention_ms, req.unsafe_retention)
    except (RetentionTooShortError, OutsideLogError) as exc:
        raise RunFailed(str(exc)) from None
    except DeltaLogError as exc:
        raise RunFailed(f"cannot read {req.table}: {exc}") from None
    except ValueError as exc:
        raise RunFailed(f"{req.table}: {exc}") from None
    except OSError as exc:
        raise RunFailed(f"nothing deleted: {exc}") from None
    return store, scan


def _cleanup_steps(req: LogCleanupRequest, store: TableStore, scan: LogScan) -> CleanupSteps:
    """``--yes`` through :func:`.cleanup.execute` with the log-cleanup plan, its manifests in
    ``--manifest`` or the state directory's ``log-cleanup/``."""
    options = CleanupOptions(
        unsafe_retention=req.unsafe_retention,
        given_retention=req.retention_ms is not None,
        dynamodb=req.dynamodb,
    )
    plan = log_cleanup_plan(
        store, scan, given_retention=options.given_retention, dynamodb=req.dynamodb
    )

    def delete(manifest: Path, stop: StopSignal, earlier: Manifest | None) -> CleanupResult:
        return execute(
            store,
            scan.result,
            manifest_path=manifest,
            options=options,
            stop=stop,
            continues=earlier,
            plan=plan,
        )

    manifests = req.manifest_path or log_cleanup_manifests_dir()
    return CleanupSteps(COMMAND, manifests, LOG_CLEANUP_CLASSES, delete)
