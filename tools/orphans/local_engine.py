"""The local engine (:class:`~.engine.OrphansEngine`): the scan of :func:`.classify.scan` and
the cleanup of :func:`.cleanup.execute`, in this process (listing and deletes in threads)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
from deltaguard.tools.orphans.classify import ScanResult, scan
from deltaguard.tools.orphans.cleanup import CleanupResult, execute
from deltaguard.tools.orphans.engine import (
    EngineScan,
    OrphansRequest,
    inventory_of,
)
from deltaguard.tools.orphans.interrupt import StopSignal
from deltaguard.tools.orphans.inventory import InventorySource
from deltaguard.tools.orphans.key_ranges import DEFAULT_RANGE_FILES
from deltaguard.tools.orphans.listing import ListingProgress
from deltaguard.tools.orphans.manifest import Manifest
from deltaguard.tools.orphans.report import by_partition, totals
from deltaguard.tools.progress import phase
from deltaguard.tools.storage import S3Options, TableStore, open_table


def scan_with_progress(
    store: TableStore,
    retention_ms: int | None,
    workers: int | None,
    dynamodb: DynamoDBCheck | None = None,
    inventory: InventorySource | None = None,
    inventory_s3: S3Options | None = None,
    range_files: int = DEFAULT_RANGE_FILES,
) -> ScanResult:
    """:func:`.classify.scan` as a phase of :mod:`deltaguard.tools.progress` (shown only when
    the display is on): the scan's step, and while listing the directories done of those
    known, files, unreferenced bytes and rate, refreshed from the listing counters."""
    counters = ListingProgress()
    with phase("orphans: reading the log") as shown:
        stop = threading.Event()
        started = time.monotonic()

        def refresh() -> None:
            while not stop.wait(0.2):
                if not counters.dirs_done:  # not listing yet: the step's name says enough
                    continue
                done, pending = counters.dirs_done, max(counters.dirs_pending, 0)
                elapsed = max(time.monotonic() - started, 1e-6)
                shown.update(
                    total=done + pending or None,
                    completed=done,
                    detail=f"{counters.files:,} files, {counters.bytes / 2**20:.1f} MiB "
                    f"unreferenced, {counters.files / elapsed:,.0f} files/s",
                )

        ticker = threading.Thread(target=refresh, daemon=True)
        ticker.start()
        try:
            return scan(
                store,
                retention_ms=retention_ms,
                workers=workers,
                progress=counters,
                on_phase=lambda name: shown.update(description=f"orphans: {name}"),
                dynamodb=dynamodb,
                inventory=inventory,
                inventory_s3=inventory_s3,
                range_files=range_files,
            )
        finally:
            stop.set()
            ticker.join()


class LocalEngine:
    """:class:`~.engine.OrphansEngine` in this process."""

    def __init__(self) -> None:
        self._store: TableStore | None = None

    def scan(self, req: OrphansRequest, retention_ms: int | None) -> EngineScan:
        self._store = store = open_table(req.table, req.s3)
        inventory = inventory_of(req)
        result = scan_with_progress(
            store, retention_ms, req.workers, req.dynamodb, inventory, req.s3, req.range_files
        )
        found = result.candidates
        return EngineScan(result, len(found), totals(found), by_partition(found))

    def store(self) -> TableStore:
        assert self._store is not None, "scan first"
        return self._store

    def delete(
        self,
        req: OrphansRequest,
        scan: EngineScan,
        manifest: Path,
        stop: StopSignal,
        continues: Manifest | None = None,
    ) -> CleanupResult:
        return execute(
            self.store(),
            scan.result,
            manifest_path=manifest,
            options=req.cleanup,
            stop=stop,
            continues=continues,
        )

    def failure(self, exc: Exception) -> str | None:
        """None: the local engine raises only the errors :func:`.run.run_orphans` maps."""
        return None
