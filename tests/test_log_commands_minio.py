"""Issue 51 on MinIO, the second real S3 server beside LocalStack: ``deltaguard checkpoint``
writes a checkpoint delta-rs reads, then ``deltaguard log-cleanup`` removes the log below it
and nothing else. The oracles are delta-rs (the rows of every retained version, time travel
below the truncation failing) and a raw boto3 listing."""

from __future__ import annotations

import json
import time
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from deltaguard.localstack.minio_server import MinIOServer
from deltaguard.tools.checkpoint.run import CheckpointRequest, run_checkpoint
from deltaguard.tools.commands.audit import audit_exit_code
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.orphans.log_cleanup_run import LogCleanupRequest, run_log_cleanup
from deltaguard.tools.storage import S3Options

DAY = 86_400_000


def _keys(s3: Any, bucket: str, prefix: str) -> set[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return {o["Key"].removeprefix(prefix) for p in pages for o in p.get("Contents", [])}


def _rows(uri: str, options: dict[str, str], version: int) -> list[int]:
    table = DeltaTable(uri, version=version, storage_options=options).to_pyarrow_table()
    return sorted(table.column("x").to_pylist())


def test_checkpoint_then_log_cleanup_on_minio(
    minio: MinIOServer,
    minio_bucket: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    endpoint, bucket = minio.endpoint, minio_bucket
    s3 = endpoint.s3_client()
    uri, options = f"s3://{bucket}/lake/t", endpoint.delta_rs_options()
    for v in range(6):  # version v holds the rows 0..v
        write_deltalake(uri, pa.table({"x": [v]}), mode="append", storage_options=options)
    before = {v: _rows(uri, options, v) for v in range(6)}
    s3_options = S3Options(endpoint.url, endpoint.region, True)

    assert run_checkpoint(CheckpointRequest(uri, s3=s3_options, as_json=True)) == 0
    assert json.loads(capsys.readouterr().out)["outcome"] == "written"
    log = _keys(s3, bucket, "lake/t/_delta_log/")
    assert f"{5:020d}.checkpoint.parquet" in log and "_last_checkpoint" in log

    # S3 stamps the objects now: the run's clock moves two days on instead (the cut-off is
    # truncated to the day), with no retention, so the checkpoint of version 5 truncates.
    request = LogCleanupRequest(
        table=uri,
        s3=s3_options,
        retention_ms=0,
        unsafe_retention=True,
        yes=True,
        as_json=True,
        manifest_path=None,
        dynamodb=None,
        now_ms=int(time.time() * 1000) + 2 * DAY,
    )
    assert run_log_cleanup(request) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["truncation_version"] == 5
    after = _keys(s3, bucket, "lake/t/_delta_log/")
    assert log - after == {f"{v:020d}.json" for v in range(5)}, "the commits below 5, only"
    assert _rows(uri, options, 5) == before[5]
    with pytest.raises(Exception, match="No files in log segment"):
        _rows(uri, options, 4)
    health = audit_table(uri, None, None, s3=s3_options, dynamodb=None)
    assert audit_exit_code(health) == 0, health.to_json()["findings"]
