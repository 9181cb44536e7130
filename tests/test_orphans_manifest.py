"""The cleanup manifest (issue 26: one format; issue 22: streamed to disk), local engine: a
directory with a small JSON summary and Parquet records, written before and while deleting.
The Spark engine's manifest is compared with this one in test_orphans_spark_engine.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from test_orphans import DAY, NOW
from test_orphans import _table as orphans_table
from test_orphans_cleanup_failures import PLANNED
from test_orphans_interrupt import OLD, stray_table

from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.tools.orphans import execute, read_manifest, read_manifests, scan
from deltaguard.tools.orphans import manifest as manifest_module
from deltaguard.tools.orphans.engine import OrphansRequest
from deltaguard.tools.orphans.manifest import (
    MANIFEST_SCHEMA,
    RECORD_SCHEMA,
    ManifestPathError,
    check_manifest_path,
    check_manifests_dir,
    new_run_dir,
)
from deltaguard.tools.orphans.run import LocalEngine, run_orphans
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


# proves: docs/guides/cleanup.md "the plan is on disk before the first delete"
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


def _cleanup(table: Path, manifests: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    """``orphans TABLE --delete --yes --manifest MANIFESTS --json`` in this process (the
    command's orchestrator and local engine): its exit code and JSON report."""
    req = OrphansRequest(
        table=str(table), delete=True, yes=True, as_json=True, manifest_path=manifests
    )
    code = run_orphans(req, LocalEngine())
    return code, orjson.loads(capsys.readouterr().out)


def _runs(manifests: Path) -> list[Path]:
    return sorted(p for p in manifests.iterdir() if p.is_dir())


# proves: docs/guides/cleanup.md "SIGINT/SIGTERM never loses the record; deleted + missing <= gone
# <= deleted + missing + unknown"
def test_a_fixed_manifest_directory_works_on_every_run(tmp_path: Path, capsys) -> None:
    """A scheduled job with one ``--manifest``: three runs in a row, the second finding new
    strays, the third nothing. Each run that deletes writes a new manifest beside the
    earlier ones (never replacing one); a run after a finished one continues nothing; a run
    with nothing to delete writes nothing."""
    strays = stray_table(tmp_path / "t", 3)
    manifests = tmp_path / "deleted"
    code, first = _cleanup(tmp_path / "t", manifests, capsys)
    assert code == 0 and first["cleanup"]["counts"]["deleted"] == 3, first["cleanup"]
    assert first["cleanup"]["continues"] is None
    (run1,) = _runs(manifests)
    kept = read_manifest(run1).summary
    more = [f"p=b/late-{k}.parquet" for k in range(2)]
    table = SyntheticTable(tmp_path / "t")
    for p in more:
        table.write_file(p, OLD)
    code, second = _cleanup(tmp_path / "t", manifests, capsys)
    assert code == 0 and second["cleanup"]["counts"]["deleted"] == 2, second["cleanup"]
    assert second["cleanup"]["continues"] is None  # the first run finished
    runs = _runs(manifests)
    assert len(runs) == 2 and read_manifest(run1).summary == kept
    assert read_manifest(Path(second["cleanup"]["manifest_path"])).paths("deleted") == more
    code, third = _cleanup(tmp_path / "t", manifests, capsys)
    assert (code, third["cleanup"]) == (0, None) and _runs(manifests) == runs
    assert not any((tmp_path / "t" / p).exists() for p in [*strays, *more])


def _crash_after_deleting(monkeypatch: pytest.MonkeyPatch, share: float) -> None:
    """The process dies inside its first delete request, after ``share`` of its files were
    really deleted and before the answer is recorded."""
    real = LocalTableStore.delete_batch

    def crash(self, rel_paths, attempts, stop=None):  # type: ignore[no-untyped-def]
        real(self, rel_paths[: round(len(rel_paths) * share)], attempts, stop)
        raise _Crash

    monkeypatch.setattr(LocalTableStore, "delete_batch", crash)


def test_a_rerun_continues_a_crashed_run_in_the_old_layout(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """A run that died mid-request in ``--manifest m`` written as one manifest (the layout of
    earlier versions: ``m/manifest.json``): the same command finishes the job, writes its
    manifest beside it (``m/<run>``, ``m`` kept as it was), and names it in ``continues``:
    every unsettled file of the crashed run re-checked, the half deleted before the crash
    ``gone``, the other half planned again and deleted now (each file counted once)."""
    strays = stray_table(tmp_path / "t", 10)
    store = open_table(str(tmp_path / "t"))
    _crash_after_deleting(monkeypatch, 0.5)
    with pytest.raises(_Crash):
        execute(store, scan(store), manifest_path=tmp_path / "m")
    monkeypatch.undo()
    crashed = read_manifest(tmp_path / "m").summary
    assert crashed["status"] == "deleting"
    gone = {p for p in strays if not (tmp_path / "t" / p).exists()}
    assert len(gone) == 5
    code, report = _cleanup(tmp_path / "t", tmp_path / "m", capsys)
    assert code == 0, report["cleanup"]
    (run,) = [p for p in _runs(tmp_path / "m") if p.name not in ("plan", "outcome")]
    both = read_manifests(tmp_path / "m")  # oldest first: m itself, kept as it was, then run
    assert [m.directory for m in both] == [tmp_path / "m", run]
    assert both[0].summary == crashed
    doc = read_manifest(tmp_path / "m").summary  # the latest run in m
    assert read_manifest(run).summary == doc
    assert report["cleanup"] == {**doc, "manifest_path": str(run)}
    assert doc["continues"] == {
        "run": "m",
        "manifest": str(tmp_path / "m"),
        "status": "deleting",
        "signal": None,
        "error": None,
        "deleted": 0,
        "rechecked": 10,
        "planned_again": 5,
        "gone": 5,
    }
    assert set(read_manifest(run).paths("deleted")) == set(strays) - gone
    assert doc["counts"]["deleted"] == 5 and doc["status"] == "done"
    assert not any((tmp_path / "t" / p).exists() for p in strays)


def test_a_rerun_with_nothing_left_says_it_finished_the_earlier_run(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """The crashed run had deleted everything before it died: the re-run finds nothing to
    delete, yet writes a ``done`` manifest continuing it (all its unsettled files ``gone``)
    and says so on the terminal; the run after that continues nothing and writes nothing."""
    stray_table(tmp_path / "t", 4)
    store = open_table(str(tmp_path / "t"))
    manifests = tmp_path / "deleted"
    crashed_run = new_run_dir(manifests, store.uri)
    _crash_after_deleting(monkeypatch, 1.0)
    with pytest.raises(_Crash):
        execute(store, scan(store), manifest_path=crashed_run)
    monkeypatch.undo()
    req = OrphansRequest(table=str(tmp_path / "t"), delete=True, yes=True, manifest_path=manifests)
    assert run_orphans(req, LocalEngine()) == 0
    out = capsys.readouterr().out
    (run,) = [r for r in _runs(manifests) if r != crashed_run]
    doc = read_manifest(run).summary
    assert (doc["status"], doc["counts"]["planned"], doc["planned"]) == ("done", 0, 0)
    assert doc["continues"]["rechecked"] == doc["continues"]["gone"] == 4
    assert "nothing to clean up" in out, out
    assert f"continues the unfinished run {crashed_run.name} (status deleting;" in out, out
    assert "of its 4 files of unknown outcome, 4 are gone and 0 were planned again" in out
    assert f"manifest: {run} (status done)" in out, out
    assert run_orphans(req, LocalEngine()) == 0
    assert "continues" not in capsys.readouterr().out and len(_runs(manifests)) == 2


def test_a_manifests_directory_holding_other_files_is_refused(tmp_path: Path) -> None:
    """``--manifest DIR`` holds run directories (and perhaps a manifest of its own): a
    directory with anything else in it is refused (one line naming it), never written into;
    an empty, missing or manifests-only one is taken."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("x")
    with pytest.raises(ManifestPathError, match=r"src: holds main.py, which is not a cleanup"):
        check_manifests_dir(tmp_path / "src")
    for bad in ("m.json", "src/main.py"):
        with pytest.raises(ManifestPathError):
            check_manifests_dir(tmp_path / bad)
    runs = tmp_path / "runs"
    new_run_dir(runs, "s3://lake/t")  # a run that has not written its summary yet
    check_manifests_dir(runs)
    check_manifests_dir(tmp_path / "new")
    assert not (tmp_path / "new").exists()
