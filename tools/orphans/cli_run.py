"""What ``deltaguard orphans`` does, behind the thin click command in :mod:`deltaguard.tools.cli`.

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
display. The manifest of ``--delete --yes`` is a directory
(:mod:`.manifest`, the same for both engines) at ``--manifest`` or, by default, under the
state directory (:func:`deltaguard.tools.state_dir.default_manifest_path`), never the working
directory. A ``--manifest`` directory that already holds a manifest is refused (exit 2) before
the scan: a manifest is never replaced.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console

from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
from deltaguard.tools.exit_codes import ExitCode
from deltaguard.tools.orphans.classify import FileClass, ScanResult, scan
from deltaguard.tools.orphans.cleanup import (
    CleanupResult,
    execute,
    how_to_finish,
    stopped_by,
    summary,
    targets,
    unfinished,
)
from deltaguard.tools.orphans.deleter import OutsideTableError
from deltaguard.tools.orphans.interrupt import CleanupStopped, stop_on_signals
from deltaguard.tools.orphans.inventory import InventoryError, InventorySource, parse_date
from deltaguard.tools.orphans.inventory_read import open_inventory
from deltaguard.tools.orphans.key_ranges import DEFAULT_RANGE_FILES
from deltaguard.tools.orphans.listing import ListingProgress
from deltaguard.tools.orphans.manifest import ManifestPathError, refuse_existing
from deltaguard.tools.orphans.report import print_report, to_json, write_tsv_report
from deltaguard.tools.orphans.rules import RetentionTooShortError, check_retention
from deltaguard.tools.output import stdout_console
from deltaguard.tools.progress import phase
from deltaguard.tools.state_dir import default_manifest_path
from deltaguard.tools.storage import S3Options, TableStore, open_table
from deltaguard.tools.storage.errors import DeltaLogError


@dataclass(frozen=True)
class OrphansRequest:
    """The command line, as plain values."""

    table: str
    endpoint: str | None = None
    region: str | None = None
    path_style: bool = False
    retention_hours: float | None = None
    delete: bool = False
    yes: bool = False
    include_tombstones: bool = False
    unsafe_retention: bool = False
    as_json: bool = False
    #: ``--format tsv``: stdout holds only the candidates' rows.
    tsv: bool = False
    manifest_path: Path | None = None
    workers: int | None = None
    #: ``--dynamodb-table`` and its options: the DynamoDB LogStore's table to ask.
    dynamodb: DynamoDBCheck | None = None
    #: ``--inventory`` and ``--inventory-date`` (as given): :mod:`.inventory`.
    inventory: str | None = None
    inventory_date: str | None = None
    #: ``--list-range-files``: :mod:`.key_ranges`.
    range_files: int = DEFAULT_RANGE_FILES


def inventory_of(req: OrphansRequest) -> InventorySource | None:
    """The request's ``--inventory`` resolved (both engines), None without one. Raises
    :class:`~.inventory.InventoryError` (exit 2) for an unusable inventory or date, or a date
    without an inventory."""
    if req.inventory is None:
        if req.inventory_date is not None:
            raise InventoryError("--inventory-date needs --inventory")
        return None
    date_ms = None if req.inventory_date is None else parse_date(req.inventory_date)
    return open_inventory(req.inventory, s3_options(req), date_ms)


def s3_options(req: OrphansRequest) -> S3Options:
    return S3Options(req.endpoint, req.region, req.path_style)


def scan_with_progress(
    store: TableStore,
    retention_ms: int | None,
    workers: int | None,
    dynamodb: DynamoDBCheck | None = None,
    inventory: InventorySource | None = None,
    inventory_s3: S3Options | None = None,
    range_files: int = DEFAULT_RANGE_FILES,
) -> ScanResult:
    """:func:`.classify.scan` as a phase of :mod:`deltaguard.tools.progress` (shown only when
    the display is on): the scan's step, and while listing the directories done of those
    known, files, unreferenced bytes and rate, refreshed from the listing counters."""
    counters = ListingProgress()
    with phase("orphans: reading the log") as shown:
        stop = threading.Event()
        started = time.monotonic()

        def refresh() -> None:
            while not stop.wait(0.2):
                if not counters.dirs_done:  # not listing yet: the step's name says enough
                    continue
                done, pending = counters.dirs_done, max(counters.dirs_pending, 0)
                elapsed = max(time.monotonic() - started, 1e-6)
                shown.update(
                    total=done + pending or None,
                    completed=done,
                    detail=f"{counters.files:,} files, {counters.bytes / 2**20:.1f} MiB "
                    f"unreferenced, {counters.files / elapsed:,.0f} files/s",
                )

        ticker = threading.Thread(target=refresh, daemon=True)
        ticker.start()
        try:
            return scan(
                store,
                retention_ms=retention_ms,
                workers=workers,
                progress=counters,
                on_phase=lambda name: shown.update(description=f"orphans: {name}"),
                dynamodb=dynamodb,
                inventory=inventory,
                inventory_s3=inventory_s3,
                range_files=range_files,
            )
        finally:
            stop.set()
            ticker.join()


def outcome_code(planned: int, damaged: int, cleanup: dict[str, Any] | None) -> ExitCode:
    """The exit code of a scan (and its cleanup), both engines: 4 if a signal stopped the
    cleanup (:func:`.cleanup.stopped_by`); 3 if a cleanup left deletions failed or unknown or
    failed after deleting began (:func:`.cleanup.unfinished`); else 1 if files to clean
    remain planned (dry run) or the scan found damage (``stranded-commit``); else 0."""
    if cleanup is not None:
        if stopped_by(cleanup):
            return ExitCode.INTERRUPTED
        if unfinished(cleanup):
            return ExitCode.DELETE_FAILED
        return ExitCode.FOUND if damaged else ExitCode.CLEAN
    return ExitCode.FOUND if planned or damaged else ExitCode.CLEAN


def damage_line(damaged: int) -> str | None:
    """The summary line for ``stranded-commit`` files (both engines), or None."""
    if not damaged:
        return None
    return (
        f"damage: {damaged} DynamoDB temp commit(s) of retained versions whose N.json is "
        "missing (class stranded-commit): never deleted; see their reasons and "
        "docs/guides/cleanup.md"
    )


def stopping_line(signal_name: str) -> None:
    """Says on stderr, from the signal handler, that the cleanup is stopping (both engines).
    Written straight to the file: the handler may run while the console holds its lock."""
    sys.stderr.write(
        f"deltaguard orphans: {signal_name}: stopping: no new deletes are sent; waiting for "
        "the answers to the requests in flight\n"
    )
    sys.stderr.flush()


def check_manifest_free(req: OrphansRequest) -> None:
    """``--delete --yes`` with a ``--manifest`` directory that already holds a manifest:
    :class:`~.manifest.ManifestPathError` (exit 2) before the scan (both engines)."""
    if req.delete and req.yes and req.manifest_path is not None:
        refuse_existing(req.manifest_path)


def stopped_before_deleting_line(stopped: Any, manifest: Any, req: OrphansRequest) -> str:
    """What stderr says when a signal stopped the cleanup before deleting began (both
    engines): nothing deleted, the manifest, and how to finish."""
    again = " with a new --manifest directory" if req.manifest_path else ""
    return (
        f"deltaguard orphans: stopped by {stopped.signal_name} before deleting began: nothing "
        f"deleted; manifest: {manifest} (status interrupted); to finish, run the same command "
        f"again{again}"
    )


def interrupted_lines(cleanup: dict[str, Any], req: OrphansRequest) -> list[str]:
    """What stderr says after a signal stopped the cleanup (both engines): how to finish,
    after what was deleted with ``--json`` (stdout has it otherwise); nothing if no signal
    did."""
    if not stopped_by(cleanup):
        return []
    lines = [f"deltaguard orphans: {summary(cleanup, cleanup['manifest_path'])}"]
    finish = [f"deltaguard orphans: {how_to_finish(cleanup, req.manifest_path is not None)}"]
    return lines + finish if req.as_json else finish


def run_orphans(req: OrphansRequest) -> int:
    """Runs the command; returns the exit code."""
    out = stdout_console()
    err = Console(stderr=True, soft_wrap=True)
    retention_ms = None if req.retention_hours is None else round(req.retention_hours * 3_600_000)
    try:
        check_manifest_free(req)
        if retention_ms is not None and req.delete:
            check_retention(retention_ms, req.unsafe_retention)
        s3 = s3_options(req)
        store = open_table(req.table, s3)
        inventory = inventory_of(req)
        result = scan_with_progress(
            store, retention_ms, req.workers, req.dynamodb, inventory, s3, req.range_files
        )
        if req.delete:
            check_retention(result.retention_ms, req.unsafe_retention)
    except (RetentionTooShortError, ValueError) as exc:
        err.print(f"deltaguard orphans: {exc}", highlight=False)
        return ExitCode.UNREADABLE
    except DeltaLogError as exc:
        err.print(f"deltaguard orphans: cannot read {req.table}: {exc}", highlight=False)
        return ExitCode.UNREADABLE
    planned = targets(result, req.include_tombstones)
    damaged = len(result.of(FileClass.STRANDED_COMMIT))
    cleanup = None
    done: CleanupResult | None = None
    if req.delete and req.yes and planned:
        manifest = req.manifest_path or default_manifest_path(store.uri, datetime.now(UTC))
        try:
            with stop_on_signals(stopping_line) as stop:
                done = execute(
                    store,
                    result,
                    manifest_path=manifest,
                    include_tombstones=req.include_tombstones,
                    unsafe_retention=req.unsafe_retention,
                    given_retention=retention_ms is not None,
                    dynamodb=req.dynamodb,
                    stop=stop,
                )
        except CleanupStopped as stopped:
            err.print(stopped_before_deleting_line(stopped, manifest, req), highlight=False)
            return ExitCode.INTERRUPTED
        except (DeltaLogError, OutsideTableError, ManifestPathError, OSError) as exc:
            err.print(f"deltaguard orphans: nothing deleted: {exc}", highlight=False)
            return ExitCode.UNREADABLE
        cleanup = {**done.manifest, "manifest_path": str(manifest)}
        if done.unwritten:  # known outcomes the manifest could not take: never lost
            cleanup["unwritten"] = done.unwritten
        if done.manifest_error:
            err.print(f"deltaguard orphans: {summary(cleanup, str(manifest))}", highlight=False)
    code = outcome_code(len(planned), damaged, cleanup)
    for text in interrupted_lines(cleanup, req) if cleanup and req.as_json else []:
        err.print(text, highlight=False)
    if req.as_json:
        out.file.write(
            orjson.dumps(to_json(result, store, cleanup), option=orjson.OPT_INDENT_2).decode()
            + "\n"
        )
        return code
    if code is ExitCode.INTERRUPTED:  # the report would scroll the outcome away
        assert cleanup is not None
        out.print(summary(cleanup, cleanup["manifest_path"]), highlight=False, soft_wrap=True)
        for text in interrupted_lines(cleanup, req):
            err.print(text, highlight=False)
        return code
    if req.tsv:  # stdout: the rows only; the outcome lines go to stderr
        write_tsv_report(result, store)
        out = err
    else:
        print_report(result, out)
    if line := damage_line(damaged):
        out.print(line, highlight=False, soft_wrap=True)
    if not planned:
        out.print("nothing to clean up")
    elif cleanup is None:
        verb = "would delete" if req.delete else "cleanup would delete"
        total = sum(c.size for c in planned)
        hint = "" if req.delete else " (--delete --yes to delete)"
        hint = hint or " (add --yes to delete)"
        out.print(f"dry run: {verb} {len(planned)} files, {total} bytes{hint}")
    else:
        out.print(summary(cleanup, cleanup["manifest_path"]), highlight=False, soft_wrap=True)
        for record in done.unwritten if done is not None else []:
            out.print(f"  {record['outcome']} {record['path']}", highlight=False, soft_wrap=True)
    return code
