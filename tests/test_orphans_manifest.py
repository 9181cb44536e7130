"""The cleanup manifest (issue 26: one format; issue 22: streamed to disk), local engine: a
directory with a small JSON summary and Parquet records, written before and while deleting.
The Spark engine's manifest is compared with this one in test_orphans_spark_engine.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_orphans import DAY, NOW
from test_orphans import _table as orphans_table
from test_orphans_cleanup_failures import PLANNED

from deltaguard.tools.orphans import execute, read_manifest, scan
from deltaguard.tools.orphans import manifest as manifest_module
from deltaguard.tools.orphans.manifest import (
    MANIFEST_SCHEMA,
    RECORD_SCHEMA,
    ManifestPathError,
    check_manifest_path,
)
from deltaguard.tools.storage import LocalTableStore, open_table


def test_records_are_streamed_to_parquet_and_the_summary_stays_small(
    tmp_path: Path, monkeypatch
) -> None:
    """1,050 orphans with records written every 100: the summary holds counts, no per-file
    list (a few hundred bytes), and the records are in eleven Parquet files of at most 100
    rows each, one per file deleted, with the record columns (old code: one JSON file listing
    every path)."""
    monkeypatch.setattr(manifest_module, "BATCH_ROWS", 100)
    root = tmp_path / "t"
    t = orphans_table(root)
    many = [t.write_file(f"p=m/part-{i:04d}.parquet", NOW - 9 * DAY) for i in range(1_050)]
    store = open_table(str(root))
    done = execute(store, scan(store), manifest_path=tmp_path / "m")
    summary_file = tmp_path / "m" / "manifest.json"
    assert summary_file.stat().st_size < 2_000
    written = read_manifest(tmp_path / "m")
    assert written.summary["schema"] == MANIFEST_SCHEMA and written.summary["status"] == "done"
    assert written.summary["counts"] == done.counts
    assert done.counts["deleted"] == done.counts["planned"] == 1_050 + len(PLANNED)
    parts = sorted((tmp_path / "m" / "outcome").glob("part-*.parquet"))
    assert len(parts) == 11 and all(pq.read_metadata(p).num_rows <= 100 for p in parts)
    outcomes = written.outcomes()
    assert outcomes.schema == RECORD_SCHEMA
    assert sorted(outcomes["path"].to_pylist()) == sorted([*many, *PLANNED])
    assert set(outcomes["outcome"].to_pylist()) == {"deleted"}
    assert written.paths("planned") == []  # every planned file has its outcome record
    assert written.plan().num_rows == 1_050 + len(PLANNED)


class _Crash(BaseException):
    """The process dying in the middle of the deletes."""


def test_a_crash_after_the_plan_leaves_a_deleting_summary_and_the_planned_records(
    tmp_path: Path, monkeypatch
) -> None:
    """The run dies at its first delete request: the manifest on disk was already complete
    for that moment (checked inside the request: summary ``deleting``, a plan record for
    every file the request deletes), and after the crash it still says ``deleting`` and names
    every planned file."""
    root = tmp_path / "t"
    orphans_table(root)
    seen: list[list[str]] = []

    def crash_at_the_delete(self, rel_paths, attempts, stop=None):
        now = read_manifest(tmp_path / "m")
        assert now.summary["status"] == "deleting"
        seen.append(now.paths("planned"))
        assert set(rel_paths) <= set(seen[-1])
        raise _Crash

    monkeypatch.setattr(LocalTableStore, "delete_batch", crash_at_the_delete)
    store = open_table(str(root))
    with pytest.raises(_Crash):
        execute(store, scan(store), manifest_path=tmp_path / "m")
    assert seen == [PLANNED]
    after = read_manifest(tmp_path / "m")
    assert after.summary["status"] == "deleting" and after.summary["finished_at"] is None
    assert after.summary["counts"]["planned"] == len(PLANNED)
    assert after.paths("planned") == PLANNED and after.outcomes().num_rows == 0
    assert all((root / p).exists() for p in PLANNED)


def test_a_manifest_path_that_is_not_a_manifest_directory_is_refused(tmp_path: Path) -> None:
    """A ``.json`` path (the old single-file format), a file, or a directory with other
    content: refused before anything is written; so is a directory that already holds a
    manifest (never replaced: it may be the only record of what an earlier run deleted)."""
    (tmp_path / "file").write_text("x")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("x")
    for bad in ("m.json", "M.JSON", "file", "other"):
        with pytest.raises(ManifestPathError):
            check_manifest_path(tmp_path / bad)
    assert (tmp_path / "other" / "keep.txt").exists()
    root = tmp_path / "t"
    orphans_table(root)
    store = open_table(str(root))
    execute(store, scan(store), manifest_path=tmp_path / "m")
    first = read_manifest(tmp_path / "m").summary
    with pytest.raises(ManifestPathError, match="already holds a manifest"):
        execute(store, scan(store), manifest_path=tmp_path / "m")
    assert read_manifest(tmp_path / "m").summary == first  # kept as it was
    execute(store, scan(store), manifest_path=tmp_path / "m2")  # nothing left: no records
    again = read_manifest(tmp_path / "m2")
    assert again.summary["counts"]["planned"] == 0 and again.records().num_rows == 0
