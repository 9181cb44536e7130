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

import orjson
from rich.console import Console

from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
from deltaguard.tools.deltalog.times import duration_text, iso_utc
from deltaguard.tools.exit_codes import ExitCode
from deltaguard.tools.orphans.classify import FileClass
from deltaguard.tools.orphans.cleanup import (
    CleanupInterruptedError,
    CleanupOptions,
    continues_line,
    execute,
    nothing_left,
    summary,
)
from deltaguard.tools.orphans.interrupt import CleanupStopped, stop_on_signals
from deltaguard.tools.orphans.log_cleanup import (
    LOG_CLEANUP_CLASSES,
    LogScan,
    OutsideLogError,
    log_cleanup_plan,
    scan_log,
)
from deltaguard.tools.orphans.manifest import Manifest, new_run_dir, unfinished_run
from deltaguard.tools.orphans.rules import RetentionTooShortError, check_retention
from deltaguard.tools.orphans.run import (
    damage_line,
    interrupted_lines,
    outcome_code,
    stopped_before_deleting_line,
    stopping_line,
)
from deltaguard.tools.output import stdout_console, write_tsv
from deltaguard.tools.state_dir import log_cleanup_manifests_dir
from deltaguard.tools.storage import S3Options, open_table
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
        for c in (*LOG_CLEANUP_CLASSES, FileClass.PENDING_COMMIT, FileClass.STRANDED_COMMIT)
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


def _tsv(scan: LogScan) -> None:
    rows = (
        (c.path, c.file_class.value, scan.kinds.get(c.path, "other"), c.size, c.mtime_ms, c.reason)
        for c in scan.result.candidates
    )
    write_tsv(("path", "class", "kind", "size", "mtime_ms", "reason"), rows)


def run_log_cleanup(req: LogCleanupRequest) -> int:
    """Runs the command; returns the exit code."""
    out = stdout_console()
    err = Console(stderr=True, soft_wrap=True)

    def fail(text: str) -> int:
        err.print(f"deltaguard {COMMAND}: {text}", highlight=False)
        return ExitCode.UNREADABLE

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
        return fail(str(exc))
    except DeltaLogError as exc:
        return fail(f"cannot read {req.table}: {exc}")
    except ValueError as exc:
        return fail(f"{req.table}: {exc}")
    except OSError as exc:
        return fail(f"nothing deleted: {exc}")
    result = scan.result
    planned_files = result.of(*LOG_CLEANUP_CLASSES)
    planned, planned_bytes = len(planned_files), sum(c.size for c in planned_files)
    damaged = len(result.of(FileClass.STRANDED_COMMIT))
    cleanup: dict[str, Any] | None = None
    manifests = req.manifest_path or log_cleanup_manifests_dir()
    earlier: Manifest | None = None
    if req.yes:
        try:
            earlier = unfinished_run(manifests, result.table, command=COMMAND)
            if earlier is not None and not planned:  # say that the earlier run is finished
                manifest = new_run_dir(manifests, result.table)
                cleanup = nothing_left(manifest, result, LOG_CLEANUP_CLASSES, earlier, COMMAND)
                cleanup["manifest_path"] = str(manifest)
        except OSError as exc:
            return fail(f"nothing deleted: {exc}")
    if req.yes and planned:
        options = CleanupOptions(
            unsafe_retention=req.unsafe_retention,
            given_retention=req.retention_ms is not None,
            dynamodb=req.dynamodb,
        )
        plan = log_cleanup_plan(
            store, scan, given_retention=options.given_retention, dynamodb=req.dynamodb
        )
        try:
            manifest = new_run_dir(manifests, result.table)
            with stop_on_signals(partial(stopping_line, command=COMMAND)) as stop:
                done = execute(
                    store,
                    result,
                    manifest_path=manifest,
                    options=options,
                    stop=stop,
                    continues=earlier,
                    plan=plan,
                )
        except CleanupStopped as stopped:
            err.print(stopped_before_deleting_line(stopped, manifest, COMMAND), highlight=False)
            return ExitCode.INTERRUPTED
        except CleanupInterruptedError as exc:  # deleting had begun: never "nothing deleted"
            err.print(f"deltaguard {COMMAND}: {summary(exc.manifest, str(manifest))}")
            return ExitCode.DELETE_FAILED
        except (DeltaLogError, ValueError, OSError) as exc:
            return fail(f"nothing deleted: {exc}")
        cleanup = {**done.manifest, "manifest_path": str(manifest)}
        if done.unwritten:  # known outcomes the manifest could not take: never lost
            cleanup["unwritten"] = done.unwritten
        if cleanup.get("error"):
            err.print(f"deltaguard {COMMAND}: {summary(cleanup, str(manifest))}", highlight=False)
    code = outcome_code(planned, damaged, cleanup)
    if req.as_json:
        for text in interrupted_lines(cleanup, req, COMMAND) if cleanup else []:
            err.print(text, highlight=False)
        out.file.write(orjson.dumps(to_json(scan, cleanup), option=orjson.OPT_INDENT_2).decode())
        out.file.write("\n")
        return code
    if code is ExitCode.INTERRUPTED:  # the report would scroll the outcome away
        assert cleanup is not None
        if line := continues_line(cleanup):
            out.print(line, highlight=False, soft_wrap=True)
        out.print(summary(cleanup, cleanup["manifest_path"]), highlight=False, soft_wrap=True)
        for text in interrupted_lines(cleanup, req, COMMAND):
            err.print(text, highlight=False)
        return code
    if req.tsv:  # stdout: the rows only; the outcome lines go to stderr
        _tsv(scan)
        out = err
    else:
        print_report(scan, out)
    if line := damage_line(damaged):
        out.print(line, highlight=False, soft_wrap=True)
    if cleanup is not None and (line := continues_line(cleanup)):
        out.print(line, highlight=False, soft_wrap=True)
    if not planned:
        out.print("nothing to clean up")
        if cleanup is not None:
            out.print(summary(cleanup, cleanup["manifest_path"]), highlight=False, soft_wrap=True)
    elif cleanup is None:
        out.print(
            f"dry run: would delete {planned} files, {planned_bytes} bytes (add --yes to delete)"
        )
    else:
        out.print(summary(cleanup, cleanup["manifest_path"]), highlight=False, soft_wrap=True)
        for record in cleanup.get("unwritten", []):
            out.print(f"  {record['outcome']} {record['path']}", highlight=False, soft_wrap=True)
    return code
