"""deltaguard orphans against Spark: a table with a real history, a job that failed half way
and a driver killed mid-write; at retention 0, orphan + expired-tombstone must equal what
Spark's own ``VACUUM ... RETAIN 0 HOURS DRY RUN`` reports on the same table."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from deltaguard.testbed.failed_job import build_fixture
from deltaguard.tools.deltalog import load_snapshot, open_table
from deltaguard.tools.orphans import FileClass, execute, scan

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def failed_jobs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("failed-jobs")
    return out / "events", build_fixture(out)


def test_orphans_match_spark_vacuum_dry_run(failed_jobs, tmp_path: Path) -> None:
    table, expected = failed_jobs
    assert expected["failed_job_files"] and expected["killed_job_files"]
    store = open_table(str(table))
    result = scan(store, retention_ms=0)
    ours = {
        store.location(c.path) for c in result.of(FileClass.ORPHAN, FileClass.EXPIRED_TOMBSTONE)
    }
    spark_files = {p for p in expected["vacuum_dry_run"] if os.path.isfile(p)}
    assert ours == spark_files
    orphans = {c.path for c in result.of(FileClass.ORPHAN)}
    assert set(expected["failed_job_files"]) | set(expected["killed_job_files"]) <= orphans
    kinds = {c.path.split("/")[0] for c in result.of(FileClass.EXPIRED_TOMBSTONE)}
    assert "_change_data" in kinds and any(
        c.path.startswith("deletion_vector_") for c in result.candidates
    )


def test_cleanup_keeps_every_live_file(failed_jobs, tmp_path: Path) -> None:
    table, expected = failed_jobs
    store = open_table(str(table))
    before = load_snapshot(store)
    done = execute(
        store,
        scan(store, retention_ms=0),
        manifest_path=tmp_path / "manifest.json",
        unsafe_retention=True,
        given_retention=True,
    )
    deleted = set(done.outcome.deleted)
    assert set(expected["failed_job_files"]) | set(expected["killed_job_files"]) <= deleted
    after = load_snapshot(store)
    assert after.version == before.version
    assert all((table / p).exists() for p in after.adds.paths())
    for _path, dv in after.adds.deletion_vectors():
        assert (table / dv.file_path()).exists()
