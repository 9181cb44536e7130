"""``deltaguard orphans --engine spark``: the Spark engine behind the one orchestrator
:func:`deltaguard.tools.orphans.run.run_orphans` (:class:`~deltaguard.tools.orphans.engine.OrphansEngine`).

The scan is :func:`.orphans_scan.scan_spark` (candidates written to a Parquet report table,
at most ``--max-report-files`` of them brought to the driver), the delete
:func:`.orphans_cleanup.execute_spark` (deletes in executors; the manifest is the local
engine's directory, :mod:`deltaguard.tools.orphans.manifest`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from deltaguard.tools.deltalog.listing import list_log
from deltaguard.tools.orphans.cleanup import CleanupResult, cleanup_classes
from deltaguard.tools.orphans.engine import (
    EngineScan,
    OrphansRequest,
    inventory_of,
)
from deltaguard.tools.orphans.interrupt import StopSignal
from deltaguard.tools.orphans.manifest import Manifest, default_manifest_path
from deltaguard.tools.progress import phase
from deltaguard.tools.spark_engine.errors import job_failure
from deltaguard.tools.spark_engine.log_refs import require_reconstructable
from deltaguard.tools.spark_engine.orphans_cleanup import execute_spark
from deltaguard.tools.spark_engine.orphans_scan import DEFAULT_MAX_REPORT_FILES, scan_spark
from deltaguard.tools.spark_engine.session import engine_session, session_running
from deltaguard.tools.spark_engine.store_spec import StoreSpec
from deltaguard.tools.storage import TableStore

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class SparkEngineOptions:
    """Where the report table goes (default: next to the default manifests, under the state
    directory), the master for a session the command builds itself, how many candidates the
    report may carry."""

    report_table: str | None = None
    master: str | None = None
    driver_memory: str | None = None
    max_report_files: int = DEFAULT_MAX_REPORT_FILES


class SparkOrphansEngine:
    """:class:`~deltaguard.tools.orphans.engine.OrphansEngine` as Spark jobs."""

    def __init__(self, options: SparkEngineOptions) -> None:
        self._options = options
        self._spec: StoreSpec | None = None
        self._spark: SparkSession | None = None

    def scan(self, req: OrphansRequest, retention_ms: int | None) -> EngineScan:
        options = self._options
        default = default_manifest_path(req.table, datetime.now(UTC))
        report = options.report_table or str(default.with_name(f"{default.name}.report.parquet"))
        inventory = inventory_of(req)  # resolved on the driver, before a JVM starts
        if not session_running():  # the session will be built from the command's options
            store = StoreSpec(req.table, req.s3).open()
            require_reconstructable(list_log(store), req.table, store)  # before a JVM starts
        with phase("orphans: starting Spark"):
            spark = engine_session(
                req.table, req.s3, master=options.master, driver_memory=options.driver_memory
            )
        self._spark = spark
        self._spec = spec = StoreSpec.of_session(spark, req.table, req.s3)  # .hadoop_s3
        if not req.as_json:
            err = Console(stderr=True, soft_wrap=True)
            err.print(f"scanning {req.table} with Spark ({spark.sparkContext.master})")
        with phase("orphans: scanning with Spark (listing and classifying jobs)"):
            scan = scan_spark(
                spark,
                spec,
                report,
                retention_ms=retention_ms,
                max_report_files=options.max_report_files,
                dynamodb=req.dynamodb,
                inventory=inventory,
                range_files=req.range_files,
            )
        if spec.note:
            scan.result.notes.append(spec.note)
        return scan

    def store(self) -> TableStore:
        assert self._spec is not None, "scan first"
        return self._spec.open()

    def delete(
        self,
        req: OrphansRequest,
        scan: EngineScan,
        manifest: Path,
        stop: StopSignal,
        continues: Manifest | None = None,
    ) -> CleanupResult:
        assert self._spark is not None and self._spec is not None, "scan first"
        planned, _ = scan.count(cleanup_classes(req.include_tombstones))
        with phase(f"orphans: re-reading the log, deleting {planned:,} files with Spark"):
            return execute_spark(
                self._spark,
                self._spec,
                scan,
                manifest_dir=manifest,
                options=req.cleanup,
                stop=stop,
                continues=continues,
            )

    def failure(self, exc: Exception) -> str | None:
        return job_failure(exc)
