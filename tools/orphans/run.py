"""What ``deltaguard orphans`` does, behind the thin click command in :mod:`deltaguard.tools.cli`:
the one orchestrator over an engine (:class:`~.engine.OrphansEngine`: the local one,
:mod:`.local_engine`, or the Spark one, :mod:`deltaguard.tools.spark_engine.orphans_engine`).

Exit codes (:class:`~deltaguard.tools.exit_codes.ExitCode`): 0 nothing to clean, or
``--delete --yes`` deleted everything it meant to; 1 files to clean were found (dry run), or
damage (``stranded-commit``); 2 the table could not be read or a setting was refused (nothing
deleted); 3 some deletions failed or their outcome is unknown, or a failure after deleting
began (the message and the manifest say what was deleted); 4 SIGINT or SIGTERM stopped
``--delete --yes`` (:mod:`.interrupt`: the manifest says ``interrupted`` and what was
deleted, the terminal how to finish). Errors are one line
on stderr, never a traceback. With ``--json`` stdout holds only the JSON report (its
``cleanup``: the manifest's summary plus ``manifest_path``), with ``--format tsv`` only the
candidates' rows (the summary line goes to stderr); stderr carries errors and, when
:mod:`deltaguard.tools.progress` is on (``--progress``, or stderr a terminal), the progress
display. Each ``--delete --yes`` run that plans something writes a new manifest directory
(:mod:`.manifest`, the same for both engines) in ``--manifest`` or, by default, in the state
directory (:func:`deltaguard.tools.state_dir.manifests_dir`), never the working directory,
never over an earlier one. If the latest earlier run of the table there did not finish
(:func:`.manifest.unfinished_run`), the run continues it: its manifest, the terminal and the
JSON say so (and a run with nothing left to delete writes a manifest that says so too). A
retention under 24 hours is refused with
``--delete`` (exit 2) unless ``--unsafe-retention``: before the scan when given, after it when
it is the table's.

The Spark engine adds to the JSON ``report_table`` (the Parquet table holding every
candidate) and, when there are more than ``--max-report-files`` candidates, an empty
``files`` list (the totals and partitions are complete; a note says where the files are); on
the terminal, the ``report table:`` line and, then, the totals instead of the report.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Protocol

import orjson
from rich.console import Console

from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.exit_codes import ExitCode
from deltaguard.tools.orphans.classify import FileClass
from deltaguard.tools.orphans.cleanup import (
    CleanupInterruptedError,
    cleanup_classes,
    continues_line,
    how_to_finish,
    nothing_left,
    stopped_by,
    summary,
    unfinished,
)
from deltaguard.tools.orphans.engine import EngineScan, OrphansEngine, OrphansRequest
from deltaguard.tools.orphans.interrupt import CleanupStopped, stop_on_signals
from deltaguard.tools.orphans.manifest import Manifest, new_run_dir, unfinished_run
from deltaguard.tools.orphans.references import WHY_EVERY_LOG_FILE
from deltaguard.tools.orphans.report import largest_first, print_report, to_json, write_tsv_report
from deltaguard.tools.orphans.rules import RetentionTooShortError, check_retention
from deltaguard.tools.output import stdout_console
from deltaguard.tools.state_dir import manifests_dir
from deltaguard.tools.storage.errors import DeltaLogError


def outcome_code(planned: int, damaged: int, cleanup: dict[str, Any] | None) -> ExitCode:
    """The exit code of a scan (and its cleanup): 4 if a signal stopped the cleanup
    (:func:`.cleanup.stopped_by`); 3 if a cleanup left deletions failed or unknown or failed
    after deleting began (:func:`.cleanup.unfinished`); else 1 if files to clean remain
    planned (dry run) or the scan found damage (``stranded-commit``, ``lost-commit``); else
    0."""
    if cleanup is not None:
        if stopped_by(cleanup):
            return ExitCode.INTERRUPTED
        if unfinished(cleanup):
            return ExitCode.DELETE_FAILED
        return ExitCode.FOUND if damaged else ExitCode.CLEAN
    return ExitCode.FOUND if planned or damaged else ExitCode.CLEAN


def damage_line(damaged: int) -> str | None:
    """The summary line for ``stranded-commit`` files, or None."""
    if not damaged:
        return None
    return (
        f"damage: {damaged} DynamoDB temp commit(s) of retained versions whose N.json is "
        "missing (class stranded-commit): never deleted; see their reasons and "
        "docs/guides/cleanup.md"
    )


def lost_line(lost: int) -> str | None:
    """The summary line for ``lost-commit`` files, or None."""
    if not lost:
        return None
    return (
        f"damage: {lost} file(s) only a lost commit names (class lost-commit): never deleted; "
        "see deltaguard audit and docs/guides/repair.md (repair --restore-lost)"
    )


def log_hint(what: str, req: OrphansRequest) -> str:
    """For an engine's scan failure naming a file in ``_delta_log`` (the Spark engine reads
    the log in jobs): why orphans stops there, and where to find what to do; else ""."""
    if f"{LOG_DIR}/" not in what:
        return ""
    return (
        f": {WHY_EVERY_LOG_FILE}. `deltaguard audit {req.table}` says what is wrong and what to do"
    )


def stopping_line(signal_name: str, command: str = "orphans") -> None:
    """Says on stderr, from the signal handler, that the cleanup is stopping. Written
    straight to the file: the handler may run while the console holds its lock."""
    sys.stderr.write(
        f"deltaguard {command}: {signal_name}: stopping: no new deletes are sent; waiting for "
        "the answers to the requests in flight\n"
    )
    sys.stderr.flush()


def stopped_before_deleting_line(
    stopped: CleanupStopped, manifest: Any, command: str = "orphans"
) -> str:
    """What stderr says when a signal stopped the cleanup before deleting began: nothing
    deleted, the manifest, and how to finish."""
    return (
        f"deltaguard {command}: stopped by {stopped.signal_name} before deleting began: nothing "
        f"deleted; manifest: {manifest} (status interrupted); to finish, run the same command "
        "again"
    )


class CleanupAsks(Protocol):
    """What :func:`interrupted_lines` needs of a cleanup command's request."""

    @property
    def as_json(self) -> bool: ...

    @property
    def manifest_path(self) -> Path | None: ...


def interrupted_lines(
    cleanup: dict[str, Any], req: CleanupAsks, command: str = "orphans"
) -> list[str]:
    """What stderr says after a signal stopped the cleanup: how to finish, after what was
    deleted with ``--json`` (stdout has it otherwise); nothing if no signal did."""
    if not stopped_by(cleanup):
        return []
    lines = [f"deltaguard {command}: {summary(cleanup, cleanup['manifest_path'])}"]
    finish = [f"deltaguard {command}: {how_to_finish(cleanup, req.manifest_path is not None)}"]
    return lines + finish if req.as_json else finish


def json_report(
    scan: EngineScan, engine: OrphansEngine, cleanup: dict[str, Any] | None
) -> dict[str, Any]:
    """The ``--json`` document (:mod:`.report`); with a report table, its totals and
    partitions (complete when ``files`` is capped) and the ``report_table`` pointer."""
    doc = to_json(scan.result, engine.store(), cleanup)
    if scan.report_path is not None:
        doc["totals"], doc["partitions"] = scan.totals, largest_first(scan.partitions)
        doc["report_table"] = scan.report_path
    return doc


def print_scan(scan: EngineScan, out: Console) -> None:
    """The terminal report (:func:`.report.print_report`), or only the totals when the scan
    holds part of the candidates (the rest are in the report table)."""
    result = scan.result
    if scan.complete:
        print_report(result, out, partitions=scan.partitions)
        return
    out.print(f"{result.table} version {result.version}: {result.listed_files} files listed")
    if result.inventory is not None:
        out.print(result.inventory.line(), highlight=False, soft_wrap=True)
    for cls, tot in scan.totals.items():
        out.print(f"{cls}: {tot['files']} files, {tot['bytes']} bytes")
    for note in result.notes:
        out.print(f"note: {note}")


def run_orphans(req: OrphansRequest, engine: OrphansEngine) -> int:
    """Runs the command with ``engine``; returns the exit code."""
    out = stdout_console()
    err = Console(stderr=True, soft_wrap=True)
    retention_ms = req.retention_ms
    try:
        if retention_ms is not None and req.delete:
            check_retention(retention_ms, req.unsafe_retention)
        scan = engine.scan(req, retention_ms)
        if req.delete:
            check_retention(scan.result.retention_ms, req.unsafe_retention)
    except (RetentionTooShortError, ValueError) as exc:
        err.print(f"deltaguard orphans: {exc}", highlight=False)
        return ExitCode.UNREADABLE
    except DeltaLogError as exc:
        err.print(f"deltaguard orphans: cannot read {req.table}: {exc}", highlight=False)
        return ExitCode.UNREADABLE
    except OSError as exc:
        err.print(f"deltaguard orphans: nothing deleted: {exc}", highlight=False)
        return ExitCode.UNREADABLE
    except Exception as exc:
        if (what := engine.failure(exc)) is None:
            raise
        verb = "nothing deleted" if req.delete and req.yes else "scan failed"
        err.print(f"deltaguard orphans: {verb}: {what}{log_hint(what, req)}", highlight=False)
        return ExitCode.UNREADABLE
    classes = cleanup_classes(req.include_tombstones)
    planned, planned_bytes = scan.count(classes)
    damaged, _ = scan.count((FileClass.STRANDED_COMMIT,))
    lost, _ = scan.count((FileClass.LOST_COMMIT,))
    cleanup: dict[str, Any] | None = None
    unwritten: list[dict[str, Any]] = []
    manifests = req.manifest_path or manifests_dir()
    earlier: Manifest | None = None
    if req.delete and req.yes:
        try:
            earlier = unfinished_run(manifests, scan.result.table)
            if earlier is not None and not planned:  # say that the earlier run is finished
                manifest = new_run_dir(manifests, scan.result.table)
                cleanup = nothing_left(manifest, scan.result, classes, earlier)
                cleanup["manifest_path"] = str(manifest)
        except OSError as exc:
            err.print(f"deltaguard orphans: nothing deleted: {exc}", highlight=False)
            return ExitCode.UNREADABLE
    if req.delete and req.yes and planned:
        try:
            manifest = new_run_dir(manifests, scan.result.table)
            with stop_on_signals(stopping_line) as stop:
                done = engine.delete(req, scan, manifest, stop, earlier)
        except CleanupStopped as stopped:
            err.print(stopped_before_deleting_line(stopped, manifest), highlight=False)
            return ExitCode.INTERRUPTED
        except CleanupInterruptedError as exc:  # deleting had begun: never "nothing deleted"
            err.print(
                f"deltaguard orphans: {summary(exc.manifest, str(manifest))}", highlight=False
            )
            return ExitCode.DELETE_FAILED
        except (DeltaLogError, ValueError, OSError) as exc:
            err.print(f"deltaguard orphans: nothing deleted: {exc}", highlight=False)
            return ExitCode.UNREADABLE
        except Exception as exc:
            if (what := engine.failure(exc)) is None:
                raise
            err.print(f"deltaguard orphans: nothing deleted: {what}", highlight=False)
            return ExitCode.UNREADABLE
        cleanup = {**done.summary, "manifest_path": str(manifest)}
        unwritten = done.unwritten
        if unwritten:  # known outcomes the manifest could not take: never lost
            cleanup["unwritten"] = unwritten
        if cleanup.get("error"):
            err.print(f"deltaguard orphans: {summary(cleanup, str(manifest))}", highlight=False)
    code = outcome_code(planned, damaged + lost, cleanup)
    for text in interrupted_lines(cleanup, req) if cleanup and req.as_json else []:
        err.print(text, highlight=False)
    if req.as_json:
        doc = json_report(scan, engine, cleanup)
        out.file.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
        return code
    if code is ExitCode.INTERRUPTED:  # the report would scroll the outcome away
        assert cleanup is not None
        if line := continues_line(cleanup):
            out.print(line, highlight=False, soft_wrap=True)
        out.print(summary(cleanup, cleanup["manifest_path"]), highlight=False, soft_wrap=True)
        for text in interrupted_lines(cleanup, req):
            err.print(text, highlight=False)
        return code
    if req.tsv:  # stdout: the rows only; the outcome lines go to stderr
        write_tsv_report(scan.result, engine.store())  # capped: the report table has them all
        out = err
    else:
        print_scan(scan, out)
    if scan.report_path is not None:
        out.print(f"report table: {scan.report_path}")
    for line in (damage_line(damaged), lost_line(lost)):
        if line:
            out.print(line, highlight=False, soft_wrap=True)
    if cleanup is not None and (line := continues_line(cleanup)):
        out.print(line, highlight=False, soft_wrap=True)
    if not planned:
        out.print("nothing to clean up")
        if cleanup is not None:  # it finished an earlier run: where that is written
            out.print(summary(cleanup, cleanup["manifest_path"]), highlight=False, soft_wrap=True)
    elif cleanup is None:
        verb = "would delete" if req.delete else "cleanup would delete"
        hint = " (add --yes to delete)" if req.delete else " (--delete --yes to delete)"
        out.print(f"dry run: {verb} {planned} files, {planned_bytes} bytes{hint}")
    else:
        out.print(summary(cleanup, cleanup["manifest_path"]), highlight=False, soft_wrap=True)
        for record in unwritten:
            out.print(f"  {record['outcome']} {record['path']}", highlight=False, soft_wrap=True)
    return code
