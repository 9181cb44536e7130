"""The Spark engine's scan: listing, reference flags, anti-join and classification in Spark.

Each listed file is joined (left) with the reference flags of its path
(:func:`.log_refs.reference_flags`) and classified in the executors by the local engine's
:func:`~deltaguard.tools.orphans.classify.data_candidate`; the ``log-temp`` candidates come
from the local engine's :func:`~deltaguard.tools.orphans.classify.log_candidates` on the
driver (``_delta_log`` is listed once, on the driver, as the local engine does). The
candidates are written as a parquet table (:data:`REPORT_COLUMNS`), the totals and partition
groups are computed in Spark, and the candidates reach the driver only when there are at most
``max_report_files`` of them (otherwise the JSON report points at the table).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from deltaguard.tools.deltalog.listing import list_log
from deltaguard.tools.deltalog.storage import FileInfo
from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck, read_entries
from deltaguard.tools.orphans.classify import (
    Candidate,
    FileClass,
    ScanResult,
    data_candidate,
    log_candidates,
)
from deltaguard.tools.orphans.inventory import InventoryReport, InventorySource, table_root
from deltaguard.tools.orphans.rules import hidden_name_rule, is_visible
from deltaguard.tools.orphans.spark.inventory import inventory_listing_spark
from deltaguard.tools.orphans.spark.listing import DistributedListing, list_table_distributed
from deltaguard.tools.orphans.spark.log_refs import read_log, reference_flags, strict_file_reads
from deltaguard.tools.orphans.spark.store_spec import StoreSpec
from deltaguard.tools.orphans.streaming import (
    CHECKPOINT_MARKER_REGEX,
    checkpoint_dirs,
    in_checkpoint,
    kept_dirs,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

REPORT_SCHEMA = (
    "path string, size long, mtime_ms long, class string, reason string, partition string"
)
DEFAULT_MAX_REPORT_FILES = 100_000


@dataclass
class SparkScan:
    """A :class:`~deltaguard.tools.orphans.classify.ScanResult` (``candidates`` holds every
    candidate only if ``complete``) plus the report table and the totals computed in Spark."""

    result: ScanResult
    report_path: str
    candidate_count: int
    totals: dict[str, dict[str, int]]
    partitions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return len(self.result.candidates) == self.candidate_count


def _classifier(
    partition_columns: list[str],
    configuration: dict[str, str],
    cutoff_ms: int,
    checkpoints: set[str],
) -> Any:
    def run(rows: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        is_hidden = hidden_name_rule(partition_columns, configuration)
        for r in rows:
            if not is_visible(r.path, is_hidden) or in_checkpoint(r.path, checkpoints):
                continue
            c = data_candidate(
                FileInfo(r.path, r.size, r.mtime_ms),
                cutoff_ms,
                protected=bool(r.protected),
                named_in_log=bool(r.named_in_log),
                tombstone=(bool(r.tombstone), r.tombstone_ms),
                change_data=bool(r.change_data),
            )
            if c is not None:
                yield c.path, c.size, c.mtime_ms, c.file_class.value, c.reason, c.partition

    return run


def _checkpoint_dirs(table: DistributedListing) -> set[str]:
    """The local engine's streaming checkpoint rule (:mod:`deltaguard.tools.orphans.streaming`)
    on the listed files that can mark a checkpoint (few: collected to the driver)."""
    markers = table.files.filter(table.files.path.rlike(CHECKPOINT_MARKER_REGEX)).select("path")
    return checkpoint_dirs(r.path for r in markers.collect())


def candidate_of(row: Any) -> Candidate:
    """A report table row as a :class:`~deltaguard.tools.orphans.classify.Candidate`."""
    return Candidate(row.path, row.size, row.mtime_ms, FileClass(row["class"]), row.reason)


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
) -> SparkScan:
    """:func:`_scan_spark` with no file read skipping a damaged file
    (:func:`~deltaguard.tools.orphans.spark.log_refs.strict_file_reads`); same arguments,
    result and errors."""
    with strict_file_reads(spark):
        return _scan_spark(
            spark,
            spec,
            report_path,
            retention_ms=retention_ms,
            now_ms=now_ms,
            max_report_files=max_report_files,
            dynamodb=dynamodb,
            inventory=inventory,
        )


def _scan_spark(
    spark: SparkSession,
    spec: StoreSpec,
    report_path: str,
    *,
    retention_ms: int | None = None,
    now_ms: int | None = None,
    max_report_files: int = DEFAULT_MAX_REPORT_FILES,
    dynamodb: DynamoDBCheck | None = None,
    inventory: InventorySource | None = None,
) -> SparkScan:
    """Lists and classifies the table (nothing in it is modified) and writes the candidates to
    ``report_path`` (parquet, replaced). Same arguments and errors as
    :func:`deltaguard.tools.orphans.classify.scan` (``inventory``: read instead of listing
    the data files, :mod:`.inventory`)."""
    from pyspark.sql import functions as F

    started = time.monotonic()
    store = spec.open()
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    listing = list_log(store)
    log = read_log(spark, spec, listing)
    source = "given"
    if retention_ms is None:
        value = log.metadata.configuration.get("delta.deletedFileRetentionDuration")
        retention_ms = log.retention_ms()
        source = (
            "the table property delta.deletedFileRetentionDuration"
            if value
            else "Delta's default (7 days)"
        )
    cutoff = now_ms - retention_ms
    partition_columns = list(log.metadata.partition_columns)
    configuration = dict(log.metadata.configuration)
    from_inventory: InventoryReport | None = None
    if inventory is not None:  # instead of the listing (deltaguard.tools.orphans.inventory)
        root = table_root(store, inventory, partition_columns, configuration)
        read = inventory_listing_spark(spark, inventory, root)
        from_inventory = read.report
        cutoff = min(cutoff, from_inventory.date_ms)
    entries = read_entries(dynamodb) if dynamodb is not None else None
    flags, live_files = reference_flags(spark, log.actions, cutoff)
    table = (
        read.listing
        if inventory is not None
        else list_table_distributed(spark, spec, partition_columns, configuration)
    )
    try:
        checkpoints = _checkpoint_dirs(table)
        joined = table.files.join(flags, "path", "left")
        classify = _classifier(partition_columns, configuration, cutoff, checkpoints)
        data = spark.createDataFrame(
            joined.rdd.mapPartitions(classify),
            REPORT_SCHEMA,
        )
        logs = [
            (c.path, c.size, c.mtime_ms, c.file_class.value, c.reason, c.partition)
            for c in log_candidates(store, listing, cutoff, entries)
        ]
        report = data.unionByName(spark.createDataFrame(logs, REPORT_SCHEMA))
        report.write.mode("overwrite").parquet(report_path)
        listed = table.file_count
    finally:
        table.release()
        flags.unpersist()
        log.release()
    written = spark.read.parquet(report_path)
    groups = (
        written.groupBy("partition", "class")
        .agg(F.count("*").alias("files"), F.sum("size").alias("bytes"))
        .collect()
    )
    totals = {c.value: {"files": 0, "bytes": 0} for c in FileClass}
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
    notes = list(log.notes)
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
        listed,
        live_files,
        table.hidden_dirs,
        len(listing.files),
        time.monotonic() - started,
        notes,
        kept_dirs(checkpoints, table.hidden_dirs),
        from_inventory,
    )
    return SparkScan(result, report_path, count, totals, partitions)


def report_frame(spark: SparkSession, scan: SparkScan) -> DataFrame:
    """The candidates of ``scan`` as a DataFrame (from its report table)."""
    return spark.read.parquet(scan.report_path)
