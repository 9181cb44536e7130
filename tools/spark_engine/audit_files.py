"""``deltaguard audit --engine spark``: the audit's file check (missing live files and
deletion vector files, data files of another size than logged, deletion vector files too
short: :mod:`deltaguard.tools.deltalog.live_files`'s ``exists`` rules) with the Spark engine's
listing and log.

The table is listed by executors (:func:`.listing.list_table_distributed`, every file outside
``_delta_log``, as the local check's walk), the snapshot's live files come from the log read
by Spark (:func:`.log_refs.read_log`, :func:`.log_refs.snapshot_files`), and the anti-joins
run in Spark. The sizes each file must have come from the audit's snapshot, which the driver
holds already (as one Arrow table handed to Spark), and are joined with the listing in Spark.
Only the counts, the first
:data:`~deltaguard.tools.deltalog.audit.MAX_FINDINGS_PER_CODE` missing files of each kind
(by path) and the live files outside the table root reach the driver. The log-replay checks
stay in :func:`~deltaguard.tools.deltalog.audit.audit_table` (one process reads the log).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from deltaguard.tools.deltalog.audit import MAX_FINDINGS_PER_CODE, FileCheck, FileFindings
from deltaguard.tools.deltalog.live_files import (
    SHORT_DV,
    SIZE_MISMATCH,
    External,
    FileProblem,
    dv_min_size,
    missing_data,
    short_dv,
    size_mismatch,
)
from deltaguard.tools.deltalog.live_files import (
    missing_dv as missing_dv_problem,
)
from deltaguard.tools.deltalog.paths import relative_to_root
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
            (External(r.location, r.owner, r.location) for r in external.collect()),
            key=lambda e: (e.location, e.owner or ""),
        )
        sized, sized_totals = _sizes(spark, spec, snap, table.files)
        problems = [
            *(missing_data(r.path, r.path, r.path) for r in first),
            *(missing_dv_problem(r.path, r.path, r.dv) for r in first_dv),
            *sized,
        ]
        totals = {"missing-data-file": missing.count(), "missing-dv-file": missing_dv.count()}
        return FileFindings(problems, {**totals, **sized_totals}, outside)
    finally:
        if table is not None:
            table.release()
        if live is not None:
            live.unpersist()
        log.release()


def _sizes(
    spark: SparkSession, spec: StoreSpec, snap: Snapshot, listed: Any
) -> tuple[list[FileProblem], dict[str, int]]:
    """The live data files inside the root whose listed size is not their ``add``'s
    ``size``, and the deletion vector files shorter than their descriptor needs
    (:func:`~deltaguard.tools.deltalog.live_files.dv_min_size`): the first
    :data:`MAX_FINDINGS_PER_CODE` of each (by file) and the totals. ``listed`` is the
    distributed listing (``path``, ``size``)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    store = spec.open()
    rows: dict[str, list[Any]] = {"file": [], "want": [], "exact": [], "path": []}
    dvs: dict[str, Any] = {}
    for path, size in zip(
        snap.adds.table["path"].to_pylist(), snap.adds.table["size"].to_pylist(), strict=True
    ):
        rel = relative_to_root(path, store)
        if rel is not None and size is not None:
            rows["file"].append(rel)
            rows["want"].append(size)
            rows["exact"].append(True)
            rows["path"].append(path)
    for path, dv in snap.adds.deletion_vectors():
        dv_file = dv.file_path()
        dv_rel = relative_to_root(dv_file, store) if dv_file is not None else None
        if dv_rel is not None:
            rows["file"].append(dv_rel)
            rows["want"].append(dv_min_size(dv))
            rows["exact"].append(False)
            rows["path"].append(path)
            dvs[f"{dv_rel}\x00{path}"] = dv
    want = spark.createDataFrame(pa.table(rows))
    joined = want.join(listed.select(F.col("path").alias("file"), "size"), "file")
    bad = joined.where(
        (F.col("exact") & (F.col("size") != F.col("want")))
        | (~F.col("exact") & (F.col("size") < F.col("want")))
    ).persist()
    try:
        problems: list[FileProblem] = []
        totals: dict[str, int] = {}
        for exact, code in ((True, SIZE_MISMATCH), (False, SHORT_DV)):
            of_code = bad.where(F.col("exact") == exact)
            totals[code] = of_code.count()
            for r in of_code.orderBy("file", "path").limit(MAX_FINDINGS_PER_CODE).collect():
                if exact:
                    problems.append(size_mismatch(r.path, r.path, r.file, r.size, r.want))
                else:
                    dv = dvs[f"{r.file}\x00{r.path}"]
                    problems.append(short_dv(r.path, r.path, r.file, r.size, dv))
        return problems, totals
    finally:
        bad.unpersist()
