"""What ``deltaguard orphans`` does, behind the thin click command in :mod:`deltaguard.tools.cli`:
the one orchestrator over an engine (:class:`~.engine.OrphansEngine`: the local one,
:mod:`.local_engine`, or the Spark one, :mod:`deltaguard.tools.spark_engine.orphans_engine`).
The ``--delete --yes`` steps, the exit code and the outcome's formats are
:mod:`.run_outcome`'s (shared with ``log-cleanup``).

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

from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.orphans import run_outcome
from deltaguard.tools.orphans.classify import FileClass
from deltaguard.tools.orphans.cleanup import CleanupResult, cleanup_classes
from deltaguard.tools.orphans.engine import (
    EngineScan,
    OrphansEngine,
    OrphansRequest,
)
from deltaguard.tools.orphans.interrupt import StopSignal
from deltaguard.tools.orphans.manifest import Manifest
from deltaguard.tools.orphans.references import WHY_EVERY_LOG_FILE
from deltaguard.tools.orphans.report import largest_first, print_report, to_json, write_tsv_report
from deltaguard.tools.orphans.rules import RetentionTooShortError, check_retention
from deltaguard.tools.orphans.run_outcome import CleanupSteps, Outcome, RunFailed
from deltaguard.tools.state_dir import manifests_dir
from deltaguard.tools.storage.errors import DeltaLogError

COMMAND = "orphans"


def log_hint(what: str, req: OrphansRequest) -> str:
    """For an engine's scan failure naming a file in ``_delta_log`` (the Spark engine reads
    the log in jobs): why orphans stops there, and where to find what to do; else ""."""
    if f"{LOG_DIR}/" not in what:
        return ""
    return (
        f": {WHY_EVERY_LOG_FILE}. `deltaguard audit {req.table}` says what is wrong and what to do"
    )


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
    return run_outcome.one_line_failures(COMMAND, partial(_run, req, engine))


def _run(req: OrphansRequest, engine: OrphansEngine) -> int:
    """Scan, clean up with ``--delete --yes``, print the outcome (:mod:`.run_outcome`)."""
    scan = _scan(req, engine)
    classes = cleanup_classes(req.include_tombstones)
    planned, planned_bytes = scan.count(classes)
    cleanup = None
    if req.delete and req.yes:
        steps = _cleanup_steps(req, engine, scan, classes)
        cleanup = run_outcome.clean_up(steps, scan.result, planned)
    damaged, _ = scan.count((FileClass.STRANDED_COMMIT,))
    lost, _ = scan.count((FileClass.LOST_COMMIT,))
    outcome = Outcome(
        COMMAND,
        cleanup,
        planned,
        planned_bytes,
        damaged + lost,
        findings=(
            run_outcome.damage_line(FileClass.STRANDED_COMMIT, damaged),
            run_outcome.damage_line(FileClass.LOST_COMMIT, lost),
        ),
        only_yes_missing=req.delete,
        json_doc=partial(json_report, scan, engine),
        text=partial(_text_report, scan),
        tsv=partial(_tsv_report, scan, engine),
    )
    return run_outcome.render(outcome, req)


def _scan(req: OrphansRequest, engine: OrphansEngine) -> EngineScan:
    """The engine's scan, the retention checked before it when given and after it with
    ``--delete``. Raises :class:`.run_outcome.RunFailed` (exit 2) when it cannot be done."""
    retention_ms = req.retention_ms
    try:
        if retention_ms is not None and req.delete:
            check_retention(retention_ms, req.unsafe_retention)
        scan = engine.scan(req, retention_ms)
        if req.delete:
            check_retention(scan.result.retention_ms, req.unsafe_retention)
    except (RetentionTooShortError, ValueError) as exc:
        raise RunFailed(str(exc)) from None
    except DeltaLogError as exc:
        raise RunFailed(f"cannot read {req.table}: {exc}") from None
    except OSError as exc:
        raise RunFailed(f"nothing deleted: {exc}") from None
    except Exception as exc:
        if (what := engine.failure(exc)) is None:
            raise
        verb = "nothing deleted" if req.delete and req.yes else "scan failed"
        raise RunFailed(f"{verb}: {what}{log_hint(what, req)}") from None
    return scan


def _cleanup_steps(
    req: OrphansRequest, engine: OrphansEngine, scan: EngineScan, classes: tuple[FileClass, ...]
) -> CleanupSteps:
    """``--delete --yes`` through ``engine``, its manifests in ``--manifest`` or the state
    directory."""

    def delete(manifest: Path, stop: StopSignal, earlier: Manifest | None) -> CleanupResult:
        return engine.delete(req, scan, manifest, stop, earlier)

    manifests = req.manifest_path or manifests_dir()
    return CleanupSteps(COMMAND, manifests, classes, delete, engine.failure)


def _text_report(scan: EngineScan, out: Console) -> None:
    """The terminal report and the report table's line."""
    print_scan(scan, out)
    _report_table_line(scan, out)


def _tsv_report(scan: EngineScan, engine: OrphansEngine, err: Console) -> None:
    """The candidates' rows on stdout (capped: the report table has them all), the report
    table's line on ``err``."""
    write_tsv_report(scan.result, engine.store())
    _report_table_line(scan, err)


def _report_table_line(scan: EngineScan, out: Console) -> None:
    if scan.report_path is not None:
        out.print(f"report table: {scan.report_path}")
