"""``deltaguard checkpoint`` without Spark: tables written by delta-rs (partitions that need
URL encoding, deletes that leave tombstones) and hand-written logs (every field an ``add``
can carry, expired tombstones), delta-rs tables upgraded to V2 checkpoints, on local disk and one on LocalStack.

Readers are delta-rs and deltaguard's replay and audit (whose ``checkpoint-mismatch``
comparison replays the commits beside the checkpoint); Spark reads them in
``test_repair_spark.py``. A checkpoint is proven used by deleting the commits before it."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from deltaguard.tools.checkpoint.last_checkpoint import json_checksum
from deltaguard.tools.checkpoint.run import CheckpointRequest, run_checkpoint
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.storage import S3Options

PARTS = ("a b", "x/y%z", "k=v", "日本")


def _rows(uri: str, version: int | None = None, **options: Any) -> list[tuple[Any, ...]]:
    """Every row delta-rs reads (through DataFusion: every live file opened), sorted."""
    dt = DeltaTable(uri, version=version, storage_options=options or None)
    table = QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all()
    data = pa.table(table)
    return sorted(tuple(r.values()) for r in data.to_pylist())


def _delta_rs_table(root: Path) -> None:
    """Versions 0-3: appends over encoded partitions, then a delete (tombstones)."""
    for i in range(3):
        data = pa.table(
            {"id": [i * 10 + j for j in range(4)], "p": [PARTS[(i + j) % 4] for j in range(4)]}
        )
        write_deltalake(str(root), data, mode="append", partition_by=["p"])
    DeltaTable(str(root)).delete("id = 11")


def _log(root: Path) -> Path:
    return root / "_delta_log"


def _drop_commits_before(root: Path, version: int) -> None:
    """Deletes the commits (and checkpoints, .crc files) before ``version``: a reader must then
    start from the checkpoint of ``version``."""
    for f in _log(root).iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) < version:
            f.unlink()


def _set_fields(value: Any) -> Any:
    """A parquet row with its null struct fields left out (maps stay lists of pairs)."""
    if isinstance(value, dict):
        return {k: _set_fields(v) for k, v in value.items() if v is not None}
    return value


def _checkpoint_rows(path: Path) -> list[dict[str, Any]]:
    return [_set_fields(r) for r in pq.read_table(path).to_pylist()]


def test_json_checksum_is_the_protocols() -> None:
    """PROTOCOL.md "JSON checksum"'s own example (Spark-written ``_last_checkpoint`` files
    are checked in test_repair_spark.py)."""
    sample = json.loads(
        '{"k0":"\'v 0\'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", '
        '[1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}'
    )
    assert json_checksum(sample) == "6a92d155a59bf2eecbd4b4ec7fd1f875"
    assert json_checksum({**sample, "k0": "'v 1'"}) != "6a92d155a59bf2eecbd4b4ec7fd1f875"


def test_checkpoint_of_a_delta_rs_table_reads_the_same(run_cli, tmp_path) -> None:
    root = tmp_path / "t"
    _delta_rs_table(root)
    before = _rows(str(root))
    latest = DeltaTable(str(root)).version()
    result = run_cli("checkpoint", str(root))
    assert result.returncode == 0, result.stderr
    name = f"{latest:020d}.checkpoint.parquet"
    assert f"wrote _delta_log/{name}: version {latest}" in result.stdout
    hint = json.loads((_log(root) / "_last_checkpoint").read_text())
    rows = _checkpoint_rows(_log(root) / name)
    adds = [r["add"] for r in rows if "add" in r]
    assert hint == {
        "version": latest,
        "size": len(rows),
        "sizeInBytes": (_log(root) / name).stat().st_size,
        "numOfAddFiles": len(adds),
        "checksum": json_checksum(hint),
    }
    assert {unquote(a["path"]) for a in adds} == set(load_snapshot(str(root)).adds.paths())
    assert any("%" in a["path"] for a in adds)  # the raw, encoded paths, as the log has them
    assert all(a["dataChange"] is False and a["stats"] for a in adds)
    assert sum(1 for r in rows if "remove" in r) >= 1  # the delete's fresh tombstones
    report = audit_table(str(root))
    assert report.healthy, report.findings
    assert report.to_json()["summary"]["checkpoint_compared"] == (
        f"{name} with the commits from version 0: same state"
    )
    assert _rows(str(root)) == before
    _drop_commits_before(root, latest)
    assert load_snapshot(str(root)).segment.checkpoint is not None
    assert _rows(str(root)) == before
    assert _rows(str(root), version=latest) == before  # time travel to the checkpoint
    write_deltalake(str(root), pa.table({"id": [99], "p": ["a b"]}), mode="append")
    assert _rows(str(root)) == sorted([*before, (99, "a b")])


def test_never_over_a_checkpoint_and_the_hint_only_moves_forward(run_cli, tmp_path, capsys) -> None:
    root = tmp_path / "t"
    _delta_rs_table(root)
    assert run_cli("checkpoint", str(root)).returncode == 0
    name = _log(root) / "00000000000000000003.checkpoint.parquet"
    written, hint = name.read_bytes(), (_log(root) / "_last_checkpoint").read_bytes()
    assert run_checkpoint(CheckpointRequest(str(root))) == 0
    assert "already has a checkpoint" in capsys.readouterr().out
    assert name.read_bytes() == written
    at_1 = _rows(str(root), version=1)
    older = run_cli("checkpoint", str(root), "--version", "1", "--format", "tsv")
    assert older.returncode == 0, older.stderr
    header, row = older.stdout.splitlines()
    assert dict(zip(header.split("\t"), row.split("\t"), strict=True)) | {"size_in_bytes": ""} == {
        "version": "1",
        "checkpoint": "00000000000000000001.checkpoint.parquet",
        "outcome": "written",
        "actions": "10",
        "add_files": "8",
        "tombstones": "0",
        "size_in_bytes": "",
        "last_checkpoint": "left",
        "last_checkpoint_version": "3",
    }
    assert (_log(root) / "_last_checkpoint").read_bytes() == hint
    assert _rows(str(root), version=1) == at_1
    audit = audit_table(str(root))
    assert audit.healthy, audit.findings


def test_refusals_are_one_line_and_write_nothing(run_cli, tmp_path, capsys) -> None:
    missing = run_cli("checkpoint", str(tmp_path / "nothing"))
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"deltaguard checkpoint: {tmp_path / 'nothing'} does not exist"
    ]
    root = tmp_path / "t"
    _delta_rs_table(root)
    assert run_checkpoint(CheckpointRequest(str(root), 2)) == 0
    _drop_commits_before(root, 2)
    capsys.readouterr()
    listing = sorted(p.name for p in _log(root).iterdir())
    for version, why in ((1, "version 1"), (7, "no version 7")):
        assert run_checkpoint(CheckpointRequest(str(root), version, as_json=True)) == 2
        out, err = capsys.readouterr()
        assert len(err.strip().splitlines()) == 1 and why in err, err
        assert err.startswith("deltaguard checkpoint: ")
        assert json.loads(out)["exit_code"] == 2
    assert sorted(p.name for p in _log(root).iterdir()) == listing


def _hand_log(root: Path, commits: list[list[dict[str, Any]]]) -> None:
    _log(root).mkdir(parents=True)
    for version, actions in enumerate(commits):
        text = "".join(json.dumps(a) + "\n" for a in actions)
        (_log(root) / f"{version:020d}.json").write_text(text)


def _metadata(**conf: str) -> dict[str, Any]:
    schema = {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
    return {
        "metaData": {
            "id": "7d0c1b5e-0000-4000-8000-000000000001",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema),
            "partitionColumns": [],
            "configuration": conf,
            "createdTime": 1,
        }
    }


def _info(ts: int) -> dict[str, Any]:
    return {"commitInfo": {"timestamp": ts, "operation": "WRITE"}}


def test_every_field_of_an_add_is_kept_and_expired_tombstones_go(run_cli, tmp_path) -> None:
    """A hand-written log: row tracking (baseRowId, defaultRowCommitVersion, its domain
    metadata), tags, stats, a deletion vector, a txn; a tombstone within the retention and one
    past it; a removed domain."""
    now = int(time.time() * 1000)
    protocol = {
        "protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors", "rowTracking", "domainMetadata"],
        }
    }
    dv = {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 1,
        "sizeInBytes": 36,
        "cardinality": 2,
    }
    add = {
        "path": "part%20one.parquet",
        "partitionValues": {},
        "size": 10,
        "modificationTime": 5,
        "dataChange": True,
        "stats": '{"numRecords":3}',
        "tags": {"INSERTION_TIME": "1"},
        "deletionVector": dv,
        "baseRowId": 40,
        "defaultRowCommitVersion": 1,
    }
    old = {
        "path": "old.parquet",
        "deletionTimestamp": now - 8 * 86_400_000,
        "dataChange": True,
        "size": 3,
    }
    fresh = {
        "path": "fresh.parquet",
        "deletionTimestamp": now - 1000,
        "dataChange": True,
        "size": 4,
        "stats": '{"numRecords":1}',
        "tags": {"x": "y"},
    }
    root = tmp_path / "t"
    _hand_log(
        root,
        [
            [_info(now - 2000), protocol, _metadata(**{"delta.enableRowTracking": "true"})],
            [
                _info(now - 1000),
                {"add": add},
                {"remove": old},
                {"remove": fresh},
                {"txn": {"appId": "app", "version": 4, "lastUpdated": now}},
                {
                    "domainMetadata": {
                        "domain": "delta.rowTracking",
                        "configuration": '{"rowIdHighWaterMark":42}',
                        "removed": False,
                    }
                },
                {"domainMetadata": {"domain": "gone", "configuration": "{}", "removed": False}},
            ],
            [
                _info(now),
                {"domainMetadata": {"domain": "gone", "configuration": "{}", "removed": True}},
            ],
        ],
    )
    result = run_cli("checkpoint", str(root), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["outcome"], report["add_files"], report["tombstones"]) == ("written", 1, 1)
    rows = _checkpoint_rows(_log(root) / "00000000000000000002.checkpoint.parquet")
    by_kind: dict[str, list[Any]] = {}
    for r in rows:
        ((kind, body),) = r.items()
        by_kind.setdefault(kind, []).append(body)
    (written,) = by_kind["add"]
    assert written == {
        **add,
        "dataChange": False,
        "partitionValues": [],
        "tags": [("INSERTION_TIME", "1")],
    }
    (tombstone,) = by_kind["remove"]
    assert tombstone == {
        "path": "fresh.parquet",
        "deletionTimestamp": fresh["deletionTimestamp"],
        "dataChange": False,
        "size": 4,
    }
    assert by_kind["txn"] == [{"appId": "app", "version": 4, "lastUpdated": now}]
    assert [d["domain"] for d in by_kind["domainMetadata"]] == ["delta.rowTracking"]
    assert by_kind["protocol"] == [protocol["protocol"]]
    assert load_snapshot(str(root)).segment.checkpoint is not None


V2_PROTOCOL = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["v2Checkpoint"],
    "writerFeatures": ["v2Checkpoint"],
}


def _upgrade_to_v2(root: Path, policy: str) -> int:
    """Commits the ``v2Checkpoint`` feature and ``delta.checkpointPolicy = policy`` on top of a
    delta-rs table (a protocol and metaData commit, as ALTER TABLE writes); returns its
    version."""
    snap = load_snapshot(str(root))
    (metadata,) = [
        json.loads(line)["metaData"]
        for v in range(snap.version + 1)
        for line in (_log(root) / f"{v:020d}.json").read_text().splitlines()
        if '"metaData"' in line
    ]
    metadata["configuration"] = {**metadata["configuration"], "delta.checkpointPolicy": policy}
    version = snap.version + 1
    lines = [_info(int(time.time() * 1000)), {"protocol": V2_PROTOCOL}, {"metaData": metadata}]
    (_log(root) / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in lines))
    return version


# proves: docs/guides/checkpoint.md "What it writes": V2, "first the sidecars" then the top-level file
@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_a_v2_table_gets_a_v2_checkpoint_with_sidecars(run_cli, tmp_path, fmt) -> None:
    """A delta-rs table upgraded to ``v2Checkpoint`` with ``delta.checkpointPolicy = v2``: the
    sidecar holds the file actions, the UUID-named top-level file (JSON, Delta's default, or
    parquet) the checkpointMetadata, the sidecar action and the rest; ``_last_checkpoint``
    names it as Delta does. delta-rs reads from it alone; the audit compares it with the
    commits, and names a sidecar deleted afterwards."""
    root = tmp_path / "t"
    _delta_rs_table(root)
    before = _rows(str(root))
    latest = _upgrade_to_v2(root, "v2")
    args = ["--v2-format", fmt] if fmt == "parquet" else []
    result = run_cli("checkpoint", str(root), "--json", *args)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    name, (sidecar,) = report["checkpoint"], report["sidecars"]
    assert re.fullmatch(rf"{latest:020d}\.checkpoint\.[0-9a-f-]{{36}}\.{fmt}", name), name
    assert re.fullmatch(rf"{latest:020d}\.checkpoint\.0+1\.0+1\.[0-9a-f-]{{36}}\.parquet", sidecar)
    side = _log(root) / "_sidecars" / sidecar
    side_rows = _checkpoint_rows(side)
    assert pq.read_schema(side).names == ["add", "remove"]
    assert {k for r in side_rows for k in r} == {"add", "remove"}
    if fmt == "json":
        top = [json.loads(line) for line in (_log(root) / name).read_text().splitlines()]
    else:
        top = _checkpoint_rows(_log(root) / name)
    kinds = [next(iter(a)) for a in top]
    assert kinds == ["checkpointMetadata", "sidecar", "protocol", "metaData"]
    meta, ref = top[0]["checkpointMetadata"], top[1]["sidecar"]
    tags = dict(meta["tags"])
    assert meta["version"] == latest
    assert tags["sidecarNumActions"] == str(len(side_rows))
    assert tags["numOfAddFiles"] == str(report["add_files"])
    assert tags["sidecarSizeInBytes"] == str(side.stat().st_size)
    assert json.loads(tags["sidecarFileSchema"])["fields"][0]["name"] == "add"
    assert ref["path"] == sidecar and ref["sizeInBytes"] == side.stat().st_size
    assert ref["modificationTime"] == side.stat().st_mtime_ns // 1_000_000
    hint = json.loads((_log(root) / "_last_checkpoint").read_text())
    v2 = hint["v2Checkpoint"]
    assert (v2["path"], v2["sizeInBytes"]) == (name, (_log(root) / name).stat().st_size)
    assert v2["sidecarFiles"] == [
        {
            "path": ref["path"],
            "sizeInBytes": ref["sizeInBytes"],
            "modificationTime": ref["modificationTime"],
        }
    ]
    assert [next(iter(a)) for a in v2["nonFileActions"]] == [
        "protocol",
        "metaData",
        "checkpointMetadata",
    ]
    assert hint["size"] == len(side_rows) + len(top) == report["actions"]
    assert hint["sizeInBytes"] == side.stat().st_size + v2["sizeInBytes"]
    assert ("checkpointSchema" in hint) == (fmt == "parquet")
    assert hint["checksum"] == json_checksum(hint)
    report = audit_table(str(root))
    assert report.healthy, report.findings
    summary = report.to_json()["summary"]
    assert summary["checkpoint_compared"].endswith("same state")
    assert summary["log"]["by_kind"]["sidecars"] == {"objects": 1, "bytes": side.stat().st_size}
    _drop_commits_before(root, latest)
    assert load_snapshot(str(root)).segment.checkpoint is not None
    assert _rows(str(root)) == before
    side.unlink()
    report = audit_table(str(root))
    findings = [f for f in report.findings if f.code == "checkpoint-unreadable"]
    assert findings and all(sidecar in f.message for f in findings), report.findings


def test_a_v2_feature_table_with_the_classic_policy_gets_a_classic_checkpoint(
    run_cli, tmp_path
) -> None:
    """``v2Checkpoint`` without ``delta.checkpointPolicy = v2``: a classic checkpoint, as
    Delta Spark writes (the protocol always allows one)."""
    root = tmp_path / "t"
    _delta_rs_table(root)
    before = _rows(str(root))
    latest = _upgrade_to_v2(root, "classic")
    result = run_cli("checkpoint", str(root))
    assert result.returncode == 0, result.stderr
    assert f"wrote _delta_log/{latest:020d}.checkpoint.parquet" in result.stdout
    assert not (_log(root) / "_sidecars").exists()
    _drop_commits_before(root, latest)
    assert _rows(str(root)) == before


def test_checkpoint_on_localstack(localstack, ls_bucket, run_cli, monkeypatch, capsys) -> None:
    endpoint = localstack.endpoint
    for name, value in endpoint.credentials_env().items():
        monkeypatch.setenv(name, value)
    uri = f"s3://{ls_bucket}/t"
    options = endpoint.delta_rs_options()
    for i in range(3):
        data = pa.table({"id": [i, i + 10], "p": [PARTS[i], PARTS[i + 1]]})
        write_deltalake(uri, data, mode="append", partition_by=["p"], storage_options=options)
    before = _rows(uri, **options)
    args = ["--endpoint", endpoint.url, "--region", endpoint.region, "--path-style"]
    result = run_cli("checkpoint", uri, *args, env=endpoint.credentials_env())
    assert result.returncode == 0, result.stderr
    s3 = endpoint.s3_client()
    keys = {
        o["Key"] for o in s3.list_objects_v2(Bucket=ls_bucket, Prefix="t/_delta_log/")["Contents"]
    }
    assert "t/_delta_log/00000000000000000002.checkpoint.parquet" in keys
    hint = json.loads(
        s3.get_object(Bucket=ls_bucket, Key="t/_delta_log/_last_checkpoint")["Body"].read()
    )
    assert hint["version"] == 2 and hint["checksum"] == json_checksum(hint)
    for key in keys:
        if key.rsplit("/", 1)[1][:20] in ("00000000000000000000", "00000000000000000001"):
            s3.delete_object(Bucket=ls_bucket, Key=key)
    assert _rows(uri, **options) == before
    s3_options = S3Options(endpoint.url, endpoint.region, True)
    assert run_checkpoint(CheckpointRequest(uri, s3=s3_options, as_json=True)) == 0
    assert json.loads(capsys.readouterr().out)["outcome"] == "exists"


def test_v2_checkpoint_on_localstack(localstack, ls_bucket, tmp_path, monkeypatch, capsys) -> None:
    """The V2 form on S3: the sidecar and the top-level file created with ``If-None-Match``,
    the sidecar action carrying the object's size and LastModified; delta-rs reads from it."""
    from deltaguard.localstack.table_copies import upload_table

    endpoint = localstack.endpoint
    for name, value in endpoint.credentials_env().items():
        monkeypatch.setenv(name, value)
    root = tmp_path / "t"
    _delta_rs_table(root)
    before = _rows(str(root))
    latest = _upgrade_to_v2(root, "v2")
    s3 = endpoint.s3_client()
    uri = upload_table(root, s3, ls_bucket, "v2")
    request = CheckpointRequest(
        uri, s3=S3Options(endpoint.url, endpoint.region, True), as_json=True
    )
    assert run_checkpoint(request) == 0
    report = json.loads(capsys.readouterr().out)
    (sidecar,) = report["sidecars"]
    head = s3.head_object(Bucket=ls_bucket, Key=f"v2/_delta_log/_sidecars/{sidecar}")
    top = s3.get_object(Bucket=ls_bucket, Key=f"v2/_delta_log/{report['checkpoint']}")
    ref = json.loads(top["Body"].read().splitlines()[1])["sidecar"]
    assert ref["sizeInBytes"] == head["ContentLength"]
    assert ref["modificationTime"] == int(head["LastModified"].timestamp() * 1000)
    for v in range(latest):
        s3.delete_object(Bucket=ls_bucket, Key=f"v2/_delta_log/{v:020d}.json")
    assert _rows(uri, **endpoint.delta_rs_options()) == before


def test_a_v2_checkpoint_splits_its_file_actions_over_sidecars(
    tmp_path, monkeypatch, capsys
) -> None:
    """Past ``SIDECAR_ROWS`` file actions (50,000, as Delta; 4 here) the V2 checkpoint has
    several sidecars, each named by the top-level file, together every live file and
    tombstone once; delta-rs reads from them and the audit finds the replay's state."""
    from deltaguard.tools.checkpoint import v2

    monkeypatch.setattr(v2, "SIDECAR_ROWS", 4)
    root = tmp_path / "t"
    _delta_rs_table(root)
    before = _rows(str(root))
    latest = _upgrade_to_v2(root, "v2")
    assert run_checkpoint(CheckpointRequest(str(root), as_json=True)) == 0
    report = json.loads(capsys.readouterr().out)
    rows = [
        r for name in report["sidecars"] for r in _checkpoint_rows(_log(root) / "_sidecars" / name)
    ]
    parts = len(report["sidecars"])
    assert parts == -(-len(rows) // 4) > 1
    assert all(f".{parts:010d}." in name for name in report["sidecars"])
    top = [
        json.loads(line) for line in (_log(root) / report["checkpoint"]).read_text().splitlines()
    ]
    assert [a["sidecar"]["path"] for a in top if "sidecar" in a] == report["sidecars"]
    adds = [r["add"]["path"] for r in rows if "add" in r]
    assert len(adds) == len(set(adds)) == report["add_files"]
    assert sum("remove" in r for r in rows) == report["tombstones"] >= 1
    assert audit_table(str(root)).healthy
    _drop_commits_before(root, latest)
    assert _rows(str(root)) == before
