"""Valid Delta tables synthesized directly as logs (no Spark): JSON commits plus checkpoints
written with pyarrow in the schema delta-rs and Spark read. Only the log is written; data files
are not (loading a table and listing its files never opens them).

- :func:`many_commits`: ``commits`` commits of one add each (every 10th also removes an older
  file), a classic checkpoint every ``interval`` commits, ``_last_checkpoint``.
- :func:`many_files`: a checkpoint holding ``files`` live adds (with stats, as writers keep
  them), then ``commits`` JSON commits that each add one file and remove one; the commits
  before the checkpoint were cleaned up, as log retention does.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltaguard.localstack.synthetic_table import (
    ADD,
    CHECKPOINT_SCHEMA,
    METADATA,
    PROTOCOL,
    REMOVE,
    STR_MAP,
    TXN,
)

SCHEMA_STRING = json.dumps(
    {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
)
T0 = 1_760_000_000_000


def _metadata() -> dict[str, Any]:
    return {
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, "deltaguard-bench")),
        "name": None,
        "description": None,
        "format": {"provider": "parquet", "options": []},
        "schemaString": SCHEMA_STRING,
        "partitionColumns": [],
        "configuration": [],
        "createdTime": T0,
    }


def _file(i: int) -> str:
    return f"part-{i:08d}-{uuid.UUID(int=i)}.c000.snappy.parquet"


def _stats(i: int) -> str:
    return f'{{"numRecords":100,"minValues":{{"id":{i * 100}}},"maxValues":{{"id":{i * 100 + 99}}},"nullCount":{{"id":0}}}}'


def _add_json(i: int, ts: int) -> dict[str, Any]:
    return {
        "add": {
            "path": _file(i),
            "partitionValues": {},
            "size": 1000 + i % 97,
            "modificationTime": ts,
            "dataChange": True,
            "stats": _stats(i),
        }
    }


def _remove_json(i: int, ts: int) -> dict[str, Any]:
    return {
        "remove": {
            "path": _file(i),
            "deletionTimestamp": ts,
            "dataChange": True,
            "extendedFileMetadata": True,
            "partitionValues": {},
            "size": 1000 + i % 97,
        }
    }


def _write_commit(log: Path, version: int, actions: list[dict[str, Any]]) -> None:
    ts = T0 + version * 1000
    info = {"commitInfo": {"timestamp": ts, "operation": "WRITE", "engineInfo": "deltaguard-bench"}}
    body = b"\n".join(orjson.dumps(a) for a in [info, *actions]) + b"\n"
    (log / f"{version:020d}.json").write_bytes(body)


def write_checkpoint(log: Path, version: int, live: list[int], removed: dict[int, int]) -> None:
    """A classic checkpoint: protocol, metadata, ``live`` adds and ``removed`` tombstones."""
    n_add, n_rem = len(live), len(removed)
    rows = 2 + n_add + n_rem
    ts = T0 + version * 1000

    def column(
        struct: pa.StructType, values: dict[str, pa.Array], offset: int, count: int
    ) -> pa.Array:
        """A struct column with ``count`` valid rows starting at ``offset`` (null elsewhere)."""
        children = []
        for field in struct:
            body = values.get(field.name, pa.nulls(count, field.type))
            pad_before = pa.nulls(offset, field.type)
            pad_after = pa.nulls(rows - offset - count, field.type)
            children.append(pa.concat_arrays([pad_before, body.cast(field.type), pad_after]))
        mask = pa.array([not (offset <= r < offset + count) for r in range(rows)])
        return pa.StructArray.from_arrays(children, fields=list(struct), mask=mask)

    empty_maps = pa.array([[] for _ in range(n_add)], STR_MAP)
    adds = column(
        ADD,
        {
            "path": pa.array([_file(i) for i in live]),
            "partitionValues": empty_maps,
            "size": pa.array([1000 + i % 97 for i in live], pa.int64()),
            "modificationTime": pa.array([ts] * n_add, pa.int64()),
            "dataChange": pa.array([False] * n_add),
            "stats": pa.array([_stats(i) for i in live]),
        },
        2,
        n_add,
    )
    removes = column(
        REMOVE,
        {
            "path": pa.array([_file(i) for i in removed]),
            "deletionTimestamp": pa.array(list(removed.values()), pa.int64()),
            "dataChange": pa.array([False] * n_rem),
            "extendedFileMetadata": pa.array([True] * n_rem),
            "partitionValues": pa.array([[] for _ in range(n_rem)], STR_MAP),
            "size": pa.array([1000 + i % 97 for i in removed], pa.int64()),
        },
        2 + n_add,
        n_rem,
    )
    meta = pa.array([_metadata(), *([None] * (rows - 1))], METADATA)
    proto = pa.array(
        [None, {"minReaderVersion": 1, "minWriterVersion": 2}, *([None] * (rows - 2))], PROTOCOL
    )
    table = pa.Table.from_arrays(
        [pa.nulls(rows, TXN), adds, removes, meta, proto], schema=CHECKPOINT_SCHEMA
    )
    pq.write_table(
        table,
        log / f"{version:020d}.checkpoint.parquet",
        row_group_size=262144,
        write_page_checksum=True,  # as Spark writes its checkpoints
    )
    (log / "_last_checkpoint").write_bytes(
        orjson.dumps({"version": version, "size": rows, "sizeInBytes": 0, "numOfAddFiles": n_add})
    )


def _first_commit(log: Path) -> None:
    meta = {**_metadata(), "format": {"provider": "parquet", "options": {}}, "configuration": {}}
    _write_commit(
        log, 0, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, {"metaData": meta}]
    )


def many_commits(root: Path, commits: int = 10_000, interval: int = 100) -> Path:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    _first_commit(log)
    live: list[int] = []
    removed: dict[int, int] = {}
    for version in range(1, commits):
        ts = T0 + version * 1000
        actions = [_add_json(version, ts)]
        live.append(version)
        if version % 10 == 0:
            gone = live.pop(len(live) // 2)
            removed[gone] = ts
            actions.append(_remove_json(gone, ts))
        _write_commit(log, version, actions)
        if version % interval == 0:
            write_checkpoint(log, version, live, removed)
    return root


def many_files(root: Path, files: int = 1_000_000, commits: int = 1_000) -> Path:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    base = commits - 1  # commits 0..base were cleaned up; the checkpoint covers them
    write_checkpoint(log, base, list(range(files)), {})
    for k in range(commits):
        version = base + 1 + k
        ts = T0 + version * 1000
        _write_commit(log, version, [_add_json(files + k, ts), _remove_json(k * 7, ts)])
    return root


def expected_live_files(kind: str, **size: int) -> int:
    """How many live files :func:`many_commits` / :func:`many_files` leave."""
    if kind == "many_commits":
        commits = size.get("commits", 10_000)
        return (commits - 1) - (commits - 1) // 10
    return size.get("files", 1_000_000)
