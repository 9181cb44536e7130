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
5. the manifest table ``<manifest>/files`` (parquet: path, class, size, mtime_ms, outcome
   ``planned``/``spared``, why) is written before the first delete, the JSON manifest
   ``<manifest>/manifest.json`` (status ``deleting``) next to it; executors then delete their
   slice with :func:`~deltaguard.tools.orphans.deleter.delete_files` (batched
   DeleteObjects, retried) and the outcome of each file (``deleted``, ``missing``, ``failed``
   or ``unknown``, with the error) is written to ``<manifest>/outcome``; the JSON manifest
   ends ``done``. If the delete job itself fails, the manifest ends ``interrupted`` (every
   planned file ``unknown``) and
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
from deltaguard.tools.orphans.deleter import OutsideTableError, check_contained, delete_files
from deltaguard.tools.orphans.manifest import write_manifest
from deltaguard.tools.orphans.rules import check_retention
from deltaguard.tools.orphans.spark.log_refs import read_log, reference_flags, strict_file_reads
from deltaguard.tools.orphans.spark.scan import SparkScan, candidate_of, report_frame
from deltaguard.tools.orphans.spark.store_spec import StoreSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PLAN_SCHEMA = "path string, class string, size long, mtime_ms long, outcome string, why string"
OUTCOME_SCHEMA = "path string, outcome string, error string"
#: Manifest entries listed in the JSON manifest at most (the table always has every file).
MAX_LISTED = 100_000


def _judge(cutoff_ms: int, version: int, log_still: frozenset[str]) -> Any:
    def run(rows: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        for r in rows:
            c = candidate_of(r)
            why = spared_because(
                c,
                cutoff_ms,
                version,
                log_leftover=c.path in log_still,
                protected=bool(r.protected),
                ever_named=bool(r.ever),
            )
            outcome = "planned" if why is None else "spared"
            yield c.path, c.file_class.value, c.size, c.mtime_ms, outcome, why

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
    def run(paths: Iterable[Any]) -> Iterator[tuple[str, str, str | None]]:
        batch = [r.path for r in paths]
        if not batch:
            return
        outcome = delete_files(spec.open(), batch)
        for p in outcome.deleted:
            yield p, "deleted", None
        for p in outcome.missing:
            yield p, "missing", None
        for p, err in outcome.failed:
            yield p, "failed", err
        for p, err in outcome.unknown:
            yield p, "unknown", err

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
    """Deletes the scan's targets (see the module docstring) and returns the JSON manifest
    (schema ``deltaguard.orphans.manifest/1``, plus ``manifest_table``; the lists are
    omitted past :data:`MAX_LISTED` files, their counts are always there). Raises what
    :func:`deltaguard.tools.orphans.cleanup.execute` raises, before anything is deleted, and
    :class:`~deltaguard.tools.orphans.cleanup.CleanupInterruptedError` if the delete job
    fails. A failed final manifest write is in the returned manifest's ``error``."""
    from pyspark.sql import functions as F

    result = scan.result
    check_retention(result.retention_ms, unsafe_retention)
    classes = cleanup_classes(include_tombstones)
    store = spec.open()
    planned = report_frame(spark, scan).where(F.col("class").isin(*[c.value for c in classes]))
    doc: dict[str, Any] = {
        **manifest_start(result, classes, planned.count()),
        "manifest_table": str(manifest_dir),
    }
    listing = list_log(store)
    log = read_log(spark, spec, listing)
    retention = result.retention_ms if given_retention else log.retention_ms()
    cutoff = min(result.cutoff_ms, result.now_ms - retention)
    flags, _live = reference_flags(spark, log.actions, cutoff)
    log_still = log_leftovers(store, listing, cutoff, dynamodb)
    try:
        judged = spark.createDataFrame(
            planned.join(
                flags.select("path", "protected", "ever"), "path", "left"
            ).rdd.mapPartitions(_judge(cutoff, log.version, log_still)),
            PLAN_SCHEMA,
        )
        plan_path = str(manifest_dir / "files")
        judged.write.mode("overwrite").parquet(plan_path)
    finally:
        flags.unpersist()
        log.release()
    plan = spark.read.parquet(plan_path)
    targets = plan.where("outcome = 'planned'").select("path")
    bad = targets.rdd.mapPartitions(_contained(spec)).take(1)
    if bad:
        raise OutsideTableError(bad[0])
    doc["version_rechecked"] = log.version
    spared = plan.where("outcome = 'spared'")
    doc["spared"] = [
        {"path": r.path, "class": r["class"], "why": r.why}
        for r in spared.orderBy("path").limit(MAX_LISTED).collect()
    ]
    doc["deleted"], doc["missing"], doc["failed"], doc["unknown"] = [], [], [], []
    doc["error"] = None
    write_manifest(manifest_dir / "manifest.json", doc)
    count = targets.count()
    n_spared = spared.count()
    tasks = max(1, -(-count // files_per_task))
    outcome_rdd = targets.repartition(tasks).rdd.mapPartitions(_deleter(spec))
    outcome_path = str(manifest_dir / "outcome")
    try:
        spark.createDataFrame(outcome_rdd, OUTCOME_SCHEMA).write.mode("overwrite").parquet(
            outcome_path
        )
        outcome = spark.read.parquet(outcome_path).join(plan.drop("outcome"), "path", "left")
        counts = {r.outcome: r["count"] for r in outcome.groupBy("outcome").count().collect()}
        rows = outcome.orderBy("path").limit(MAX_LISTED).collect()
    except Exception as exc:  # the job may have deleted part of its slice: say so
        _interrupted(doc, manifest_dir, count, n_spared, exc)
    doc.update(
        status="done",
        finished_at=now_iso(),
        deleted=[
            {"path": r.path, "class": r["class"], "size": r.size, "mtime_ms": r.mtime_ms}
            for r in rows
            if r.outcome == "deleted"
        ],
        missing=[r.path for r in rows if r.outcome == "missing"],
        failed=[{"path": r.path, "error": r.error} for r in rows if r.outcome == "failed"],
        unknown=[{"path": r.path, "error": r.error} for r in rows if r.outcome == "unknown"],
        counts={
            "deleted": counts.get("deleted", 0),
            "missing": counts.get("missing", 0),
            "failed": counts.get("failed", 0),
            "unknown": counts.get("unknown", 0),
            "spared": n_spared,
        },
        requests=None,
    )
    try:
        write_manifest(manifest_dir / "manifest.json", doc)
    except OSError as exc:  # the deletes happened: report them, never "nothing deleted"
        doc["error"] = (
            f"the manifest could not be written ({exc}); {manifest_dir / 'manifest.json'} "
            "still says status deleting; the outcome table has every file"
        )
    return doc


def _interrupted(
    doc: dict[str, Any], manifest_dir: Path, planned: int, spared: int, exc: Exception
) -> NoReturn:
    """The delete job failed: its tasks may have deleted part of their slices, and no outcome
    was recorded. Every planned file's outcome is unknown (the plan table ``files`` lists
    them); the manifest says so (``status: interrupted``) and
    :class:`~deltaguard.tools.orphans.cleanup.CleanupInterruptedError` is raised."""
    what = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    doc.update(
        status="interrupted",
        finished_at=now_iso(),
        error=(
            f"the delete job failed ({what}): the outcome of the {planned} planned files is "
            f"unknown (listed in {manifest_dir / 'files'}; {manifest_dir / 'outcome'}, if "
            "written, has each one's); run the same command again to finish"
        ),
        counts={"deleted": 0, "missing": 0, "failed": 0, "unknown": planned, "spared": spared},
        requests=None,
    )
    try:
        write_manifest(manifest_dir / "manifest.json", doc)
    except OSError as write_error:
        doc["error"] += f"; the manifest could not be written either ({write_error})"
    raise CleanupInterruptedError(doc["error"], doc) from exc
