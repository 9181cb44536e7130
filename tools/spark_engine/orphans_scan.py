"""The Spark engine's scan: listing, reference flags, anti-join and classification in Spark.

The table is listed on the JVM side (:mod:`.table_lister`). Each visible listed file is joined
(left) with the reference flags of its path (:func:`.log_refs.reference_flags`) and classified
in Spark SQL by the local engine's rule (:mod:`.classify_sql`, checked row for row against
:func:`~deltaguard.tools.orphans.classify.data_candidate`); the ``log-temp`` candidates come
from the local engine's :func:`~deltaguard.tools.orphans.classify.log_candidates` on the
driver (``_delta_log`` is listed once, on the driver, as the local engine does). The
candidates are written as a parquet table (:data:`REPORT_COLUMNS`), the totals and partition
groups are computed in Spark, and the candidates reach the driver only when there are at most
``max_report_files`` of them (otherwise the JSON report points at the table).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltaguard.tools.deltalog.listing import list_log
from deltaguard.tools.deltalog.retention import DELETED_FILE_RETENTION
from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck, read_entries
from deltaguard.tools.orphans.classify import (
    ORPHANS_CLASSES,
    Candidate,
    FileClass,
    ScanResult,
    log_candidates,
    lost_commit_files,
)
from deltaguard.tools.orphans.engine import EngineScan
from deltaguard.tools.orphans.inventory import InventorySource, table_root
from deltaguard.tools.orphans.key_ranges import DEFAULT_RANGE_FILES
from deltaguard.tools.orphans.streaming import (
    CHECKPOINT_MARKER_REGEX,
    checkpoint_dirs,
    kept_dirs,
)
from deltaguard.tools.spark_engine.classify_sql import (
    data_class_columns,
    partition_column,
    visible_unkept,
)
from deltaguard.tools.spark_engine.inventory import SparkInventory, inventory_listing_spark
from deltaguard.tools.spark_engine.key_ranges import range_cuts
from deltaguard.tools.spark_engine.listing import DistributedListing, list_table_distributed
from deltaguard.tools.spark_engine.log_refs import (
    SparkLog,
    flag_aggregates,
    read_log,
    reference_flags,
    reference_rows,
    settle_path_rule,
    strict_reads,
)
from deltaguard.tools.spark_engine.store_spec import StoreSpec
from deltaguard.tools.spark_engine.table_lister import (
    JvmListing,
    list_table_jvm,
    lister_available,
    max_tasks,
    observed,
)
from deltaguard.tools.storage import S3TableStore

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation, SparkSession

REPORT_SCHEMA = (
    "path string, size long, mtime_ms long, class string, reason string, partition string"
)
DEFAULT_MAX_REPORT_FILES = 100_000


def _checkpoint_dirs(table: DistributedListing) -> set[str]:
    """The local engine's streaming checkpoint rule (:mod:`deltaguard.tools.orphans.streaming`)
    on the listed files that can mark a checkpoint (few: collected to the driver, or by the
    listing itself)."""
    if table.markers is not None:
        return checkpoint_dirs(table.markers)
    markers = table.files.filter(table.files.path.rlike(CHECKPOINT_MARKER_REGEX)).select("path")
    return checkpoint_dirs(r.path for r in markers.collect())


def _classified(
    files: DataFrame,
    log: SparkLog,
    cutoff_ms: int,
    live: Observation,
    lost: dict[str, str] | None = None,
) -> DataFrame:
    """The candidates among the listed ``files`` (:data:`REPORT_SCHEMA`): the listing and the
    log's :func:`~.log_refs.reference_rows` grouped by path in one aggregation (one shuffle,
    no join), classified by :func:`~.classify_sql.data_class_columns`. ``live`` observes the
    number of live paths (data files and their DV files)."""
    from pyspark.sql import functions as F

    listed = files.select("path", "size", "mtime_ms", F.lit(True).alias("listed"))
    grouped = (
        reference_rows(log.actions, cutoff_ms, log.one_checkpoint)
        .unionByName(listed, allowMissingColumns=True)
        .groupBy("path")
        .agg(
            *flag_aggregates(),
            F.max("listed").alias("listed"),
            F.max("size").alias("size"),
            F.max("mtime_ms").alias("mtime_ms"),
        )
        .observe(live, F.count_if(F.coalesce(F.col("live"), F.lit(False))).alias("live"))
    )
    file_class, reason = data_class_columns(cutoff_ms, lost)
    return (
        grouped.where(F.col("listed"))
        .select(
            "path",
            "size",
            "mtime_ms",
            file_class.alias("class"),
            reason.alias("reason"),
            partition_column().alias("partition"),
        )
        .where(F.col("class").isNotNull())
    )


def candidate_of(row: Any) -> Candidate:
    """A report table row as a :class:`~deltaguard.tools.orphans.classify.Candidate`."""
    return Candidate(row.path, row.size, row.mtime_ms, FileClass(row["class"]), row.reason)


@strict_reads
def scan_spark(
    spark: SparkSession,
    spec: StoreSpec,
    report_path: str,
    *,
    retention_ms: int | None = None,
    now_ms: int | None = None,
    max_report_files: int = DEFAULT_MAX_REPORT_FILES,
    dynamodb: DynamoDBCheck | None = None,
    inventory: InventorySource | None = None,
    range_files: int = DEFAULT_RANGE_FILES,
) -> EngineScan:
    """Lists and classifies the table (nothing in it is modified) and writes the candidates to
    ``report_path`` (parquet, replaced); no file read skips a damaged file
    (:func:`~.log_refs.strict_reads`). Same arguments and errors as
    :func:`deltaguard.tools.orphans.classify.scan` (``inventory``: read instead of listing
    the data files, :mod:`.inventory`; ``range_files``: an S3 directory of at least twice as
    many files is listed in key ranges of about that many, :mod:`.key_ranges`; 0: never)."""
    started = time.monotonic()
    store = spec.open()
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    listing = list_log(store)
    log = read_log(spark, spec, listing, defer_path_rule=True)
    retention_ms, source = DELETED_FILE_RETENTION.resolve(log.metadata.configuration, retention_ms)
    cutoff = now_ms - retention_ms
    partition_columns = list(log.metadata.partition_columns)
    configuration = dict(log.metadata.configuration)
    read: SparkInventory | None = None
    if inventory is not None:  # instead of the listing (deltaguard.tools.orphans.inventory)
        root = table_root(store, inventory, partition_columns, configuration)
        read = inventory_listing_spark(spark, inventory, root, spec.s3)
        cutoff = min(cutoff, read.report.date_ms)
    entries = read_entries(dynamodb) if dynamodb is not None else None
    lost, lost_note = lost_commit_files(store)
    cuts = (
        range_cuts(log.cached, log.checkpoint_rows, store, range_files, max_tasks(spark))
        if inventory is None and isinstance(store, S3TableStore) and lister_available(spark)
        else {}
    )
    logs = log_candidates(store, listing, cutoff, entries)  # before the listing is held
    table: DistributedListing | JvmListing | None = (
        read.listing if read is not None else None
    ) or list_table_jvm(spark, spec, partition_columns, configuration, cuts)
    if table is None:  # a session without deltaguard's jar
        table = list_table_distributed(spark, spec, partition_columns, configuration)
    written = _ReportWriter(spark, log, table, cutoff, lost, report_path).write(logs)
    count, totals, partitions, candidates = _summarize(spark, report_path, max_report_files)
    notes = [*log.notes, *([lost_note] if lost_note is not None else [])]
    if count > max_report_files:
        notes.append(
            f"{count} candidates: the file list is in the report table {report_path} "
            f"(more than {max_report_files}, not collected to the driver)"
        )
    result = ScanResult(
        store.uri,
        log.version,
        now_ms,
        retention_ms,
        source,
        candidates,
        written.listed,
        written.live_files,
        written.hidden_dirs,
        len(listing.files),
        time.monotonic() - started,
        notes,
        kept_dirs(written.checkpoints, written.hidden_dirs),
        None if read is None else read.report,
    )
    return EngineScan(result, count, totals, partitions, report_path)


@dataclass
class _Written:
    """What writing the report table learnt about the listing."""

    listed: int
    live_files: int
    hidden_dirs: list[str]
    checkpoints: set[str]


@dataclass
class _ReportWriter:
    """Writes a scan's report table: the classified listed files and the ``_delta_log``
    candidates, without the streaming checkpoints' files (found while writing with the JVM
    listing: then written again if there are any); releases the listing and the log."""

    spark: SparkSession
    log: SparkLog
    table: DistributedListing | JvmListing
    cutoff: int
    lost: dict[str, str]
    report_path: str

    def write(self, logs: list[Candidate]) -> _Written:
        table, log = self.table, self.log
        try:
            jvm = isinstance(table, JvmListing)
            # the JVM listing collects its checkpoint markers while the report is written
            checkpoints = set() if isinstance(table, JvmListing) else _checkpoint_dirs(table)
            rows = [
                (c.path, c.size, c.mtime_ms, c.file_class.value, c.reason, c.partition)
                for c in logs
            ]
            frame = self.spark.createDataFrame(rows, REPORT_SCHEMA)
            live = self._once(frame, "first", None if jvm else checkpoints)
            if not settle_path_rule(log):  # rare: an older log file's action needs the path rule
                live = self._once(frame, "with the path rule", None if jvm else checkpoints)
            live_files = observed(
                live, "live", lambda: reference_flags(log, self.cutoff).where("live").count()
            )
            if isinstance(table, JvmListing):
                checkpoints = checkpoint_dirs(table.markers())
                if checkpoints:  # rare: a streaming checkpoint inside the root; written again
                    self._once(frame, "without streaming checkpoints", checkpoints)
                hidden_dirs = table.hidden_dirs()
            else:
                hidden_dirs = table.hidden_dirs
            return _Written(table.file_count, live_files, hidden_dirs, checkpoints)
        finally:
            if isinstance(table, DistributedListing):
                table.release()
            log.release()

    def _once(self, logs: DataFrame, attempt: str, checkpoints: set[str] | None) -> Observation:
        """Writes the report table (``checkpoints``: without the files of these streaming
        checkpoints and the hidden ones; None: the JVM listing left them out already);
        returns the observation of its live files."""
        from pyspark.sql import Observation

        live = Observation(f"orphans live files, {attempt}")
        classified = _classified(self.table.files, self.log, self.cutoff, live, self.lost)
        if checkpoints is not None:
            meta = self.log.metadata
            visible = visible_unkept(
                list(meta.partition_columns), dict(meta.configuration), checkpoints
            )
            classified = classified.where(visible)
        classified.unionByName(logs).write.mode("overwrite").parquet(self.report_path)
        return live


def _summarize(
    spark: SparkSession, report_path: str, max_report_files: int
) -> tuple[int, dict[str, dict[str, int]], list[dict[str, Any]], list[Candidate]]:
    """The report table's candidate count, totals per class, groups per partition and class,
    and its candidates (sorted by path; none if more than ``max_report_files``)."""
    from pyspark.sql import functions as F

    written = spark.read.parquet(report_path)
    groups = (
        written.groupBy("partition", "class")
        .agg(F.count("*").alias("files"), F.sum("size").alias("bytes"))
        .collect()
    )
    totals = {c.value: {"files": 0, "bytes": 0} for c in ORPHANS_CLASSES}
    for g in groups:
        totals[g["class"]]["files"] += g.files
        totals[g["class"]]["bytes"] += g.bytes
    count = sum(t["files"] for t in totals.values())
    # sorted on the driver (at most max_report_files): a Spark sort would cost two more jobs
    candidates = (
        sorted((candidate_of(r) for r in written.collect()), key=lambda c: c.path)
        if count <= max_report_files
        else []
    )
    partitions = [
        {"partition": g.partition, "class": g["class"], "files": g.files, "bytes": g.bytes}
        for g in sorted(groups, key=lambda g: (g.partition, g["class"]))
    ]
    return count, totals, partitions, candidates


def report_frame(spark: SparkSession, scan: EngineScan) -> DataFrame:
    """The candidates of ``scan`` as a DataFrame (from its report table)."""
    assert scan.report_path is not None, "a Spark scan has a report table"
    return spark.read.parquet(scan.report_path)
