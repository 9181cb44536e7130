"""``log-cleanup``'s scan and re-read: the files of ``_delta_log`` a log cleanup removes, as
cleanup candidates the orphans machinery deletes (:func:`.cleanup.execute`: manifest,
interruption, re-read before deleting).

The rule is :mod:`deltaguard.tools.deltalog.log_expiry`'s; this module adds what needs reads:
the snapshot (the table's properties and features; a log that cannot be replayed is refused),
``_last_checkpoint``, each candidate truncation checkpoint read whole (a checkpoint that cannot
be read is not reliable: an older one is taken), the sidecars no kept checkpoint names
(``_delta_log/_sidecars/`` is listed), and Hadoop ``.crc`` checksums, which follow their file
(:func:`.classify.checksum_candidates`). Classes: ``expired-log`` (Delta's own rule: commits,
checksums, checkpoints, compactions, backfilled ``_commits/`` files, sidecars), ``log-temp``
(what Delta never removes), ``pending-commit``/``stranded-commit`` (kept, whatever their age).
Every path is inside ``_delta_log/``; anything else raises before a delete.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from deltaguard.tools.deltalog.checkpoint import LOG_DIR, CheckpointRef, read_checkpoint
from deltaguard.tools.deltalog.listing import (
    LastCheckpointError,
    LogListing,
    list_log,
    read_last_checkpoint,
)
from deltaguard.tools.deltalog.log_expiry import (
    LogExpiry,
    day_cutoff_ms,
    plan_expiry,
)
from deltaguard.tools.deltalog.names import SIDECARS_DIR, hadoop_checksum_owner
from deltaguard.tools.deltalog.retention import LOG_RETENTION
from deltaguard.tools.deltalog.snapshot import Snapshot, load_snapshot
from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck, read_entries
from deltaguard.tools.orphans.classify import (
    TEMP_CLASS,
    Candidate,
    FileClass,
    ScanResult,
    checksum_candidates,
    referenced_sidecars,
)
from deltaguard.tools.orphans.cleanup import CleanupPlan, Recheck
from deltaguard.tools.storage import FileInfo, TableStore
from deltaguard.tools.storage.errors import DeltaLogError
from deltaguard.tools.storage.open import table_not_found

#: The classes ``log-cleanup --yes`` deletes.
LOG_CLEANUP_CLASSES = (FileClass.EXPIRED_LOG, FileClass.LOG_TEMP)
#: The DynamoDB temp commits ``log-cleanup`` reports and keeps.
KEPT_LOG_CLASSES = (
    FileClass.PENDING_COMMIT,
    FileClass.STRANDED_COMMIT,
    FileClass.COMMIT_EVIDENCE,
)
#: Kinds that are Delta's own cleanup (class ``expired-log``); the rest are ``log-temp``.
_DELTA_KINDS = frozenset(
    {"commit", "checksum", "checkpoint", "compaction", "backfilled-commit", "sidecar"}
)


@dataclass
class LogScan:
    """A log-cleanup scan: the :class:`~.classify.ScanResult` (candidates, cut-off truncated
    to the day), the checkpoint every retained version starts from (None: no version is
    removed), each candidate's kind by path, and the listing's totals."""

    result: ScanResult
    truncation_version: int | None
    kinds: dict[str, str] = field(default_factory=dict)
    log_objects: int = 0
    log_bytes: int = 0


class OutsideLogError(ValueError):
    """A planned path is not inside ``_delta_log/`` (never deleted)."""


def _sidecar_candidates(
    store: TableStore, listing: LogListing, truncation: int | None, cutoff_ms: int
) -> tuple[list[Candidate], list[FileInfo]]:
    """Sidecars older than the cut-off that no kept checkpoint names (none if a kept V2
    checkpoint cannot be read), and the listing of ``_sidecars/``."""
    listed = store.list_dir(f"{LOG_DIR}/{SIDECARS_DIR}")
    files = [i for i in listed if hadoop_checksum_owner(i.path.rpartition("/")[2]) is None]
    if not files:
        return [], listed
    kept = [r for r in listing.checkpoints if truncation is None or r.version >= truncation]
    used = referenced_sidecars(store, listing, kept)
    if used is None:
        return [], listed
    why = "sidecar no kept checkpoint names, older than the cut-off"
    return [
        Candidate(i.path, i.size, i.mtime_ms, FileClass.EXPIRED_LOG, why)
        for i in files
        if i.path not in used and i.mtime_ms < cutoff_ms
    ], listed


def _plan(
    store: TableStore,
    listing: LogListing,
    snapshot: Snapshot,
    cutoff_ms: int,
    dynamodb: DynamoDBCheck | None,
) -> LogExpiry:
    """:func:`~deltaguard.tools.deltalog.log_expiry.plan_expiry` of the log, with the
    DynamoDB table's entries (when asked), ``_last_checkpoint``'s version (None when it
    cannot be read: readers list the log instead; the audit names the damage) and each
    checkpoint's reliability (:func:`_reliable`)."""
    entries = read_entries(dynamodb) if dynamodb is not None else None
    try:
        hint = read_last_checkpoint(store)
    except LastCheckpointError:
        hint = None
    return plan_expiry(
        listing,
        snapshot.configuration,
        snapshot.protocol.writer_features,
        cutoff_ms,
        entries,
        reliable=_reliable(store),
        last_checkpoint_version=None if hint is None else hint.version,
    )


def _reliable(store: TableStore) -> Callable[[CheckpointRef], bool]:
    """Whether a checkpoint can be read whole (each one read once)."""
    cache: dict[CheckpointRef, bool] = {}

    def reliable(ref: CheckpointRef) -> bool:
        if ref not in cache:
            try:
                read_checkpoint(store, ref)
                cache[ref] = True
            except DeltaLogError:
                cache[ref] = False
        return cache[ref]

    return reliable


def _log_candidates(
    store: TableStore, listing: LogListing, expiry: LogExpiry, cutoff_ms: int
) -> tuple[list[Candidate], dict[str, str], list[FileInfo]]:
    """The expiry's candidates, the sidecars' and the Hadoop checksums' that follow them,
    each one's kind, and the listing of ``_sidecars/``. Raises :class:`OutsideLogError` for
    a candidate outside ``_delta_log/``."""
    candidates, kinds = _candidates(expiry, listing)
    sidecars, listed_sidecars = _sidecar_candidates(
        store, listing, expiry.truncation_version, cutoff_ms
    )
    candidates += sidecars
    kinds.update({c.path: "sidecar" for c in sidecars})
    sums = _checksum_candidates(listing, listed_sidecars, candidates, cutoff_ms)
    candidates += sums
    kinds.update({c.path: "hadoop-checksum" for c in sums})
    for c in candidates:
        if not c.path.startswith(f"{LOG_DIR}/") or ".." in c.path.split("/"):
            raise OutsideLogError(f"{c.path} is not inside {LOG_DIR}/: never deleted")
    return candidates, kinds, listed_sidecars


def _checksum_candidates(
    listing: LogListing, listed_sidecars: list[FileInfo], cleaned: list[Candidate], cutoff_ms: int
) -> list[Candidate]:
    """The Hadoop ``.crc`` checksums of the log and of ``_sidecars/`` that follow their file
    (:func:`.classify.checksum_candidates`)."""
    log_infos = [
        FileInfo(f"{LOG_DIR}/{n}", listing.files[n].size, listing.files[n].mtime_ms)
        for n in listing.hadoop_checksums
        if n in listing.files
    ]
    sidecar_sums = [i for i in listed_sidecars if hadoop_checksum_owner(i.path.rpartition("/")[2])]
    return checksum_candidates(
        [*log_infos, *sidecar_sums],
        present={f"{LOG_DIR}/{n}" for n in listing.files} | {i.path for i in listed_sidecars},
        cleaned={c.path for c in cleaned if c.file_class in LOG_CLEANUP_CLASSES},
        cutoff_ms=cutoff_ms,
    )


def _notes(expiry: LogExpiry) -> list[str]:
    """The expiry's notes, after the one naming the truncation checkpoint (if any)."""
    notes = list(expiry.notes)
    if expiry.truncation_version is not None:
        notes.insert(
            0,
            f"every version from {expiry.truncation_version} on stays readable (from its "
            "checkpoint); the versions below it are removed whole",
        )
    return notes


def scan_log(
    store: TableStore,
    *,
    now_ms: int | None = None,
    retention_ms: int | None = None,
    dynamodb: DynamoDBCheck | None = None,
) -> LogScan:
    """Plans a log cleanup of ``store``'s table at ``now_ms`` (default: now) with
    ``retention_ms`` (default: the table's ``delta.logRetentionDuration``). Raises
    :class:`~deltaguard.tools.storage.errors.DeltaLogError` if the log cannot be listed or
    replayed (nothing is planned then), ValueError for a bad retention property."""
    started = time.monotonic()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    listing = list_log(store)
    if listing.latest_version is None and not listing.files:
        raise table_not_found(store, f"{LOG_DIR}/ is empty or missing")
    snapshot = load_snapshot(store, listing=listing)
    retention_ms, source = LOG_RETENTION.resolve(snapshot.configuration, retention_ms)
    cutoff = day_cutoff_ms(now, retention_ms)
    expiry = _plan(store, listing, snapshot, cutoff, dynamodb)
    candidates, kinds, listed_sidecars = _log_candidates(store, listing, expiry, cutoff)
    notes = _notes(expiry)
    infos = [*listing.files.values(), *listing.temp_infos.values(), *listing.staged_infos.values()]
    result = ScanResult(
        table=store.uri,
        version=snapshot.version,
        now_ms=now,
        retention_ms=retention_ms,
        retention_source=source,
        candidates=candidates,
        listed_files=len(infos) + len(listed_sidecars),
        referenced_files=0,
        hidden_dirs=[],
        log_files=len(listing.files),
        scan_s=time.monotonic() - started,
        notes=notes,
        day_truncated=True,
    )
    return LogScan(
        result,
        expiry.truncation_version,
        kinds,
        len(infos) + len(listed_sidecars),
        sum(i.size for i in infos) + sum(i.size for i in listed_sidecars),
    )


def _candidates(expiry: LogExpiry, listing: LogListing) -> tuple[list[Candidate], dict[str, str]]:
    """The expiry's files and kept temp commits as candidates, and each one's kind."""
    out: list[Candidate] = []
    kinds: dict[str, str] = {}
    for f in expiry.files:
        cls = FileClass.EXPIRED_LOG if f.kind in _DELTA_KINDS else FileClass.LOG_TEMP
        out.append(Candidate(f"{LOG_DIR}/{f.name}", f.size, f.mtime_ms, cls, f.reason))
        kinds[f"{LOG_DIR}/{f.name}"] = f.kind
    for name, verdict in expiry.kept_temp:
        path = f"{LOG_DIR}/{name}"
        info = listing.temp_infos.get(name) or listing.files.get(name)
        size, mtime = (info.size, info.mtime_ms) if info is not None else (0, 0)
        out.append(Candidate(path, size, mtime, TEMP_CLASS[verdict.state], verdict.reason))
        kinds[path] = "temp-commit"
    return out, kinds


def log_cleanup_plan(
    store: TableStore,
    scan: LogScan,
    *,
    given_retention: bool,
    dynamodb: DynamoDBCheck | None,
) -> CleanupPlan:
    """The :class:`~.cleanup.CleanupPlan` of ``log-cleanup``: its classes, and the re-read
    right before deleting: the log is listed, replayed and planned again (the DynamoDB table
    asked again) at the scan's time with the retention given, or else the longer of the
    scan's and the table's at the re-read; a planned file the new plan does not remove (or
    removes in another class) is spared."""

    def recheck(planned: list[Candidate]) -> Recheck:
        result = scan.result
        again = scan_log(
            store,
            now_ms=result.now_ms,
            retention_ms=result.retention_ms if given_retention else None,
            dynamodb=dynamodb,
        )
        if again.result.retention_ms < result.retention_ms:  # shortened since: keep the scan's
            again = scan_log(
                store, now_ms=result.now_ms, retention_ms=result.retention_ms, dynamodb=dynamodb
            )
        now_removable = {
            c.path: c.file_class
            for c in again.result.candidates
            if c.file_class in LOG_CLEANUP_CLASSES
        }
        out = Recheck(again.result.version, [])
        for c in planned:
            if now_removable.get(c.path) is c.file_class:
                out.targets.append(c)
            else:
                out.spared.append(
                    (
                        c,
                        f"no longer removable at the re-read of the log (version "
                        f"{again.result.version}, truncation checkpoint "
                        f"{again.truncation_version})",
                    )
                )
        return out

    return CleanupPlan("log-cleanup", LOG_CLEANUP_CLASSES, recheck)
