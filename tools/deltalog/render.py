"""Human-readable output of audits and history (rich), shared by the CLI and the demo."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table

from deltaguard.tools.deltalog.audit import AuditReport
from deltaguard.tools.deltalog.findings import Severity
from deltaguard.tools.deltalog.history import HistoryEntry
from deltaguard.tools.deltalog.times import iso_utc
from deltaguard.tools.output import write_tsv

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def print_audit(report: AuditReport, console: Console) -> None:
    s = report.summary
    console.print(f"[bold]deltaguard audit[/] {report.table}")
    if report.version is not None:
        console.print(
            f"  version {report.version} of {report.latest_version} ({iso_utc(s.get('timestamp_ms'))}): "
            f"{s.get('live_files')} live files, {s.get('live_bytes')} bytes, "
            f"{s.get('tombstones')} tombstones"
        )
        console.print(
            f"  replayed from {s.get('checkpoint') or 'commit 0'} + {s.get('commits_replayed')} "
            f"JSON file(s); {s.get('commits')} commits retained (oldest {s.get('oldest_commit')}), "
            f"{s.get('checkpoints')} checkpoint(s)"
        )
        console.print(f"  data files checked: {s.get('data_files_checked')}")
        console.print(f"  checkpoint compared: {s.get('checkpoint_compared')}")
    if log := s.get("log"):
        print_log_cost(log, console)
    if lost_note := (s.get("lost_commits") or {}).get("note"):
        console.print(f"  note: {lost_note}", markup=False)
    if not report.findings:
        console.print("[bold green]healthy: no findings[/]")
        return
    table = Table(show_lines=False)
    table.add_column("severity", no_wrap=True)
    table.add_column("code", no_wrap=True)
    table.add_column("file:line", overflow="fold")  # whole paths: fold, never cut
    table.add_column("finding", overflow="fold")
    for f in report.findings:
        where = f"{f.file}:{f.line}" if f.file and f.line else (f.file or "")
        table.add_row(f"[{_STYLE[f.severity]}]{f.severity}[/]", f.code, where, f.message)
    console.print(table)
    for code, hint in dict.fromkeys((f.code, f.hint) for f in report.findings):
        console.print(f"[bold]{code}[/]: {hint}")
    counts = report.counts()
    verdict = "[bold green]healthy[/]" if report.healthy else "[bold red]needs attention[/]"
    console.print(
        f"{verdict}: {counts['error']} error(s), {counts['warning']} warning(s), "
        f"{counts['info']} info"
    )


def print_log_cost(log: dict[str, Any], console: Console) -> None:
    """The audit's lines on what ``_delta_log`` costs (the summary's ``log``)."""
    kinds = ", ".join(
        f"{kind.replace('_', ' ')} {b['objects']} ({b['bytes']} bytes)"
        for kind, b in log["by_kind"].items()
        if b is not None and b["objects"]
    )
    unlisted = "; _sidecars/ not listed" if log["by_kind"].get("sidecars") is None else ""
    console.print(
        f"  _delta_log: {log['objects']} objects, {log['bytes']} bytes ({kinds}{unlisted})",
        highlight=False,
        soft_wrap=True,
    )
    newest = log["newest_checkpoint"]
    since = f"checkpoint {newest}" if newest is not None else "no checkpoint"
    removable = log["log_cleanup_would_remove"]
    would = (
        f"log-cleanup would remove {removable} objects ({log['log_cleanup_would_remove_bytes']} "
        "bytes; sidecars and .crc files not counted)"
        if removable is not None
        else "what log-cleanup would remove is unknown (the snapshot could not be read)"
    )
    console.print(
        f"  {log['versions_since_checkpoint']} version(s) since the newest checkpoint ({since}); "
        f"{would}",
        highlight=False,
        soft_wrap=True,
    )


def _trouble(e: HistoryEntry) -> str:
    """A version's trouble: ``<state> (<finding>): <problem>``."""
    return f"{e.state} ({e.finding}): {e.problem}"


def print_history(entries: list[HistoryEntry], console: Console) -> None:
    """One row per commit, with its txn (app id=version) and userMetadata: what a writer looks
    for after a commit outcome the store could not settle (docs/guides/commit-path.md)."""
    table = Table()
    for column in (
        "version",
        "timestamp (UTC)",
        "operation",
        "parameters",
        "metrics",
        "txn",
        "userMetadata",
        "engine",
        "commit path",
    ):
        table.add_column(column, overflow="fold")
    for e in entries:
        trouble = f"[red]{_trouble(e)}[/]" if e.problem else None
        table.add_row(
            str(e.version),
            iso_utc(e.timestamp_ms),
            " ".join(filter(None, (e.operation, trouble))) or "-",
            json.dumps(e.parameters, separators=(",", ":")) if e.parameters else "",
            json.dumps(e.metrics, separators=(",", ":")) if e.metrics else "",
            ", ".join(f"{k}={v}" for k, v in e.txn_app_ids.items()),
            e.user_metadata or "",
            e.engine or "",
            str(e.commit_path),
        )
    console.print(table)


#: ``audit --format tsv``'s columns (docs/guides/audit.md).
AUDIT_TSV_COLUMNS = ("severity", "code", "file", "line", "message", "hint")
#: ``history --format tsv``'s columns (docs/guides/audit.md): parameters and metrics as JSON.
HISTORY_TSV_COLUMNS = (
    "version",
    "timestamp",
    "operation",
    "parameters",
    "metrics",
    "txn",
    "user_metadata",
    "engine",
    "file",
    "problem",
    "state",
    "finding",
    "writer",
    "commit_path",
    "commit_mark",
)


def audit_tsv(report: AuditReport) -> None:
    """The findings as TSV on stdout, one row each (:data:`AUDIT_TSV_COLUMNS`)."""
    write_tsv(
        AUDIT_TSV_COLUMNS,
        ((str(f.severity), f.code, f.file, f.line, f.message, f.hint) for f in report.findings),
    )


def history_tsv(entries: list[HistoryEntry]) -> None:
    """The commits as TSV on stdout, newest first (:data:`HISTORY_TSV_COLUMNS`)."""
    write_tsv(
        HISTORY_TSV_COLUMNS,
        (
            (
                e.version,
                None if e.timestamp_ms is None else iso_utc(e.timestamp_ms),
                e.operation,
                json.dumps(e.parameters, separators=(",", ":")) if e.parameters else None,
                json.dumps(e.metrics, separators=(",", ":")) if e.metrics else None,
                ",".join(f"{k}={v}" for k, v in e.txn_app_ids.items()) or None,
                e.user_metadata,
                e.engine,
                e.file,
                e.problem,
                str(e.state),
                e.finding,
                str(e.writer),
                str(e.commit_path),
                e.commit_mark,
            )
            for e in entries
        ),
    )
