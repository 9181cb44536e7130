"""deltaguard orphans against Spark: a table with a real history, a job that failed half way
and a driver killed mid-write; at retention 0, orphan + expired-tombstone must equal what
Spark's own ``VACUUM ... RETAIN 0 HOURS DRY RUN`` reports on the same table."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from deltaguard.localstack.failed_job import run_vacuum_dry_run
from deltaguard.localstack.table_copies import upload_table
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.orphans import CleanupOptions, FileClass, execute, read_manifest, scan
from deltaguard.tools.storage import open_table

pytestmark = pytest.mark.spark


# proves: docs/guides/cleanup.md "orphan + expired-tombstone is exactly VACUUM's DRY RUN set"
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


# proves: docs/guides/cleanup.md "orphan + expired-tombstone is exactly VACUUM's DRY RUN set"
def test_orphans_match_spark_vacuum_on_s3_through_our_logstore(
    failed_jobs, localstack, ls_bucket: str, tmp_path: Path
) -> None:
    """The same table on LocalStack: Spark's VACUUM lists it through deltaguard's LogStore
    (``listFrom`` must return partition directories, or VACUUM sees no file in them), and
    both sides must report the same files over ``s3a://``."""
    table, expected = failed_jobs
    endpoint = localstack.endpoint
    client = endpoint.s3_client()
    upload_table(table, client, ls_bucket, "lake/events")
    uri = f"s3a://{ls_bucket}/lake/events"
    spark = run_vacuum_dry_run(uri, tmp_path / "vacuum.log", endpoint)
    store = open_table(uri, client=client)
    result = scan(store, retention_ms=0)
    ours = {
        store.location(c.path) for c in result.of(FileClass.ORPHAN, FileClass.EXPIRED_TOMBSTONE)
    }
    local_files = {p for p in expected["vacuum_dry_run"] if os.path.isfile(p)}
    assert len(ours) == len(local_files) > len(expected["failed_job_files"])
    assert set(spark["paths"]) == ours


# proves: docs/guides/cleanup.md and README "cleanup keeps every live file"
def test_cleanup_keeps_every_live_file(failed_jobs, tmp_path: Path) -> None:
    shared, expected = failed_jobs
    # The session's table is shared with other modules: clean a copy of it.
    table = tmp_path / "events"
    shutil.copytree(shared, table, symlinks=True)  # the expected file lists are relative
    store = open_table(str(table))
    before = load_snapshot(store)
    execute(
        store,
        scan(store, retention_ms=0),
        manifest_path=tmp_path / "manifest",
        options=CleanupOptions(unsafe_retention=True, given_retention=True),
    )
    deleted = set(read_manifest(tmp_path / "manifest").paths("deleted"))
    assert set(expected["failed_job_files"]) | set(expected["killed_job_files"]) <= deleted
    after = load_snapshot(store)
    assert after.version == before.version
    assert all((table / p).exists() for p in after.adds.paths())
    for _path, dv in after.adds.deletion_vectors():
        assert (table / dv.file_path()).exists()
