"""The scan report: totals by class and by partition, the JSON document, the terminal view.

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

from collections import defaultdict
from typing import Any

from rich.console import Console
from rich.table import Table

from deltaguard.tools.deltalog.times import duration_text, iso_utc
from deltaguard.tools.orphans.classify import ORPHANS_CLASSES, Candidate, FileClass, ScanResult
from deltaguard.tools.output import write_tsv
from deltaguard.tools.storage import TableStore

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
