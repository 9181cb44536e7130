"""The seam between ``deltaguard orphans`` and the engine that does the work.

An engine scans (lists the table, builds the log's reference sets, classifies what no
retained version references) and deletes (re-reads the log, checks containment, sends the
deletes, writes the manifest). Everything else is written once, in the orchestrator
:mod:`.run`: the request checks, the 24-hour retention floor, the manifest that must not
already exist, signal handling, exit codes, error messages and the terminal, JSON and TSV
reports, where each run's manifest goes. Two engines implement :class:`OrphansEngine`: the local one
(:class:`.run.LocalEngine`, one process) and the Spark one
(:mod:`deltaguard.tools.spark_engine.orphans_engine`, jobs in executors). Both apply the same
rules (:mod:`.rules`, :mod:`.classify`, :func:`.cleanup.spared_because`, the manifest of
:mod:`.manifest`), so both find the same candidates on every table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
from deltaguard.tools.orphans.classify import FileClass, ScanResult
from deltaguard.tools.orphans.cleanup import CleanupOptions, CleanupResult
from deltaguard.tools.orphans.interrupt import StopSignal
from deltaguard.tools.orphans.inventory import InventoryError, InventorySource, parse_date
from deltaguard.tools.orphans.inventory_read import open_inventory
from deltaguard.tools.orphans.key_ranges import DEFAULT_RANGE_FILES
from deltaguard.tools.orphans.manifest import Manifest
from deltaguard.tools.storage import S3Options, TableStore


@dataclass(frozen=True)
class OrphansRequest:
    """The command line, as plain values."""

    table: str
    endpoint: str | None = None
    region: str | None = None
    path_style: bool = False
    retention_hours: float | None = None
    delete: bool = False
    yes: bool = False
    include_tombstones: bool = False
    unsafe_retention: bool = False
    as_json: bool = False
    #: ``--format tsv``: stdout holds only the candidates' rows.
    tsv: bool = False
    manifest_path: Path | None = None
    workers: int | None = None
    #: ``--dynamodb-table`` and its options: the DynamoDB LogStore's table to ask.
    dynamodb: DynamoDBCheck | None = None
    #: ``--inventory`` and ``--inventory-date`` (as given): :mod:`.inventory`.
    inventory: str | None = None
    inventory_date: str | None = None
    #: ``--list-range-files``: :mod:`.key_ranges`.
    range_files: int = DEFAULT_RANGE_FILES

    @property
    def s3(self) -> S3Options:
        return S3Options(self.endpoint, self.region, self.path_style)

    @property
    def retention_ms(self) -> int | None:
        """``--retention-hours`` in milliseconds, None if not given."""
        hours = self.retention_hours
        return None if hours is None else round(hours * 3_600_000)

    @property
    def cleanup(self) -> CleanupOptions:
        """The options of ``--delete --yes``."""
        given = self.retention_hours is not None
        return CleanupOptions(self.include_tombstones, self.unsafe_retention, given, self.dynamodb)


def inventory_of(req: OrphansRequest) -> InventorySource | None:
    """The request's ``--inventory`` resolved (both engines), None without one. Raises
    :class:`~.inventory.InventoryError` (exit 2) for an unusable inventory or date, or a date
    without an inventory."""
    if req.inventory is None:
        if req.inventory_date is not None:
            raise InventoryError("--inventory-date needs --inventory")
        return None
    date_ms = None if req.inventory_date is None else parse_date(req.inventory_date)
    return open_inventory(req.inventory, req.s3, date_ms)


@dataclass
class EngineScan:
    """What an engine's scan found: a :class:`~.classify.ScanResult` and the totals and
    partitions of every candidate. ``result.candidates`` holds every candidate only if
    :attr:`complete` (the Spark engine caps them at ``--max-report-files``; the totals and
    partitions are complete either way). ``report_path``: the Parquet table holding every
    candidate (Spark engine), None if the report is the result itself (local engine)."""

    result: ScanResult
    candidate_count: int
    totals: dict[str, dict[str, int]]
    partitions: list[dict[str, Any]] = field(default_factory=list)
    report_path: str | None = None

    @property
    def complete(self) -> bool:
        return len(self.result.candidates) == self.candidate_count

    def count(self, classes: tuple[FileClass, ...]) -> tuple[int, int]:
        """Files and bytes of the candidates in ``classes``."""
        tot = [self.totals.get(c.value, {}) for c in classes]
        return sum(t.get("files", 0) for t in tot), sum(t.get("bytes", 0) for t in tot)


class OrphansEngine(Protocol):
    """What an engine does for :func:`.run.run_orphans`. One engine object serves one
    command: :meth:`scan` first, then at most one :meth:`delete` of that scan."""

    def scan(self, req: OrphansRequest, retention_ms: int | None) -> EngineScan:
        """Lists and classifies ``req.table`` (nothing is modified); ``retention_ms`` None:
        the table's own retention. Raises
        :class:`~deltaguard.tools.deltalog.errors.DeltaLogError` for a table that cannot be
        read, ValueError (:class:`~.inventory.InventoryError` among them) for a refused
        setting, OSError, or an engine failure :meth:`failure` names."""
        ...

    def store(self) -> TableStore:
        """The scanned table's store (its locations for the reports); after :meth:`scan`."""
        ...

    def delete(
        self,
        req: OrphansRequest,
        scan: EngineScan,
        manifest: Path,
        stop: StopSignal,
        continues: Manifest | None = None,
    ) -> CleanupResult:
        """Deletes the scan's targets (:func:`.cleanup.cleanup_classes`) after re-reading the
        log (at the retention given, else the table's as it is then), writing the manifest
        directory ``manifest`` (a new run directory; ``continues``: the unfinished earlier
        run it finishes): the contract of :func:`.cleanup.execute`. Before anything is deleted it raises what that raises
        (:class:`~.interrupt.CleanupStopped` with the summary ``interrupted``; ValueError,
        OSError, :class:`~deltaguard.tools.deltalog.errors.DeltaLogError`); once deleting
        began it raises nothing but
        :class:`~.cleanup.CleanupInterruptedError` (a delete job that failed: its manifest
        says what is known)."""
        ...

    def failure(self, exc: Exception) -> str | None:
        """The one line that says why an engine-specific exception (a Spark job's) ended
        the command, or None if ``exc`` is not one (it then propagates)."""
        ...
