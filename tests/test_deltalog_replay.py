"""Snapshot replay against Spark Delta's own snapshots and delta-rs, on tables Spark wrote."""

from __future__ import annotations

import json

import pytest
from deltalake import DeltaTable

from deltaguard.localstack.delta_tables import TABLES
from deltaguard.localstack.table_copies import copy_table, upload_table
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.listing import list_log
from deltaguard.tools.deltalog.names import LogFileKind
from deltaguard.tools.orphans.references import collect_references
from deltaguard.tools.storage import S3Options, open_table

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("name", TABLES)
def test_live_files_equal_spark_and_delta_rs_at_every_version(spark_tables, name):
    path = str(spark_tables.path(name))
    for version in spark_tables.versions(name):
        ours = sorted(load_snapshot(path, version=version).live_locations())
        spark = spark_tables.live_files(name, version)
        delta_rs = sorted(
            u.removeprefix("file://") for u in DeltaTable(path, version=version).file_uris()
        )
        assert ours == spark, (name, version)
        assert ours == delta_rs, (name, version)


@pytest.mark.parametrize("name", TABLES)
def test_time_travel_by_timestamp_finds_sparks_version(spark_tables, name):
    path = str(spark_tables.path(name))
    for version in spark_tables.versions(name):
        ts = spark_tables.expected[name]["versions"][str(version)]["timestamp_ms"]
        snap = load_snapshot(path, timestamp_ms=ts)
        assert snap.version == version
        assert snap.timestamp_ms == ts


def test_every_checkpoint_kind_is_exercised(spark_tables):
    used = {name: load_snapshot(str(spark_tables.path(name))).segment.checkpoint for name in TABLES}
    assert used["multipart"].kind is LogFileKind.MULTIPART_CHECKPOINT
    assert len(used["multipart"].files) > 1
    assert used["v2"].kind is LogFileKind.V2_CHECKPOINT
    assert used["v2"].files[0].endswith(".parquet")
    v2_json = load_snapshot(str(spark_tables.path("v2")), version=3).segment.checkpoint
    assert v2_json.kind is LogFileKind.V2_CHECKPOINT and v2_json.files[0].endswith(".json")
    assert used["partitioned"].kind is LogFileKind.CHECKPOINT
    sidecars = list((spark_tables.path("v2") / "_delta_log" / "_sidecars").iterdir())
    assert sidecars, "Spark wrote no sidecars: the V2 test would not test them"


def test_deletion_vectors_tombstones_and_retention(spark_tables):
    snap = load_snapshot(str(spark_tables.path("dv_cdc")))
    dvs = list(snap.adds.deletion_vectors())
    assert dvs, "the DV table has no live deletion vectors"
    for _path, dv in dvs:
        assert (spark_tables.path("dv_cdc") / dv.file_path()).is_file()
    assert len(snap.removes) > 0
    assert all(r.deletion_timestamp for r in snap.tombstones())
    assert snap.deleted_file_retention_ms() == 7 * 24 * 3600 * 1000
    newest = max(r.deletion_timestamp for r in snap.tombstones())
    assert len(snap.unexpired_tombstones(newest)) == len(snap.removes)
    assert len(snap.unexpired_tombstones(newest + 8 * 24 * 3600 * 1000)) == 0
    assert snap.configuration["delta.enableChangeDataFeed"] == "true"


def test_referenced_files_cover_every_version(spark_tables):
    root = spark_tables.path("dv_cdc")
    store = open_table(str(root))
    refs = collect_references(load_snapshot(store, listing=list_log(store)), cutoff_ms=0)
    named = set(refs.named_in_log)
    for version in spark_tables.versions("dv_cdc"):
        snap = load_snapshot(str(root), version=version)
        assert set(snap.adds.paths()) <= named
        assert {dv.file_path() for _p, dv in snap.adds.deletion_vectors()} <= named
    assert refs.change_data and all(p.startswith("_change_data/") for p in refs.change_data)
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert named <= on_disk


def test_stale_last_checkpoint_falls_back_to_listing(spark_tables, tmp_path):
    table = copy_table(spark_tables.path("dv_cdc"), tmp_path / "t")
    (table / "_delta_log" / "_last_checkpoint").write_text('{"version": 99, "size": 3}')
    snap = load_snapshot(str(table))
    assert sorted(snap.live_locations()) == sorted(
        f.replace(str(spark_tables.path("dv_cdc")), str(table))
        for f in spark_tables.live_files("dv_cdc", 5)
    )
    (table / "_delta_log" / "_last_checkpoint").unlink()
    assert load_snapshot(str(table)).version == 5


def test_replay_and_audit_on_localstack(spark_tables, localstack, ls_bucket, monkeypatch, run_cli):
    endpoint = localstack.endpoint
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", endpoint.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", endpoint.secret_key)
    opts = S3Options(endpoint.url, endpoint.region, path_style=True)
    s3_args = ["--endpoint", endpoint.url, "--region", endpoint.region, "--path-style", "--json"]
    for name in ("dv_cdc", "v2", "partitioned"):
        local = spark_tables.path(name)
        uri = upload_table(local, endpoint.s3_client(), ls_bucket, f"tables/{name}")
        for version in spark_tables.versions(name):
            ours = load_snapshot(uri, version=version, s3=opts)
            expected = [f.replace(str(local), uri) for f in spark_tables.live_files(name, version)]
            assert sorted(ours.live_locations()) == expected
        out = run_cli("audit", uri.replace("s3://", "s3a://"), *s3_args)
        assert out.returncode == 0, out.stdout + out.stderr
    history = run_cli("history", uri, *s3_args)
    assert history.returncode == 0, history.stderr
    assert [e["version"] for e in json.loads(history.stdout)["entries"]] == spark_tables.versions(
        name
    )[::-1]
