"""``deltaguard audit --engine spark``: the audit's file check (missing live files and
deletion vector files) with the Spark engine's listing and log.

The table is listed by executors (:func:`.listing.list_table_distributed`, every file outside
``_delta_log``, as the local check's walk), the snapshot's live files come from the log read
by Spark (:func:`.log_refs.read_log`, :func:`.log_refs.snapshot_files`), and the anti-joins
run in Spark. Only the counts, the first
:data:`~deltaguard.tools.deltalog.audit.MAX_FINDINGS_PER_CODE` missing files of each kind
(by path) and the live files outside the table root reach the driver. The log-replay checks
stay in :func:`~deltaguard.tools.deltalog.audit.audit_table` (one process reads the log).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from deltaguard.tools.deltalog.audit import MAX_FINDINGS_PER_CODE, FileCheck, FileFindings
from deltaguard.tools.deltalog.snapshot import Snapshot
from deltaguard.tools.spark_engine.listing import list_table_distributed
from deltaguard.tools.spark_engine.log_refs import read_log, snapshot_files, strict_file_reads
from deltaguard.tools.spark_engine.store_spec import StoreSpec
from deltaguard.tools.storage import TableStore
from deltaguard.tools.storage.errors import DeltaLogError, StorageError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def spark_file_check(session: Callable[[], SparkSession], spec: StoreSpec) -> FileCheck:
    """A :data:`~deltaguard.tools.deltalog.audit.FileCheck` for
    :func:`~deltaguard.tools.deltalog.audit.audit_table` that runs in the session ``session``
    returns (called when the check runs: an audit that fails before it starts no JVM). It
    checks the latest version: it raises :class:`DeltaLogError` if the audit's snapshot is
    another version (an older one asked for, or a commit landed between the two reads), and
    :class:`StorageError` naming the cause if a Spark job fails (a failed listing is not a
    finding). Listing uses the session's S3 settings (:mod:`.hadoop_s3`); ``spec``'s options
    must agree with them."""

    def check(_store: TableStore, snap: Snapshot) -> FileFindings:
        from py4j.protocol import Py4JError  # type: ignore[import-untyped]
        from pyspark.errors import PySparkException

        from deltaguard.tools.spark_engine.errors import spark_failure
        from deltaguard.tools.spark_engine.hadoop_s3 import SessionSettingsConflict

        spark = session()
        try:
            of_session = StoreSpec.of_session(spark, spec.uri, spec.s3)  # one I/O stack
        except SessionSettingsConflict as exc:
            raise StorageError(f"{spec.uri}: {exc}") from None
        try:
            return _find(spark, of_session, snap)
        except (PySparkException, Py4JError) as exc:
            why = spark_failure(exc) or str(exc).strip().splitlines()[0]
            raise StorageError(f"{spec.uri}: the Spark file check failed: {why}") from None

    return check


def _find(spark: SparkSession, spec: StoreSpec, snap: Snapshot) -> FileFindings:
    """:func:`__find` with no file read skipping a damaged file
    (:func:`~deltaguard.tools.spark_engine.log_refs.strict_file_reads`); same arguments,
    result and errors."""
    with strict_file_reads(spark):
        return __find(spark, spec, snap)


def __find(spark: SparkSession, spec: StoreSpec, snap: Snapshot) -> FileFindings:
    from pyspark.sql import functions as F

    log = read_log(spark, spec, snap.listing, segment_only=True)
    table = live = None
    try:
        if log.version != snap.version:
            raise DeltaLogError(
                f"{spec.uri}: the Spark engine read version {log.version}, the audit "
                f"version {snap.version} (it checks the latest version only)"
            )
        live = snapshot_files(log.actions).where("kind = 'add'").persist()
        table = list_table_distributed(
            spark,
            spec,
            log.metadata.partition_columns,
            dict(log.metadata.configuration),
            every_file=True,
        )
        present = table.files.select("path")
        inside = live.where(~F.col("outside"))
        missing = inside.select("path").join(present, "path", "left_anti")
        dvs = live.where(F.col("dv_path").isNotNull() & ~F.col("dv_outside"))
        missing_dv = dvs.select(F.col("dv_path").alias("dv"), "path").join(
            present.withColumnRenamed("path", "dv"), "dv", "left_anti"
        )
        external = live.where("outside").select(
            F.col("path").alias("location"), F.lit(None).cast("string").alias("owner")
        )
        external = external.unionByName(
            live.where("dv_outside").select(
                F.col("dv_path").alias("location"), F.col("path").alias("owner")
            )
        )
        first = missing.orderBy("path").limit(MAX_FINDINGS_PER_CODE).collect()
        first_dv = missing_dv.orderBy("dv", "path").limit(MAX_FINDINGS_PER_CODE).collect()
        outside = sorted(
            ((r.location, r.owner) for r in external.collect()),
            key=lambda e: (e[0], e[1] or ""),
        )
        return FileFindings(
            [r.path for r in first],
            missing.count(),
            [(r.dv, r.path) for r in first_dv],
            missing_dv.count(),
            outside,
        )
    finally:
        if table is not None:
            table.release()
        if live is not None:
            live.unpersist()
        log.release()
