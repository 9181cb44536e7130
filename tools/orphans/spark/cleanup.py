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
   delete their slice with :func:`~deltaguard.tools.orphans.deleter.delete_files` (batched
   DeleteObjects, retried) and each file's outcome record (``deleted``, ``missing``,
   ``failed`` or ``unknown``, with the error) is written to ``<manifest>/outcome``; the
   summary ends ``done``. If the delete job itself fails, the summary ends ``interrupted``
   (every planned file ``unknown``) and
   :class:`~deltaguard.tools.orphans.cleanup.CleanupInterruptedError` is raised: deleting had
   begun, so it is never reported as "nothing deleted".

A crash part way leaves the ``deleting`` manifest and its plan. Running the cleanup again
scans again: files already deleted are not listed, and the re-read spares every file a commit
made since names, so the re-run finishes the job and deletes nothing that became referenced.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from deltaguard.tools.deltalog.listing import list_log
from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
from deltaguard.tools.orphans.cleanup import (
    CleanupInterruptedError,
    cleanup_classes,
    log_leftovers,
    manifest_start,
    now_iso,
    spared_because,
)
from deltaguard.tools.orphans.deleter import (
    OutsideTableError,
    check_contained,
    delete_files,
    settled,
)
from deltaguard.tools.orphans.manifest import (
    OUTCOME_DIR,
    PLAN_DIR,
    SUMMARY_FILE,
    prepare_manifest_dir,
    record_ddl,
    write_summary,
)
from deltaguard.tools.orphans.rules import check_retention
from deltaguard.tools.orphans.spark.log_refs import read_log, reference_flags, strict_file_reads
from deltaguard.tools.orphans.spark.scan import SparkScan, candidate_of, report_frame
from deltaguard.tools.orphans.spark.store_spec import StoreSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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


def _deleter(spec: StoreSpec) -> Any:
    def run(rows: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        planned = {r.path: r for r in rows}
        if not planned:
            return
        outcome = delete_files(spec.open(), list(planned))
        records = settled(outcome)
        for p, what, error in records:
            r = planned[p]
            yield p, r["class"], r.size, r.mtime_ms, what, None, error

    return run


def execute_spark(
    spark: SparkSession,
    spec: StoreSpec,
    scan: SparkScan,
    *,
    manifest_dir: Path,
    include_tombstones: bool = False,
    unsafe_retention: bool = False,
    given_retention: bool = False,
    files_per_task: int = 10_000,
    dynamodb: DynamoDBCheck | None = None,
) -> dict[str, Any]:
    """:func:`_execute_spark` with no file read skipping a damaged file
    (:func:`~deltaguard.tools.orphans.spark.log_refs.strict_file_reads`); same arguments,
    result and errors."""
    with strict_file_reads(spark):
        return _execute_spark(
            spark,
            spec,
            scan,
            manifest_dir=manifest_dir,
            include_tombstones=include_tombstones,
            unsafe_retention=unsafe_retention,
            given_retention=given_retention,
            files_per_task=files_per_task,
            dynamodb=dynamodb,
        )


def _execute_spark(
    spark: SparkSession,
    spec: StoreSpec,
    scan: SparkScan,
    *,
    manifest_dir: Path,
    include_tombstones: bool = False,
    unsafe_retention: bool = False,
    given_retention: bool = False,
    files_per_task: int = 10_000,
    dynamodb: DynamoDBCheck | None = None,
) -> dict[str, Any]:
    """Deletes the scan's targets (see the module docstring) and returns the manifest's
    summary (:mod:`deltaguard.tools.orphans.manifest`). Raises what
    :func:`deltaguard.tools.orphans.cleanup.execute` raises, before anything is deleted, and
    :class:`~deltaguard.tools.orphans.cleanup.CleanupInterruptedError` if the delete job
    fails. A failed final summary write is in the returned summary's ``error``."""
    from pyspark.sql import functions as F

    result = scan.result
    check_retention(result.retention_ms, unsafe_retention)
    prepare_manifest_dir(manifest_dir)
    classes = cleanup_classes(include_tombstones)
    store = spec.open()
    planned = report_frame(spark, scan).where(F.col("class").isin(*[c.value for c in classes]))
    n_planned = planned.count()
    listing = list_log(store)
    log = read_log(spark, spec, listing)
    retention = result.retention_ms if given_retention else log.retention_ms()
    cutoff = min(result.cutoff_ms, result.now_ms - retention)
    flags = reference_flags(log, cutoff)
    log_temp_now = log_leftovers(store, listing, cutoff, dynamodb)
    plan_path = str(manifest_dir / PLAN_DIR)
    try:
        judged = spark.createDataFrame(
            planned.join(
                flags.select("path", "protected", "named_in_log"), "path", "left"
            ).rdd.mapPartitions(_judge(cutoff, log.version, log_temp_now)),
            record_ddl(),
        )
        judged.write.mode("overwrite").parquet(plan_path)
    finally:
        log.release()
    plan = spark.read.parquet(plan_path)
    targets = plan.where("outcome = 'planned'")
    bad = targets.select("path").rdd.mapPartitions(_contained(spec)).take(1)
    if bad:
        raise OutsideTableError(bad[0])
    count = targets.count()
    doc = manifest_start(
        result, classes, n_planned, count, plan.where("outcome = 'spared'").count()
    )
    doc["version_rechecked"] = log.version
    write_summary(manifest_dir, doc)  # the plan is on disk: deleting may begin
    tasks = max(1, -(-count // files_per_task))
    outcome_rdd = targets.repartition(tasks).rdd.mapPartitions(_deleter(spec))
    try:
        spark.createDataFrame(outcome_rdd, record_ddl()).write.mode("overwrite").parquet(
            str(manifest_dir / OUTCOME_DIR)
        )
        outcome = spark.read.parquet(str(manifest_dir / OUTCOME_DIR))
        counts = {r.outcome: r["count"] for r in outcome.groupBy("outcome").count().collect()}
    except Exception as exc:  # the job may have deleted part of its slice: say so
        _interrupted(doc, manifest_dir, count, exc)
    doc.update(
        status="done",
        finished_at=now_iso(),
        counts={
            **doc["counts"],
            **{k: counts.get(k, 0) for k in ("deleted", "missing", "failed", "unknown")},
        },
    )
    try:
        write_summary(manifest_dir, doc)
    except OSError as exc:  # the deletes happened: report them, never "nothing deleted"
        doc["error"] = (
            f"the manifest's summary could not be written ({exc}); "
            f"{manifest_dir / SUMMARY_FILE} may still say status deleting; its outcome records "
            "have every file"
        )
    return doc


def _interrupted(doc: dict[str, Any], manifest_dir: Path, planned: int, exc: Exception) -> NoReturn:
    """The delete job failed: its tasks may have deleted part of their slices, and no outcome
    was recorded. Every planned file's outcome is unknown (the plan records list them); the
    summary says so (``status: interrupted``) and
    :class:`~deltaguard.tools.orphans.cleanup.CleanupInterruptedError` is raised."""
    what = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    doc.update(
        status="interrupted",
        finished_at=now_iso(),
        error=(
            f"the delete job failed ({what}): the outcome of the {planned} planned files is "
            f"unknown (listed in {manifest_dir / PLAN_DIR}; {manifest_dir / OUTCOME_DIR}, if "
            "written, has each one's); run the same command again to finish"
        ),
        counts={**doc["counts"], "unknown": planned},
    )
    try:
        write_summary(manifest_dir, doc)
    except OSError as write_error:
        doc["error"] += f"; the manifest could not be written either ({write_error})"
    raise CleanupInterruptedError(doc["error"], doc) from exc
