"""Cleanup: delete what a scan found, after re-reading the log.

Safety argument (why a file that any retained version references is never deleted):

1. **Default classes are unreferenced by definition.** Without ``include_tombstones`` only
   ``orphan`` and ``log-temp`` files are deleted. An ``orphan`` is a visible data file that no
   retained log entry names (:attr:`References.named_in_log`: every JSON commit and compaction in
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
7. An interrupted cleanup (SIGINT, SIGTERM) sends no delete after the signal and leaves a
   true record: settled outcomes, ``unknown`` for a request whose answer was not read,
   ``not_sent`` for the rest (:mod:`.interrupt`); the re-run that finishes it is a new scan,
   so all of the above applies to it again (its manifest names the run it continues:
   :func:`.manifest.continuation`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, Protocol

from deltaguard.tools.deltalog.listing import LogListing, list_log
from deltaguard.tools.deltalog.retention import DELETED_FILE_RETENTION
from deltaguard.tools.deltalog.snapshot import load_snapshot
from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck, read_entries
from deltaguard.tools.orphans.classify import (
    Candidate,
    FileClass,
    ScanResult,
    log_candidates,
)
from deltaguard.tools.orphans.deleter import delete_in_batches, settled
from deltaguard.tools.orphans.interrupt import CleanupStopped, StopSignal
from deltaguard.tools.orphans.manifest import (
    MANIFEST_SCHEMA,
    OUTCOME_DIR,
    PLAN_DIR,
    RECORDS,
    SUMMARY_FILE,
    Manifest,
    RecordWriter,
    continuation,
    prepare_manifest_dir,
    write_summary,
)
from deltaguard.tools.orphans.references import collect_references
from deltaguard.tools.orphans.rules import check_retention
from deltaguard.tools.progress import Phase, phase
from deltaguard.tools.storage import DeleteOutcome, TableStore

DEFAULT_CLASSES = (FileClass.ORPHAN, FileClass.LOG_TEMP)


@dataclass(frozen=True)
class CleanupOptions:
    """What the command says about a cleanup (both engines): delete ``expired-tombstone``
    files too; allow a retention under 24 hours; the retention was given (else the re-read
    takes the table's as it is then); the DynamoDB LogStore's table to ask again."""

    include_tombstones: bool = False
    unsafe_retention: bool = False
    given_retention: bool = False
    dynamodb: DynamoDBCheck | None = None


#: The default: the default classes, at least 24 hours, the table's retention at the re-read.
DEFAULT_CLEANUP = CleanupOptions()


@dataclass
class Recheck:
    """The targets still eligible after re-reading the log, and those spared (with why)."""

    version: int
    targets: list[Candidate]
    spared: list[tuple[Candidate, str]] = field(default_factory=list)


@dataclass
class CleanupResult:
    """What a cleanup did, both engines (:func:`run_cleanup`). ``manifest``: the manifest's
    summary as last written, or as it would have been written. ``manifest_error``: a write of
    the manifest failed after the deletes began (the summary on disk may still say
    ``deleting``); ``unwritten``: the outcome records that could not be written to the
    manifest then (empty otherwise: the records are on disk, never held). ``recheck``: the
    targets and spared files of the re-read (local engine; the Spark engine's are in the
    manifest's plan records only)."""

    manifest: dict[str, Any]
    manifest_error: str | None = None
    unwritten: list[dict[str, Any]] = field(default_factory=list)
    recheck: Recheck | None = None

    @property
    def summary(self) -> dict[str, Any]:
        """The manifest's summary (:attr:`manifest`)."""
        return self.manifest

    @property
    def counts(self) -> dict[str, int]:
        """Files per outcome (``planned``, ``spared``, ``deleted``, ``missing``, ``failed``,
        ``unknown``, ``not_sent``)."""
        counts: dict[str, int] = self.manifest["counts"]
        return counts


class CleanupInterruptedError(Exception):
    """Deleting started and then stopped before every outcome was known (a failed delete
    job). ``manifest`` says what is known: ``deleted``, and ``unknown`` for the rest."""

    def __init__(self, message: str, manifest: dict[str, Any]) -> None:
        super().__init__(message)
        self.manifest = manifest


def unfinished(manifest: dict[str, Any]) -> bool:
    """True if a cleanup's manifest summary records deletions that failed or whose outcome is
    unknown, or a failure after the deletes began (``error``): exit code 3, both engines
    (unless a signal stopped it: :func:`stopped_by`)."""
    counts = manifest["counts"]
    return bool(counts["failed"] or counts["unknown"] or manifest.get("error"))


def stopped_by(manifest: dict[str, Any]) -> str | None:
    """The signal (``SIGINT``, ``SIGTERM``) that stopped a cleanup, from its manifest
    summary, or None: exit code 4, both engines."""
    signal: str | None = manifest.get("signal")
    return signal


def summary(manifest: dict[str, Any], manifest_path: str) -> str:
    """The one-line outcome of a cleanup (both engines' terminal message) from its manifest
    summary: what was deleted, what failed, what is unknown and what a stop kept from being
    sent, and any failure after the deletes began. Never says "nothing deleted" once
    deleting started."""
    counts = manifest["counts"]
    not_sent = counts.get("not_sent", 0)
    line = (
        f"deleted {counts['deleted']} files ({counts['missing']} already gone, "
        f"{counts['spared']} spared by the re-read of the log, "
        f"{counts['failed']} failed, {counts['unknown']} outcome unknown"
        + (f", {not_sent} not sent" if not_sent else "")
        + ")"
    )
    if signal := stopped_by(manifest):
        line = f"stopped by {signal}: {line}"
    if manifest.get("error"):
        line += f"; then: {manifest['error']}"
    return f"{line}; manifest: {manifest_path} (status {manifest.get('status')})"


def how_to_finish(manifest: dict[str, Any], explicit_manifest: bool) -> str:
    """The line after an interrupted cleanup (both engines): what happened to the requests
    in flight, and how to finish."""
    counts = manifest["counts"]
    if manifest.get("version_rechecked") is None:
        what = "stopped before deleting began: nothing was deleted"
    else:
        what = (
            f"no delete was sent after the {manifest.get('signal') or 'signal'}; the requests "
            f"in flight were settled ({counts['unknown']} files with an unknown outcome, "
            f"{counts.get('not_sent', 0)} never sent)"
        )
    again = "run the same command again"
    if explicit_manifest:
        again += " (the same --manifest: its manifest goes beside this one)"
    return (
        f"{what}. To finish, {again}: it scans the table again, plans what is left "
        "from a fresh re-read of the log, and re-checks the files of unknown outcome"
    )


def continues_line(manifest: dict[str, Any]) -> str | None:
    """The line saying which earlier run a cleanup continues (both engines; from its
    manifest summary's ``continues``, :func:`.manifest.continuation`), or None."""
    earlier = manifest.get("continues")
    if not earlier:
        return None
    how = f"status {earlier['status']}" + (f", {earlier['signal']}" if earlier["signal"] else "")
    line = (
        f"continues the unfinished run {earlier['run']} ({how}; it deleted "
        f"{earlier['deleted']} files, not counted here)"
    )
    if earlier.get("rechecked"):
        line += (
            f": of its {earlier['rechecked']} files of unknown outcome, {earlier['gone']} are "
            f"gone and {earlier['planned_again']} were planned again"
        )
    return line


@dataclass(frozen=True)
class CleanupPlan:
    """What :func:`execute` deletes for one command: the ``command`` (its manifests and
    progress say it), the ``classes`` of the scan's candidates it deletes, and ``recheck``,
    the re-read of the log right before deleting (planned candidates -> :class:`Recheck`)."""

    command: str
    classes: tuple[FileClass, ...]
    recheck: Callable[[list[Candidate]], Recheck]


def orphans_plan(store: TableStore, result: ScanResult, options: CleanupOptions) -> CleanupPlan:
    """``orphans``' plan: :func:`cleanup_classes`, re-read by :func:`recheck`."""
    return CleanupPlan(
        "orphans",
        cleanup_classes(options.include_tombstones),
        lambda planned: recheck(
            store,
            result,
            planned,
            given_retention=options.given_retention,
            dynamodb=options.dynamodb,
        ),
    )


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
    cutoff = recheck_cutoff(result, snapshot.configuration, given_retention)
    refs = collect_references(snapshot, cutoff)
    log_temp_now = log_leftovers(store, listing, cutoff, dynamodb)
    out = Recheck(snapshot.version, [])
    for c in planned:
        why = spared_because(
            c,
            cutoff,
            snapshot.version,
            log_leftover=c.path in log_temp_now,
            protected=c.path in refs.protected,
            named_in_log=c.path in refs.named_in_log,
        )
        if why is not None:
            out.spared.append((c, why))
        else:
            out.targets.append(c)
    return out


def recheck_cutoff(
    result: ScanResult, configuration: Mapping[str, str], given_retention: bool
) -> int:
    """The cut-off of the re-read before deleting (both engines): the scan's, or earlier if
    the table's retention (``configuration``, when none was given) grew since."""
    retention = result.retention_ms if given_retention else DELETED_FILE_RETENTION.ms(configuration)
    return min(result.cutoff_ms, result.now_ms - retention)


def spared_because(
    c: Candidate,
    cutoff_ms: int,
    version: int,
    *,
    log_leftover: bool,
    protected: bool,
    named_in_log: bool,
) -> str | None:
    """Why the re-read of the log (at ``version``, cut-off ``cutoff_ms``) spares planned file
    ``c``, or None if it may still be deleted. The one rule both engines apply."""
    if c.mtime_ms >= cutoff_ms:
        return "no longer older than the cut-off (retention changed)"
    if c.file_class is FileClass.LOG_TEMP and not log_leftover:
        return "no longer a log leftover"
    if protected:
        return f"referenced by the snapshot at version {version}"
    if c.file_class is FileClass.ORPHAN and named_in_log:
        return f"a log entry now names it (latest version {version})"
    return None


def manifest_start(
    result: ScanResult,
    classes: tuple[FileClass, ...],
    planned: int,
    to_delete: int,
    spared: int,
    continues: dict[str, Any] | None = None,
    command: str = "orphans",
) -> dict[str, Any]:
    """The manifest summary's first write (``status: deleting``, see :mod:`.manifest`), both
    engines: what was scanned, the cut-off, the classes, the files the scan planned, the
    counts once the re-read of the log kept ``to_delete`` of them and spared ``spared``, and
    the earlier run it ``continues`` (:func:`.manifest.continuation`); ``command``: the
    command that wrote it (``orphans`` or ``log-cleanup``)."""
    return {
        "schema": MANIFEST_SCHEMA,
        "command": command,
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
        "counts": {
            "planned": to_delete,
            "spared": spared,
            "deleted": 0,
            "missing": 0,
            "failed": 0,
            "unknown": 0,
            "not_sent": 0,
        },
        "records": dict(RECORDS),
        "error": None,
        "signal": None,
        "requests": None,
        "continues": continues,
    }


def now_iso() -> str:
    """The manifests' timestamp: UTC, ISO 8601, to the second (both engines)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def execute(
    store: TableStore,
    result: ScanResult,
    *,
    manifest_path: Path,
    options: CleanupOptions = DEFAULT_CLEANUP,
    stop: StopSignal | None = None,
    continues: Manifest | None = None,
    plan: CleanupPlan | None = None,
) -> CleanupResult:
    """The local engine's cleanup: :func:`run_cleanup` with deletes from this process
    (:func:`.deleter.delete_in_batches`, each outcome record streamed to Parquet as its batch
    is settled). ``plan``: another command's classes, re-read and name (``log-cleanup``); by
    default the orphans ones (:func:`orphans_plan`)."""
    if plan is None:
        plan = orphans_plan(store, result, options)
    hooks = _LocalCleanup(store, result, plan, manifest_path)
    done = run_cleanup(
        hooks,
        result,
        manifest_path=manifest_path,
        classes=plan.classes,
        options=options,
        stop=stop,
        continues=continues,
        command=plan.command,
    )
    done.recheck = hooks.checked
    return done


@dataclass(frozen=True)
class Rechecked:
    """What an engine's re-read kept: the log ``version`` it read, the files still
    ``planned`` and those ``spared`` (their plan records written, containment checked)."""

    version: int
    planned: int
    spared: int


@dataclass
class Deleted:
    """What an engine's deletes did: files per outcome, the delete requests sent (None: not
    counted), a failed record write (``error``) and the records it could not write
    (``unwritten``), and a delete job that failed part way (``failure``: the summary's error
    and the exception)."""

    counts: dict[str, int]
    requests: int | None = None
    error: str | None = None
    unwritten: list[dict[str, Any]] = field(default_factory=list)
    failure: tuple[str, Exception] | None = None


class CleanupHooks(Protocol):
    """The engine's part of :func:`run_cleanup`; everything else is written once there."""

    #: What a failed final summary write leaves to find every file by (for its message).
    records_note: str

    def planned(self) -> int:
        """How many of the scan's candidates are of the cleanup classes."""
        ...

    def recheck(self) -> Rechecked:
        """Re-reads the log, writes the plan records, checks that every target is inside the
        table root; raises (nothing deleted) if any of it fails."""
        ...

    def arm(self, stop: StopSignal) -> None:
        """From here a signal stops the deletes instead of raising."""
        ...

    def abandon(self) -> None:
        """A signal stopped the run before deleting: stop what the engine started."""
        ...

    def delete(self, stop: StopSignal | None) -> Deleted:
        """Deletes the re-read's targets, writing each outcome record."""
        ...


def run_cleanup(
    hooks: CleanupHooks,
    result: ScanResult,
    *,
    manifest_path: Path,
    classes: tuple[FileClass, ...],
    options: CleanupOptions,
    stop: StopSignal | None,
    continues: Manifest | None,
    command: str = "orphans",
) -> CleanupResult:
    """The cleanup sequence both engines follow, writing the manifest directory
    ``manifest_path`` as it goes (:mod:`.manifest`): the plan records and the ``deleting``
    summary before the first delete, the outcome records, the final summary last. Raises
    :class:`~.rules.RetentionTooShortError` for a retention under 24 hours without
    ``unsafe_retention`` (before anything is read or deleted),
    :class:`~.manifest.ManifestPathError` for a path that cannot be a manifest directory or
    that already holds one, :class:`~.deleter.OutsideTableError` for a path outside the root,
    :class:`~deltaguard.tools.deltalog.errors.DeltaLogError` if the re-read fails, and
    OSError if the plan or the first summary cannot be written: all before anything is
    deleted. ``stop`` (:mod:`.interrupt`): a signal before deleting began raises
    :class:`~.interrupt.CleanupStopped` once the summary says ``interrupted`` (nothing
    deleted); once deleting has begun it stops the sending, and the summary ends
    ``interrupted`` with the counts of what was settled, ``unknown`` and ``not_sent``. Once
    deleting has begun nothing is raised but :class:`CleanupInterruptedError` for a delete
    job that failed part way: the counts say what was deleted, failed or is unknown, and a
    failed manifest write is in ``manifest_error`` (and the summary's ``error``).
    ``continues``: the unfinished earlier run this one finishes
    (:func:`.manifest.unfinished_run`), named in the summary's ``continues`` with the
    re-check of its files of unknown outcome."""
    check_retention(result.retention_ms, options.unsafe_retention)
    prepare_manifest_dir(manifest_path)
    link = None if continues is None else continuation(continues)
    doc = manifest_start(result, classes, 0, 0, 0, link, command)
    try:
        doc["planned"] = planned = hooks.planned()
        checked = hooks.recheck()
        if stop is not None:
            hooks.arm(stop)
    except CleanupStopped as stopped:
        hooks.abandon()
        stopped_before_deleting(manifest_path, doc, stopped.signal_name)
        raise
    link = None if continues is None else continuation(continues, manifest_path)
    doc = manifest_start(result, classes, planned, checked.planned, checked.spared, link, command)
    doc["version_rechecked"] = checked.version
    write_summary(manifest_path, doc)  # the plan is on disk: deleting may begin
    deleted = hooks.delete(stop)
    doc["counts"] = {**doc["counts"], **deleted.counts}
    doc["requests"] = deleted.requests
    if stop is not None and stop.is_set():
        doc.update(status="interrupted", finished_at=now_iso(), signal=stop.signal_name)
    elif deleted.failure is not None:
        _failed_part_way(doc, manifest_path, *deleted.failure)
    else:
        doc.update(status="done", finished_at=now_iso())
    problems = [deleted.error] if deleted.error else []
    doc["error"] = "; ".join(problems) or None
    try:
        write_summary(manifest_path, doc)
    except OSError as exc:  # the deletes happened: report them, never "nothing deleted"
        problems.append(
            f"the manifest's summary could not be written ({exc}): "
            f"{manifest_path / SUMMARY_FILE} may still say status deleting, {hooks.records_note}"
        )
        doc["error"] = "; ".join(problems)
    return CleanupResult(doc, doc["error"], deleted.unwritten)


def _failed_part_way(
    doc: dict[str, Any], manifest_path: Path, error: str, exc: Exception
) -> NoReturn:
    """A delete job failed part way: the summary says ``interrupted`` with ``error`` (the
    counts from the records written) and :class:`CleanupInterruptedError` is raised."""
    doc.update(status="interrupted", finished_at=now_iso(), error=error)
    try:
        write_summary(manifest_path, doc)
    except OSError as write_error:
        doc["error"] += f"; the manifest could not be written either ({write_error})"
    raise CleanupInterruptedError(doc["error"], doc) from exc


class _LocalCleanup:
    """The local engine's :class:`CleanupHooks`: the re-read by the plan's ``recheck``, the
    plan records and the deletes from this process."""

    records_note = "its plan lists every planned file"

    def __init__(
        self, store: TableStore, result: ScanResult, plan: CleanupPlan, manifest_path: Path
    ) -> None:
        self._store, self._plan, self._path = store, plan, manifest_path
        self._planned = result.of(*plan.classes)
        self.checked: Recheck | None = None

    def planned(self) -> int:
        return len(self._planned)

    def recheck(self) -> Rechecked:
        with phase(f"{self._plan.command}: re-reading the log before deleting"):
            checked = self.checked = self._plan.recheck(self._planned)
        records = RecordWriter(self._path, PLAN_DIR)
        for c in checked.targets:
            records.add(c.path, c.file_class.value, c.size, c.mtime_ms, "planned")
        for c, why in checked.spared:
            records.add(c.path, c.file_class.value, c.size, c.mtime_ms, "spared", why=why)
        records.flush()
        return Rechecked(checked.version, len(checked.targets), len(checked.spared))

    def arm(self, stop: StopSignal) -> None:
        stop.arm()

    def abandon(self) -> None:
        pass

    def delete(self, stop: StopSignal | None) -> Deleted:
        assert self.checked is not None, "recheck first"
        targets = self.checked.targets
        what = f"{self._plan.command}: deleting {len(targets):,} files"
        with phase(what, total=len(targets)) as shown:
            sink = _OutcomeSink(targets, RecordWriter(self._path, OUTCOME_DIR), shown)
            requests = delete_in_batches(
                self._store,
                [c.path for c in targets],
                sink,
                stop=None if stop is None else stop.is_set,
            )
            sink.finish()
        return Deleted(sink.counts, requests, sink.error, sink.unwritten)


def nothing_left(
    run_dir: Path,
    result: ScanResult,
    classes: tuple[FileClass, ...],
    continues: Manifest,
    command: str = "orphans",
) -> dict[str, Any]:
    """Writes and returns the summary of a run that found nothing to delete while an earlier
    run was unfinished (both engines): ``done``, nothing planned, no re-read of the log, and
    the run it ``continues`` (every file of unknown outcome there is ``gone``), so that run
    counts as finished from now on."""
    doc = manifest_start(result, classes, 0, 0, 0, continuation(continues, run_dir), command)
    doc.update(status="done", finished_at=now_iso())
    write_summary(run_dir, doc)
    return doc


def stopped_before_deleting(manifest_path: Path, doc: dict[str, Any], signal_name: str) -> None:
    """Writes the summary of a cleanup a signal stopped before its first delete (both
    engines): ``interrupted``, nothing deleted, ``signal`` named. A failed write is ignored:
    nothing was deleted, and the command says so."""
    doc.update(status="interrupted", finished_at=now_iso(), signal=signal_name)
    try:
        write_summary(manifest_path, doc)
    except OSError:
        pass


class _OutcomeSink:
    """Receives each settled delete batch (:func:`.deleter.delete_in_batches`): counts its
    outcomes and streams one record per file to ``records``. If a write fails, the error is
    kept and the records from then on are kept in :attr:`unwritten` instead (deleting goes
    on: what is known is never lost)."""

    def __init__(
        self, targets: list[Candidate], records: RecordWriter, progress: Phase | None = None
    ) -> None:
        self._targets = targets
        self._progress = progress or Phase()
        self._records: RecordWriter | None = records
        self.counts = {k: 0 for k in ("deleted", "missing", "failed", "unknown", "not_sent")}
        self.error: str | None = None
        self.unwritten: list[dict[str, Any]] = []

    def __call__(self, first: int, outcome: DeleteOutcome) -> None:
        records = settled(outcome)  # the paths not sent keep their plan record (planned)
        self.counts["not_sent"] += len(outcome.not_sent)
        size = len(records) + len(outcome.not_sent)
        by_path = {c.path: c for c in self._targets[first : first + size]}
        for path, what, error in records:
            self.counts[what] += 1
            self._add(by_path[path], what, error)
        self._progress.advance(len(records))

    def _add(self, c: Candidate, outcome: str, error: str | None) -> None:
        if self._records is None:
            self.unwritten.append(
                {
                    "path": c.path,
                    "class": c.file_class.value,
                    "size": c.size,
                    "mtime_ms": c.mtime_ms,
                    "outcome": outcome,
                    "why": None,
                    "error": error,
                }
            )
            return
        try:
            self._records.add(c.path, c.file_class.value, c.size, c.mtime_ms, outcome, error=error)
        except OSError as exc:  # the buffer, this record included, moves to unwritten
            self._failed(self._records, exc)

    def _failed(self, records: RecordWriter, exc: OSError) -> None:
        self.error = (
            f"the manifest's outcome records could not be written ({exc}); the command's "
            "output lists the files whose records are missing"
        )
        self.unwritten += records.take_buffered()
        self._records = None

    def finish(self) -> None:
        """Writes the records still buffered."""
        if self._records is not None:
            try:
                self._records.flush()
            except OSError as exc:
                self._failed(self._records, exc)
