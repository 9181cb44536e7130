"""The Spark engine's cleanup: the local engine's rules, deletes in executors, a manifest table.

The safety argument is the local engine's (:mod:`deltaguard.tools.orphans.cleanup`); each step
calls the same rule:

1. the retention floor (:func:`~deltaguard.tools.orphans.rules.check_retention`) before
   anything is read;
2. the planned files are the scan's report rows of the cleanup classes
   (:func:`~deltaguard.tools.orphans.cleanup.cleanup_classes`);
3. right before deleting, the log is listed and read again by Spark and the reference flags
   rebuilt; each planned file is joined with them and judged in the executors by
   :func:`~deltaguard.tools.orphans.cleanup.spared_because`;
4. every remaining path is checked by
   :func:`~deltaguard.tools.orphans.deleter.check_contained` in a Spark job first: one bad
   path stops the run before anything is deleted;
5. the manifest is the local engine's (:mod:`deltaguard.tools.orphans.manifest`: same
   directory layout, summary and record columns): the plan records ``<manifest>/plan``
   (outcome ``planned``/``spared``, why) are written by Spark before the first delete, the
   summary ``<manifest>/manifest.json`` (status ``deleting``) next to them; executors then
   delete their slice in batches of up to 1,000 (:meth:`TableStore.delete_batch
   <deltaguard.tools.storage.TableStore.delete_batch>`: DeleteObjects, retried), and
   each task writes each batch's records itself, into ``<manifest>/outcome``
   (``part-<task>-<batch>.parquet``, :func:`~deltaguard.tools.orphans.manifest.write_record_file`):
   first every file of the batch as ``unknown`` ("sent, answer not recorded"), then, once
   the answer is read, each file's outcome (``deleted``, ``missing``, ``failed`` or
   ``unknown``, with the error). So whatever happens to a task, a file some request named
   has a record, and a file without a record was never sent. The summary ends ``done``.

**Stopping** (SIGINT or SIGTERM, :mod:`deltaguard.tools.orphans.interrupt`): the driver
writes the stop marker ``<manifest>/.stop``, which every task checks before each batch and
each retry (no new delete is sent after it), and cancels the delete job's group (no new task
starts; a task still running is killed by Spark after ``spark.python.task.killTimeout``,
its batch in flight then stays ``unknown``). Once no task of the job runs, the outcome
records are counted (files without one: ``not_sent``) and the summary ends ``interrupted``
with the ``signal``. The marker is on the manifest's filesystem: the manifest directory must
be one every executor can reach (any local path with a local master; a shared mount on a
cluster). If the delete job fails by itself, the same count is made, the summary ends
``interrupted`` with the ``error`` and
:class:`~deltaguard.tools.orphans.cleanup.CleanupInterruptedError` is raised: deleting had
begun, so it is never reported as "nothing deleted".

A crash part way leaves the ``deleting`` manifest and its plan. Running the cleanup again
scans again: files already deleted are not listed, and the re-read spares every file a commit
made since names, so the re-run finishes the job and deletes nothing that became referenced;
its manifest names the run it continues (``continues``,
:func:`~deltaguard.tools.orphans.manifest.continuation`, the same as the local engine's).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from deltaguard.tools.deltalog.listing import list_log
from deltaguard.tools.orphans.classify import FileClass
from deltaguard.tools.orphans.cleanup import (
    DEFAULT_CLEANUP,
    CleanupOptions,
    CleanupResult,
    Deleted,
    Rechecked,
    cleanup_classes,
    log_leftovers,
    recheck_cutoff,
    run_cleanup,
    spared_because,
)
from deltaguard.tools.orphans.deleter import (
    S3_BATCH_KEYS,
    OutsideTableError,
    check_contained,
    settled,
)
from deltaguard.tools.orphans.engine import EngineScan
from deltaguard.tools.orphans.interrupt import StopSignal
from deltaguard.tools.orphans.manifest import (
    OUTCOME_DIR,
    PLAN_DIR,
    Manifest,
    record_ddl,
    write_record_file,
)
from deltaguard.tools.spark_engine.log_refs import read_log, reference_flags, strict_reads
from deltaguard.tools.spark_engine.orphans_scan import candidate_of, report_frame
from deltaguard.tools.spark_engine.store_spec import StoreSpec
from deltaguard.tools.storage import DeleteOutcome

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _judge(cutoff_ms: int, version: int, log_temp_now: frozenset[str]) -> Any:
    def run(rows: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        for r in rows:
            c = candidate_of(r)
            why = spared_because(
                c,
                cutoff_ms,
                version,
                log_leftover=c.path in log_temp_now,
                protected=bool(r.protected),
                named_in_log=bool(r.named_in_log),
            )
            outcome = "planned" if why is None else "spared"
            yield c.path, c.file_class.value, c.size, c.mtime_ms, outcome, why, None

    return run


def _contained(spec: StoreSpec) -> Any:
    def run(paths: Iterable[Any]) -> Iterator[str]:
        batch = [r.path for r in paths]
        try:
            check_contained(spec.open(), batch)
        except OutsideTableError as exc:
            yield str(exc)

    return run


#: The stop marker in the manifest directory (see the module docstring).
STOP_MARKER = ".stop"
_IN_FLIGHT = "sent; the task stopped before it recorded the answer"


def _deleter(spec: StoreSpec, outcome_dir: str, marker: str) -> Any:
    """Each task: its slice in batches, each batch's records written before and after its
    request (module docstring); yields ``(outcome, files)`` counts."""

    def run(task: int, rows: Iterable[Any]) -> Iterator[tuple[str, int]]:
        planned = {r.path: r for r in rows}
        if not planned:
            return
        store = spec.open()
        paths = list(planned)
        counts = {"deleted": 0, "missing": 0, "failed": 0, "unknown": 0, "not_sent": 0}

        def stop() -> bool:
            return os.path.exists(marker)

        def record(p: str, what: str, error: str | None) -> tuple[Any, ...]:
            r = planned[p]
            return p, r["class"], r.size, r.mtime_ms, what, None, error

        for k, first in enumerate(range(0, len(paths), S3_BATCH_KEYS)):
            batch = paths[first : first + S3_BATCH_KEYS]
            if stop():
                counts["not_sent"] += len(paths) - first
                break
            where = Path(outcome_dir) / f"part-{task:05d}-{k:05d}.parquet"
            write_record_file(where, [record(p, "unknown", _IN_FLIGHT) for p in batch])
            try:
                outcome = store.delete_batch(batch, 5, stop)
            except Exception as exc:  # part of the batch may be gone: its outcome is unknown
                why = f"the batch failed part way: {type(exc).__name__}: {exc}"
                outcome = DeleteOutcome(unknown=[(p, why) for p in batch])
            records = settled(outcome)
            write_record_file(where, [record(p, what, error) for p, what, error in records])
            for _p, what, _error in records:
                counts[what] += 1
            counts["not_sent"] += len(outcome.not_sent)
        yield from counts.items()

    return run


def _wait_for_tasks(spark: SparkSession, group: str, timeout_s: float = 60.0) -> None:
    """Returns once no task of the job group ``group`` runs any more (a cancelled job's
    tasks end after Spark kills them), or after ``timeout_s``."""
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stages = [
            s
            for job in tracker.getJobIdsForGroup(group)
            if (info := tracker.getJobInfo(job)) is not None
            for s in info.stageIds
        ]
        infos = [tracker.getStageInfo(s) for s in stages]
        if not any(i is not None and i.numActiveTasks > 0 for i in infos):
            return
        time.sleep(0.1)


def _record_counts(outcome_dir: Path) -> dict[str, int]:
    """Files per outcome in the records the tasks wrote (every file at most once: a retried
    task rewrites its batches' files)."""
    counts = {"deleted": 0, "missing": 0, "failed": 0, "unknown": 0}
    if not outcome_dir.is_dir():
        return counts
    table = pq.read_table(outcome_dir, columns=["outcome"])
    for row in table.group_by("outcome").aggregate([("outcome", "count")]).to_pylist():
        counts[row["outcome"]] = row["outcome_count"]
    return counts


@strict_reads
def execute_spark(
    spark: SparkSession,
    spec: StoreSpec,
    scan: EngineScan,
    *,
    manifest_dir: Path,
    options: CleanupOptions = DEFAULT_CLEANUP,
    stop: StopSignal | None = None,
    files_per_task: int = 10_000,
    continues: Manifest | None = None,
) -> CleanupResult:
    """Deletes the scan's targets by the one cleanup sequence
    (:func:`deltaguard.tools.orphans.cleanup.run_cleanup`, its contract: raises, signals,
    ``continues``) with the Spark engine's hooks (:class:`_SparkCleanup`, the module
    docstring; no file read skips a damaged file: :func:`~.log_refs.strict_reads`)."""
    classes = cleanup_classes(options.include_tombstones)
    hooks = _SparkCleanup(spark, spec, scan, classes, manifest_dir, options, files_per_task)
    return run_cleanup(
        hooks,
        scan.result,
        manifest_path=manifest_dir,
        classes=classes,
        options=options,
        stop=stop,
        continues=continues,
    )


class _SparkCleanup:
    """The Spark engine's :class:`~deltaguard.tools.orphans.cleanup.CleanupHooks`: the
    re-read, the plan records and the containment check in Spark jobs (steps 3 and 4 of the
    module docstring), the deletes in executors, the stop marker and the job group."""

    records_note = "its outcome records have every file"

    def __init__(
        self,
        spark: SparkSession,
        spec: StoreSpec,
        scan: EngineScan,
        classes: tuple[FileClass, ...],
        manifest_dir: Path,
        options: CleanupOptions,
        files_per_task: int,
    ) -> None:
        from pyspark.sql import functions as F

        self._spark, self._spec, self._scan = spark, spec, scan
        self._dir, self._options, self._files_per_task = manifest_dir, options, files_per_task
        wanted = [c.value for c in classes]
        self._planned = report_frame(spark, scan).where(F.col("class").isin(*wanted))
        self._group = f"deltaguard-orphans-delete-{uuid.uuid4().hex}"
        self._marker = manifest_dir / STOP_MARKER
        self._targets: DataFrame | None = None
        self._count = 0

    def planned(self) -> int:
        return self._planned.count()

    def recheck(self) -> Rechecked:
        result, spark, spec = self._scan.result, self._spark, self._spec
        store = spec.open()
        listing = list_log(store)
        log = read_log(spark, spec, listing)
        cutoff = recheck_cutoff(result, log.metadata.configuration, self._options.given_retention)
        plan_path = str(self._dir / PLAN_DIR)
        try:
            flags = reference_flags(log, cutoff).select("path", "protected", "named_in_log")
            log_temp_now = log_leftovers(store, listing, cutoff, self._options.dynamodb)
            judge = _judge(cutoff, log.version, log_temp_now)
            judged = self._planned.join(flags, "path", "left").rdd.mapPartitions(judge)
            spark.createDataFrame(judged, record_ddl()).write.mode("overwrite").parquet(plan_path)
        finally:
            log.release()
        plan = spark.read.parquet(plan_path)
        targets = plan.where("outcome = 'planned'")
        bad = targets.select("path").rdd.mapPartitions(_contained(spec)).take(1)
        if bad:
            raise OutsideTableError(bad[0])
        self._targets, self._count = targets, targets.count()
        return Rechecked(log.version, self._count, plan.where("outcome = 'spared'").count())

    def _halt(self) -> None:  # the first signal once armed: no new delete, no new task
        self._marker.touch()
        self._spark.sparkContext.cancelJobGroup(self._group)

    def arm(self, stop: StopSignal) -> None:
        stop.on_stop(self._halt)
        stop.arm()

    def abandon(self) -> None:
        self._spark.sparkContext.cancelAllJobs()
        self._marker.unlink(missing_ok=True)

    def delete(self, stop: StopSignal | None) -> Deleted:
        assert self._targets is not None, "recheck first"
        context, outcome_dir = self._spark.sparkContext, self._dir / OUTCOME_DIR
        tasks = max(1, -(-self._count // self._files_per_task))
        deleter = _deleter(self._spec, str(outcome_dir.resolve()), str(self._marker.resolve()))
        outcome_rdd = self._targets.repartition(tasks).rdd.mapPartitionsWithIndex(deleter)
        failure: Exception | None = None
        context.setJobGroup(self._group, "deltaguard orphans: deletes", interruptOnCancel=False)
        try:
            if stop is None or not stop.is_set():
                outcome_rdd.collect()
        except Exception as exc:  # a cancelled or failed job: the records say what happened
            failure = exc
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
            context.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
        _wait_for_tasks(self._spark, self._group)
        counts = _record_counts(outcome_dir)
        counts["not_sent"] = self._count - sum(counts.values())
        self._marker.unlink(missing_ok=True)
        if failure is None:
            return Deleted(counts)
        return Deleted(counts, failure=(self._failure_text(failure, counts), failure))

    def _failure_text(self, exc: Exception, counts: dict[str, int]) -> str:
        """The summary's error for a delete job that failed part way."""
        what = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (
            f"the delete job failed ({what}): {counts['unknown']} files have an unknown "
            f"outcome and {counts['not_sent']} were never sent (each file's record is in "
            f"{self._dir / OUTCOME_DIR}, the plan in {self._dir / PLAN_DIR}); run the "
            "same command again to finish"
        )
