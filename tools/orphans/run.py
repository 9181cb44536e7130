"""What ``deltaguard orphans`` does, behind the thin click command in :mod:`deltaguard.tools.cli`:
the one orchestrator over an engine (:class:`~.engine.OrphansEngine`: the local one,
:class:`LocalEngine`, below, or the Spark one, :mod:`deltaguard.tools.spark_engine.orphans_engine`).
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

The local engine (:class:`LocalEngine`): the scan of :func:`.classify.scan` and the cleanup
of :func:`.cleanup.execute`, in this process (listing and deletes in threads).

The scan report (both engines): totals by class and by partition, the JSON document, the
terminal view, the TSV rows.

JSON schema (``deltaguard orphans --json``; ``schema`` = :data:`REPORT_SCHEMA`)::

    {
      "schema": "deltaguard.orphans.report/1",
      "table": str,                 # the table root as given
      "version": int,               # snapshot version the scan used
      "now_ms": int, "retention_ms": int, "cutoff_ms": int,   # cutoff = now - retention
      "retention_source": str,      # "--retention", the table property, or Delta's default
      "listed_files": int,          # visible files listed below the root
      "live_files": int,            # files (incl. DV files) the snapshot's adds name
      "log_files": int,             # files in _delta_log
      "hidden_dirs": [str],         # directories VACUUM does not look into (_delta_log, ...)
      "kept_dirs": [{"path": str, "reason": str}],  # never cleaned up: streaming checkpoints,
                                    # _spark_metadata (deltaguard.tools.orphans.streaming)
      "scan_s": float,
      "totals": {CLASS: {"files": int, "bytes": int}},   # every class, zeros included
      "partitions": [{"partition": str, "class": CLASS, "files": int, "bytes": int}],
      "files": [{"path": str, "location": str, "size": int, "mtime_ms": int,
                 "class": CLASS, "reason": str}],
      "notes": [str],
      "inventory": null | {         # --inventory: deltaguard.tools.orphans.inventory
        "location": str, "form": str, "date_ms": int, "date": str, "date_source": str,
        "rows_read": int, "rows_under_table": int, "listing_skipped": true
      },                            # (cutoff_ms is then min(now - retention, date_ms))
      "cleanup": SUMMARY | null     # with --delete --yes: the manifest's summary (no per-file
                                    # lists; deltaguard.tools.orphans.manifest) plus
                                    # "manifest_path": the manifest directory, and
                                    # "unwritten": [RECORD] if records could not be written
    }

``CLASS`` is one of ``orphan``, ``expired-tombstone``, ``recent``, ``log-temp``,
``pending-commit``, ``stranded-commit``, ``lost-commit`` (:mod:`.classify`); ``path`` is relative to the table
root and decoded, ``location`` absolute.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
from deltaguard.tools.deltalog.times import duration_text, iso_utc
from deltaguard.tools.orphans import run_outcome
from deltaguard.tools.orphans.classify import (
    ORPHANS_CLASSES,
    Candidate,
    FileClass,
    ScanResult,
    scan,
)
from deltaguard.tools.orphans.cleanup import CleanupResult, cleanup_classes, execute
from deltaguard.tools.orphans.engine import (
    EngineScan,
    OrphansEngine,
    OrphansRequest,
    inventory_of,
)
from deltaguard.tools.orphans.interrupt import StopSignal
from deltaguard.tools.orphans.inventory import InventorySource
from deltaguard.tools.orphans.key_ranges import DEFAULT_RANGE_FILES
from deltaguard.tools.orphans.listing import ListingProgress
from deltaguard.tools.orphans.manifest import Manifest
from deltaguard.tools.orphans.references import WHY_EVERY_LOG_FILE
from deltaguard.tools.orphans.rules import RetentionTooShortError, check_retention
from deltaguard.tools.orphans.run_outcome import CleanupSteps, Outcome, RunFailed
from deltaguard.tools.output import write_tsv
from deltaguard.tools.progress import phase
from deltaguard.tools.state_dir import manifests_dir
from deltaguard.tools.storage import S3Options, TableStore, open_table
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
    """The ``--json`` document (:func:`to_json`); with a report table, its totals and
    partitions (complete when ``files`` is capped) and the ``report_table`` pointer."""
    doc = to_json(scan.result, engine.store(), cleanup)
    if scan.report_path is not None:
        doc["totals"], doc["partitions"] = scan.totals, largest_first(scan.partitions)
        doc["report_table"] = scan.report_path
    return doc


def print_scan(scan: EngineScan, out: Console) -> None:
    """The terminal report (:func:`print_report`), or only the totals when the scan
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


class LocalEngine:
    """:class:`~.engine.OrphansEngine` in this process."""

    def __init__(self) -> None:
        self._store: TableStore | None = None

    def scan(self, req: OrphansRequest, retention_ms: int | None) -> EngineScan:
        self._store = store = open_table(req.table, req.s3)
        inventory = inventory_of(req)
        result = scan_with_progress(
            store, retention_ms, req.workers, req.dynamodb, inventory, req.s3, req.range_files
        )
        found = result.candidates
        return EngineScan(result, len(found), totals(found), by_partition(found))

    def store(self) -> TableStore:
        assert self._store is not None, "scan first"
        return self._store

    def delete(
        self,
        req: OrphansRequest,
        scan: EngineScan,
        manifest: Path,
        stop: StopSignal,
        continues: Manifest | None = None,
    ) -> CleanupResult:
        return execute(
            self.store(),
            scan.result,
            manifest_path=manifest,
            options=req.cleanup,
            stop=stop,
            continues=continues,
        )

    def failure(self, exc: Exception) -> str | None:
        """None: the local engine raises only the errors :func:`.run.run_orphans` maps."""
        return None


REPORT_SCHEMA = "deltaguard.orphans.report/1"
_STYLE = {
    FileClass.ORPHAN: "bold red",
    FileClass.EXPIRED_TOMBSTONE: "yellow",
    FileClass.RECENT: "green",
    FileClass.LOG_TEMP: "magenta",
    FileClass.PENDING_COMMIT: "cyan",
    FileClass.COMMIT_EVIDENCE: "cyan",
    FileClass.STRANDED_COMMIT: "bold red",
    FileClass.LOST_COMMIT: "bold red",
    FileClass.EXPIRED_LOG: "yellow",
}
#: What cleanup does with each class (the terminal report's column).
CLEANUP_ACTION = {
    FileClass.ORPHAN: "--delete",
    FileClass.EXPIRED_TOMBSTONE: "--delete --include-tombstones",
    FileClass.RECENT: "kept (may be in flight)",
    FileClass.LOG_TEMP: "--delete",
    FileClass.PENDING_COMMIT: "never (the commit protocol may need it)",
    FileClass.COMMIT_EVIDENCE: "with its version (log-cleanup)",
    FileClass.STRANDED_COMMIT: "never (damage: may hold a missing commit)",
    FileClass.LOST_COMMIT: "never (a lost commit's rows: repair --restore-lost)",
    FileClass.EXPIRED_LOG: "log-cleanup --yes",
}


def totals(candidates: list[Candidate]) -> dict[str, dict[str, int]]:
    out = {c.value: {"files": 0, "bytes": 0} for c in ORPHANS_CLASSES}
    for c in candidates:
        out[c.file_class.value]["files"] += 1
        out[c.file_class.value]["bytes"] += c.size
    return out


def by_partition(candidates: list[Candidate]) -> list[dict[str, Any]]:
    """Files and bytes per (partition, class), largest first (:func:`largest_first`)."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for c in candidates:
        g = groups[(c.partition, c.file_class.value)]
        g[0] += 1
        g[1] += c.size
    return largest_first(
        [{"partition": p, "class": k, "files": n, "bytes": b} for (p, k), (n, b) in groups.items()]
    )


def largest_first(partitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``partitions`` rows of the report in its one order (both engines, JSON and text):
    bytes descending, then files descending, then partition and class as text."""
    return sorted(partitions, key=lambda r: (-r["bytes"], -r["files"], r["partition"], r["class"]))


#: Partition rows the text report shows (the JSON and TSV have them all).
SHOWN_PARTITIONS = 20
#: ``orphans --format tsv``'s columns (docs/guides/cleanup.md): one row per candidate, all of them.
TSV_COLUMNS = ("path", "class", "bytes", "modified", "reason", "location")


def write_tsv_report(result: ScanResult, store: TableStore) -> None:
    """Every candidate as a TSV row on stdout (:data:`TSV_COLUMNS`; ``modified`` is ISO 8601
    UTC)."""
    write_tsv(
        TSV_COLUMNS,
        (
            (
                c.path,
                c.file_class.value,
                c.size,
                iso_utc(c.mtime_ms),
                c.reason,
                store.location(c.path),
            )
            for c in result.candidates
        ),
    )


def to_json(
    result: ScanResult, store: TableStore, cleanup: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "schema": REPORT_SCHEMA,
        "table": result.table,
        "version": result.version,
        "now_ms": result.now_ms,
        "retention_ms": result.retention_ms,
        "cutoff_ms": result.cutoff_ms,
        "retention_source": result.retention_source,
        "listed_files": result.listed_files,
        "live_files": result.referenced_files,
        "log_files": result.log_files,
        "hidden_dirs": result.hidden_dirs,
        "kept_dirs": [{"path": k.path, "reason": k.reason} for k in result.kept_dirs],
        "scan_s": round(result.scan_s, 3),
        "totals": totals(result.candidates),
        "partitions": by_partition(result.candidates),
        "files": [
            {
                "path": c.path,
                "location": store.location(c.path),
                "size": c.size,
                "mtime_ms": c.mtime_ms,
                "class": c.file_class.value,
                "reason": c.reason,
            }
            for c in result.candidates
        ],
        "notes": result.notes,
        "inventory": None if result.inventory is None else result.inventory.to_json(),
        "cleanup": cleanup,
    }


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def print_report(
    result: ScanResult,
    console: Console,
    *,
    max_files: int = 50,
    partitions: list[dict[str, Any]] | None = None,
) -> None:
    """Totals by class, the :data:`SHOWN_PARTITIONS` partitions with the most bytes (of
    ``partitions``, default: :func:`by_partition` of the candidates), and the first files."""
    console.print(
        f"[bold]{result.table}[/] version {result.version}: {result.listed_files} files listed, "
        f"{result.referenced_files} live; retention {duration_text(result.retention_ms)} ({result.retention_source}); "
        f"scan {result.scan_s:.1f} s"
    )
    if result.inventory is not None:
        console.print(result.inventory.line(), highlight=False, soft_wrap=True)
    t = Table(title="Unreferenced files by class")
    for col in ("class", "files", "size", "cleanup"):
        t.add_column(col, justify="left" if col in ("class", "cleanup") else "right")
    for cls, tot in totals(result.candidates).items():
        fc = FileClass(cls)
        cells = (str(tot["files"]), _size(tot["bytes"]), CLEANUP_ACTION[fc])
        t.add_row(f"[{_STYLE[fc]}]{cls}[/]", *cells)
    console.print(t)
    parts = largest_first(by_partition(result.candidates) if partitions is None else partitions)
    if parts:
        shown_parts = parts[:SHOWN_PARTITIONS]
        title = f"By partition ({len(shown_parts)} of {len(parts)}, largest first)"
        pt = Table(title=title, min_width=len(title))  # the title on one line
        for col in ("partition", "class", "files", "size"):
            pt.add_column(
                col,
                justify="right" if col in ("files", "size") else "left",
                overflow="fold" if col == "partition" else "ellipsis",
            )
        for row in shown_parts:
            pt.add_row(
                row["partition"] or "(root)", row["class"], str(row["files"]), _size(row["bytes"])
            )
        console.print(pt)
    shown = result.candidates[:max_files]
    if shown:
        ft = Table(title=f"Files ({len(shown)} of {len(result.candidates)})")
        for col in ("path", "class", "size", "reason"):
            ft.add_column(col, overflow="fold")  # whole paths, also at a narrow terminal
        for c in shown:
            ft.add_row(
                c.path, f"[{_STYLE[c.file_class]}]{c.file_class.value}[/]", _size(c.size), c.reason
            )
        console.print(ft)
    for kept in result.kept_dirs:
        console.print(f"kept: {kept.path or '(root)'}/: {kept.reason}")
    for note in result.notes:
        console.print(f"[dim]note: {note}[/]")
