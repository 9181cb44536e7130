"""Cleanup: delete what a scan found, after re-reading the log.

Safety argument (why a file that any retained version references is never deleted):

1. **Default classes are unreferenced by definition.** Without ``include_tombstones`` only
   ``orphan`` and ``log-temp`` files are deleted. An ``orphan`` is a visible data file that no
   retained log entry names (:attr:`References.ever`: every JSON commit and compaction in
   ``_delta_log`` plus the checkpoints every reconstructable version starts from), so no
   version that can still be read references it. ``log-temp`` files are never read by Delta
   (temp files, parts of incomplete checkpoints, sidecars no retained checkpoint names). A
   DynamoDB temp commit is ``log-temp`` only once the log protocol cannot need it any more
   (its ``N.json`` exists and its DynamoDB entry is complete or expired); one that may still
   hold a commit is ``pending-commit`` or ``stranded-commit``, never deleted
   (:mod:`deltaguard.tools.deltalog.temp_commits` gives the rule and why).
2. **In-flight writers.** A writer writes its files first and commits them later. Files
   modified after the cut-off (``now - retention``, at least 24 hours unless
   ``unsafe_retention``) are ``recent`` and never deleted, so a writer's files are safe as
   long as it commits within the retention.
3. **Re-read before delete.** Right before deleting, the log is listed and replayed again
   (and the DynamoDB table asked again) and the reference sets are rebuilt; any target that a commit made since the scan names
   (or that the snapshot now protects), or that is no longer older than a changed cut-off, is
   spared and reported in the manifest. Only the short window between this re-read and the
   delete requests remains: a commit landing inside it could only reference a file older than
   the retention (2. protects newer ones), which Delta writers never do.
4. ``expired-tombstone`` (only with ``include_tombstones``) are files the snapshot no longer
   protects: Delta's own VACUUM rule. Versions older than the retention may still name them;
   that is the retention contract VACUUM has, and why it is opt-in.
5. Deletes stay inside the table root (:func:`.deleter.check_contained`).
6. A scan that read an inventory instead of listing (``--inventory``) keeps all of the above;
   why an inventory older than the scan adds no risk is argued in :mod:`.inventory`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from deltaguard.tools.deltalog.listing import LogListing, list_log
from deltaguard.tools.deltalog.snapshot import load_snapshot
from deltaguard.tools.deltalog.storage import DeleteOutcome, TableStore
from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck, read_entries
from deltaguard.tools.orphans.classify import Candidate, FileClass, ScanResult, log_candidates
from deltaguard.tools.orphans.deleter import delete_files
from deltaguard.tools.orphans.manifest import write_manifest
from deltaguard.tools.orphans.references import collect_references
from deltaguard.tools.orphans.rules import check_retention

DEFAULT_CLASSES = (FileClass.ORPHAN, FileClass.LOG_TEMP)


@dataclass
class Recheck:
    """The targets still eligible after re-reading the log, and those spared (with why)."""

    version: int
    targets: list[Candidate]
    spared: list[tuple[Candidate, str]] = field(default_factory=list)


@dataclass
class CleanupResult:
    """What :func:`execute` did. ``manifest_error``: the manifest's final write failed after
    the deletes (the file on disk still says ``deleting``); ``manifest`` is what it would
    have said."""

    recheck: Recheck
    outcome: DeleteOutcome
    manifest: dict[str, Any]
    manifest_error: str | None = None


class CleanupInterruptedError(Exception):
    """Deleting started and then stopped before every outcome was known (a failed delete
    job). ``manifest`` says what is known: ``deleted``, and ``unknown`` for the rest."""

    def __init__(self, message: str, manifest: dict[str, Any]) -> None:
        super().__init__(message)
        self.manifest = manifest


def unfinished(manifest: dict[str, Any]) -> bool:
    """True if a cleanup's manifest records deletions that failed or whose outcome is unknown,
    or a failure after the deletes began (``error``): exit code 3, both engines."""
    counts = manifest.get("counts") or {
        k: len(manifest.get(k) or []) for k in ("failed", "unknown")
    }
    return bool(counts.get("failed") or counts.get("unknown") or manifest.get("error"))


def summary(manifest: dict[str, Any], manifest_path: str) -> str:
    """The one-line outcome of a cleanup (both engines' terminal message): what was deleted,
    what failed and what is unknown, and any failure after the deletes began. Never says
    "nothing deleted" once deleting started."""
    counts = manifest.get("counts") or {
        k: len(manifest.get(k) or []) for k in ("deleted", "missing", "spared", "failed", "unknown")
    }
    line = (
        f"deleted {counts.get('deleted', 0)} files ({counts.get('missing', 0)} already gone, "
        f"{counts.get('spared', 0)} spared by the re-read of the log, "
        f"{counts.get('failed', 0)} failed, {counts.get('unknown', 0)} outcome unknown)"
    )
    if manifest.get("error"):
        line += f"; then: {manifest['error']}"
    return f"{line}; manifest: {manifest_path}"


def cleanup_classes(include_tombstones: bool) -> tuple[FileClass, ...]:
    return (
        (*DEFAULT_CLASSES, FileClass.EXPIRED_TOMBSTONE) if include_tombstones else DEFAULT_CLASSES
    )


def targets(result: ScanResult, include_tombstones: bool) -> list[Candidate]:
    """The scan's candidates cleanup would delete (``recent`` never is)."""
    return result.of(*cleanup_classes(include_tombstones))


def log_leftovers(
    store: TableStore, listing: LogListing, cutoff_ms: int, dynamodb: DynamoDBCheck | None
) -> frozenset[str]:
    """The ``_delta_log`` files that are still ``log-temp`` now (the DynamoDB table asked
    again): what the re-read lets cleanup delete there. Both engines call this."""
    entries = read_entries(dynamodb) if dynamodb is not None else None
    return frozenset(
        c.path
        for c in log_candidates(store, listing, cutoff_ms, entries)
        if c.file_class is FileClass.LOG_TEMP
    )


def recheck(
    store: TableStore,
    result: ScanResult,
    planned: list[Candidate],
    *,
    given_retention: bool,
    dynamodb: DynamoDBCheck | None = None,
) -> Recheck:
    """Re-lists and replays the log and drops every planned file the log now references or
    that is no longer older than the cut-off. Raises
    :class:`~deltaguard.tools.deltalog.errors.DeltaLogError` if the log cannot be read (then
    nothing must be deleted)."""
    listing = list_log(store)
    snapshot = load_snapshot(store, listing=listing)
    retention = result.retention_ms if given_retention else snapshot.deleted_file_retention_ms()
    cutoff = min(result.cutoff_ms, result.now_ms - retention)
    refs = collect_references(snapshot, cutoff)
    log_still = log_leftovers(store, listing, cutoff, dynamodb)
    out = Recheck(snapshot.version, [])
    for c in planned:
        why = spared_because(
            c,
            cutoff,
            snapshot.version,
            log_leftover=c.path in log_still,
            protected=c.path in refs.protected,
            ever_named=c.path in refs.ever,
        )
        if why is not None:
            out.spared.append((c, why))
        else:
            out.targets.append(c)
    return out


def spared_because(
    c: Candidate,
    cutoff_ms: int,
    version: int,
    *,
    log_leftover: bool,
    protected: bool,
    ever_named: bool,
) -> str | None:
    """Why the re-read of the log (at ``version``, cut-off ``cutoff_ms``) spares planned file
    ``c``, or None if it may still be deleted. The one rule both engines apply."""
    if c.mtime_ms >= cutoff_ms:
        return "no longer older than the cut-off (retention changed)"
    if c.file_class is FileClass.LOG_TEMP and not log_leftover:
        return "no longer a log leftover"
    if protected:
        return f"referenced by the snapshot at version {version}"
    if c.file_class is FileClass.ORPHAN and ever_named:
        return f"a log entry now names it (latest version {version})"
    return None


def manifest_start(
    result: ScanResult, classes: tuple[FileClass, ...], planned: int
) -> dict[str, Any]:
    """The fields of a manifest's first write (``status: deleting``) that both engines record,
    in their order: what was scanned, the cut-off, the classes and how many files are planned."""
    return {
        "status": "deleting",
        "table": result.table,
        "version_scanned": result.version,
        "version_rechecked": None,
        "retention_ms": result.retention_ms,
        "cutoff_ms": result.cutoff_ms,
        "classes": [c.value for c in classes],
        "started_at": now_iso(),
        "finished_at": None,
        "planned": planned,
    }


def now_iso() -> str:
    """The manifests' timestamp: UTC, ISO 8601, to the second (both engines)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def execute(
    store: TableStore,
    result: ScanResult,
    *,
    manifest_path: Path,
    include_tombstones: bool = False,
    unsafe_retention: bool = False,
    given_retention: bool = False,
    dynamodb: DynamoDBCheck | None = None,
) -> CleanupResult:
    """Deletes the scan's targets after :func:`recheck`, writing the manifest before and after
    (see :mod:`.manifest`). Raises :class:`~.rules.RetentionTooShortError` for a retention
    under 24 hours without ``unsafe_retention`` (before anything is read or deleted),
    :class:`~.deleter.OutsideTableError` for a path outside the root, and
    :class:`~deltaguard.tools.deltalog.errors.DeltaLogError` if the re-read fails, and
    OSError if the first manifest cannot be written: all before anything is deleted. Once
    deleting has begun nothing is raised: files that could not be deleted are in
    ``outcome.failed``, those whose outcome is unknown in ``outcome.unknown``, and a failed
    final manifest write in ``manifest_error`` (and the manifest's ``error``)."""
    check_retention(result.retention_ms, unsafe_retention)
    classes = cleanup_classes(include_tombstones)
    planned = targets(result, include_tombstones)
    doc: dict[str, Any] = {
        **manifest_start(result, classes, len(planned)),
        "deleted": [],
        "missing": [],
        "spared": [],
        "failed": [],
        "unknown": [],
        "error": None,
        "requests": 0,
    }
    checked = recheck(store, result, planned, given_retention=given_retention, dynamodb=dynamodb)
    doc["version_rechecked"] = checked.version
    doc["spared"] = [
        {"path": c.path, "class": c.file_class.value, "why": why} for c, why in checked.spared
    ]
    doc["deleted"] = [_entry(c) for c in checked.targets]  # the intent, until the outcome is known
    write_manifest(manifest_path, doc)
    outcome = delete_files(store, [c.path for c in checked.targets])
    by_path = {c.path: c for c in checked.targets}
    doc.update(
        status="done",
        finished_at=now_iso(),
        deleted=[_entry(by_path[p]) for p in sorted(outcome.deleted)],
        missing=sorted(outcome.missing),
        failed=[{"path": p, "error": e} for p, e in sorted(outcome.failed)],
        unknown=[{"path": p, "error": e} for p, e in sorted(outcome.unknown)],
        requests=outcome.requests,
    )
    try:
        write_manifest(manifest_path, doc)
    except OSError as exc:  # the deletes happened: report them, never "nothing deleted"
        error = (
            f"the manifest could not be written ({exc}); {manifest_path} still says status "
            "deleting and lists every planned file"
        )
        doc["error"] = error
        return CleanupResult(checked, outcome, doc, manifest_error=error)
    return CleanupResult(checked, outcome, doc)


def _entry(c: Candidate) -> dict[str, Any]:
    return {"path": c.path, "class": c.file_class.value, "size": c.size, "mtime_ms": c.mtime_ms}
