"""A cleanup that fails after it began deleting reports what happened (issue 21, item 5): never
"nothing deleted"; the message and the manifest say what was deleted and what is unknown;
exit code 3. The local engine here (a real failing manifest write, a real 500 on
DeleteObjects through the fault proxy); the Spark engine's delete job in
test_orphans_spark_engine.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_orphans import _table as orphans_table

from deltaguard.localstack.fault_proxy import FaultProxy, FaultRule
from deltaguard.localstack.table_copies import upload_table
from deltaguard.tools.cli import main
from deltaguard.tools.orphans import CleanupOptions, execute, read_manifest, scan, targets
from deltaguard.tools.storage import LocalTableStore, open_table

#: What test_orphans.py's table has to clean by default.
PLANNED = [
    "_change_data/cdc-orphan.parquet",
    "_delta_log/.00000000000000000009.json.1234.tmp",
    "p=b/part-orphan.parquet",
]


# proves: docs/guides/cleanup.md "a failure after deleting began never reads 'nothing deleted'"
@pytest.mark.parametrize("as_json", [False, True])
def test_a_failed_final_manifest_write_still_says_what_was_deleted(
    tmp_path: Path, monkeypatch, as_json: bool
) -> None:
    """The manifest's directory is replaced by a file while the deletes run, so its outcome
    records and its final summary really cannot be written: the command says which files it
    deleted (``--json``: in ``cleanup.unwritten``), that the summary may still say
    "deleting", exit code 3 (old code: "nothing deleted", exit 2)."""
    root = tmp_path / "t"
    orphans_table(root)
    folder = tmp_path / "manifests"
    manifest = folder / "m"
    real_delete = LocalTableStore.delete_batch

    def delete_then_break_the_manifest_folder(self, rel_paths, attempts, stop=None):
        out = real_delete(self, rel_paths, attempts, stop)
        folder.rename(tmp_path / "first")  # keep the first write (status deleting)
        folder.write_text("a file where the manifest's folder was")
        return out

    monkeypatch.setattr(LocalTableStore, "delete_batch", delete_then_break_the_manifest_folder)
    json_flag = ["--json"] if as_json else []
    done = CliRunner().invoke(
        main, ["orphans", str(root), "--delete", "--yes", *json_flag, "--manifest", str(manifest)]
    )
    assert done.exit_code == 3, done.output
    assert "nothing deleted" not in done.output
    if as_json:
        cleanup = json.loads(done.stdout)["cleanup"]
        assert cleanup["counts"]["deleted"] == 3 and cleanup["counts"]["unknown"] == 0
        assert "the manifest's outcome records could not be written" in cleanup["error"]
        assert sorted(r["path"] for r in cleanup["unwritten"]) == PLANNED
        assert {r["outcome"] for r in cleanup["unwritten"]} == {"deleted"}
    else:
        assert "deleted 3 files" in done.stdout and "0 outcome unknown" in done.stdout
        assert "the manifest's outcome records could not be written" in done.output
        assert all(f"deleted {p}" in done.stdout for p in PLANNED)
    assert not any((root / p).exists() for p in PLANNED)
    first = read_manifest(tmp_path / "first" / "m")
    assert first.summary["status"] == "deleting"
    assert first.paths("planned") == PLANNED


# proves: docs/guides/cleanup.md "a failure after deleting began never reads 'nothing deleted'"
def test_a_failing_delete_request_is_reported_unknown_not_failed(
    localstack, ls_bucket: str, tmp_path: Path
) -> None:
    """DeleteObjects answers 500 InternalError every time (through the fault proxy): S3 may
    have applied such a request, so its files are "unknown", not "failed"; the manifest lists
    them with the error, the summary says so, and the run counts as unfinished (exit 3)."""
    orphans_table(tmp_path / "t")
    client = localstack.endpoint.s3_client()
    upload_table(tmp_path / "t", client, ls_bucket, "lake/t")
    with FaultProxy(localstack.endpoint, tmp_path / "proxy", seed=3) as proxy:
        proxy.set_rules(
            [
                FaultRule(
                    "error",
                    method="POST",
                    path_regex=rf"^/{ls_bucket}/?$",  # DeleteObjects: POST /bucket?delete
                    status=500,
                    code="InternalError",
                )
            ]
        )
        store = open_table(f"s3://{ls_bucket}/lake/t", client=proxy.endpoint.s3_client())
        result = scan(store, retention_ms=0)
        planned = sorted(c.path for c in targets(result, include_tombstones=False))
        done = execute(
            store,
            result,
            manifest_path=tmp_path / "m",
            options=CleanupOptions(unsafe_retention=True, given_retention=True),
        )
    from deltaguard.tools.orphans.cleanup import summary, unfinished  # new in this change

    written = read_manifest(tmp_path / "m")
    assert written.summary["status"] == "done"
    assert not written.paths("deleted") and not written.paths("failed")
    assert written.paths("unknown") == planned
    assert all("InternalError" in e for e in written.outcomes()["error"].to_pylist())
    assert unfinished(written.summary)
    line = summary(written.summary, "m")
    assert line.startswith("deleted 0 files") and f"{len(planned)} outcome unknown" in line
    assert done.manifest["requests"] >= 2  # retried before giving up
