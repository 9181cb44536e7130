"""Delta tables written by Python (no Spark): small random histories for property tests and
a 200,000-file table for the orphan benchmark.

:class:`SyntheticTable` writes real Delta log files on local disk (protocol 1/2 JSON commits
created exclusively, classic parquet checkpoints, ``_last_checkpoint``; each published whole, as
Delta's local log store does, so a reader running meanwhile never sees half a file) and data files:
empty ones whose content does not matter to tests of the log alone (``audit --check exists``),
or real Parquet files of the table's schema (:meth:`SyntheticTable.write_parquet`) that readers
and the default audit read. Modification times can be set,
so "old" and "recent" files exist without waiting. It keeps the reconciled state itself, so it
can write checkpoints and tell tests which files each version references.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
SCHEMA_STRING = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
# The checkpoint schema (a superset of what Spark writes for these actions), shared with the
# benchmark's table generator (bench/synth_tables.py).
STR_MAP = pa.map_(pa.string(), pa.string())
DV = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)
ADD = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", STR_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("tags", STR_MAP),
        ("deletionVector", DV),
    ]
)
REMOVE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", STR_MAP),
        ("size", pa.int64()),
        ("deletionVector", DV),
    ]
)
METADATA = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", STR_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", STR_MAP),
        ("createdTime", pa.int64()),
    ]
)
PROTOCOL = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)
#: A protocol with table features for deletion vectors and V2 checkpoints (3/7).
DV_V2_PROTOCOL: dict[str, Any] = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["deletionVectors", "v2Checkpoint"],
    "writerFeatures": ["deletionVectors", "v2Checkpoint"],
}
TXN = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
CHECKPOINT_SCHEMA = pa.schema(
    [("txn", TXN), ("add", ADD), ("remove", REMOVE), ("metaData", METADATA), ("protocol", PROTOCOL)]
)


def z85_uuid(value: uuid.UUID) -> str:
    """Delta's 20-character Z85 form of a UUID (the inverse of the reader's decoder)."""
    out = []
    data = value.bytes
    for i in range(0, 16, 4):
        n = int.from_bytes(data[i : i + 4], "big")
        chunk = []
        for _ in range(5):
            n, r = divmod(n, 85)
            chunk.append(_Z85[r])
        out.append("".join(reversed(chunk)))
    return "".join(out)


def dv_descriptor(dv_uuid: uuid.UUID, prefix: str = "") -> dict[str, Any]:
    """A ``u``-type deletion vector descriptor for ``<prefix>/deletion_vector_<uuid>.bin``."""
    return {
        "storageType": "u",
        "pathOrInlineDv": prefix + z85_uuid(dv_uuid),
        "offset": 1,
        "sizeInBytes": 34,
        "cardinality": 1,
    }


def dv_file_name(dv_uuid: uuid.UUID, prefix: str = "") -> str:
    name = f"deletion_vector_{dv_uuid}.bin"
    return f"{prefix}/{name}" if prefix else name


@dataclass
class SyntheticTable:
    """A Delta table under ``root`` partitioned by ``p``. ``live`` and ``tombstones`` map the
    reconciliation key (path, DV id) to the action dict."""

    root: Path
    configuration: dict[str, str] = field(default_factory=dict)
    protocol: dict[str, Any] = field(
        default_factory=lambda: {"minReaderVersion": 1, "minWriterVersion": 2}
    )
    version: int = -1
    live: dict[tuple[str, str | None], dict[str, Any]] = field(default_factory=dict)
    tombstones: dict[tuple[str, str | None], dict[str, Any]] = field(default_factory=dict)
    last_commit_ms: int = 0

    @property
    def log(self) -> Path:
        return self.root / "_delta_log"

    def _metadata(self) -> dict[str, Any]:
        return {
            "id": "00000000-0000-0000-0000-000000000001",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": SCHEMA_STRING,
            "partitionColumns": ["p"],
            "configuration": self.configuration,
            "createdTime": 0,
        }

    def create(self, timestamp_ms: int) -> int:
        """Version 0: protocol and metadata."""
        return self.commit(
            [{"protocol": self.protocol}, {"metaData": self._metadata()}], timestamp_ms
        )

    def write_file(self, rel: str, mtime_ms: int, size: int = 0) -> str:
        """A data file (``size`` zero bytes) with the given modification time."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as f:
            if size:
                f.truncate(size)
        os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        return rel

    def write_parquet(self, rel: str, mtime_ms: int, ids: list[int]) -> int:
        """A real Parquet data file of the table's schema (``id``; ``p`` is the partition
        column, so not in the file) holding ``ids``, with the given modification time. Returns
        its size, for :meth:`add_action`."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), path)
        os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        return path.stat().st_size

    @staticmethod
    def add_action(
        rel: str, mtime_ms: int, dv: dict[str, Any] | None = None, size: int = 0
    ) -> dict[str, Any]:
        from urllib.parse import quote

        action: dict[str, Any] = {
            "path": quote(rel, safe="/="),
            "partitionValues": {"p": rel.split("/")[0].split("=", 1)[1]}
            if "=" in rel.split("/")[0]
            else {},
            "size": size,
            "modificationTime": mtime_ms,
            "dataChange": True,
        }
        if dv is not None:
            action["deletionVector"] = dv
        return action

    @staticmethod
    def _key(action: dict[str, Any]) -> tuple[str, str | None]:
        dv = action.get("deletionVector")
        dv_id = f"{dv['storageType']}{dv['pathOrInlineDv']}@{dv['offset']}" if dv else None
        from urllib.parse import unquote

        return unquote(action["path"]), dv_id

    def _publish(self, name: str, data: bytes, mtime_ms: int | None, exclusive: bool) -> None:
        """Writes ``_delta_log/name`` as Delta's local log store does: into a hidden temp file,
        then linked (``exclusive``: raises FileExistsError if taken) or renamed into place, so
        a concurrent reader sees the whole file or none of it. ``mtime_ms``: its modification
        time (None: now)."""
        temp = self.log / f".{name}.{uuid.uuid4()}.tmp"
        temp.write_bytes(data)
        if mtime_ms is not None:
            os.utime(temp, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        try:
            if exclusive:
                os.link(temp, self.log / name)
            else:
                os.replace(temp, self.log / name)
        finally:
            temp.unlink(missing_ok=True)

    def commit(self, actions: list[dict[str, Any]], timestamp_ms: int) -> int:
        """Writes the next commit (created exclusively and atomically: raises FileExistsError
        if taken) and applies its add/remove actions to the tracked state."""
        self.log.mkdir(parents=True, exist_ok=True)
        version = self.version + 1
        lines = [{"commitInfo": {"timestamp": timestamp_ms, "operation": "WRITE"}}, *actions]
        data = ("\n".join(json.dumps(a) for a in lines) + "\n").encode()
        self._publish(f"{version:020d}.json", data, timestamp_ms, exclusive=True)
        self.version = version
        self.last_commit_ms = timestamp_ms
        for a in actions:
            if "add" in a:
                key = self._key(a["add"])
                self.tombstones.pop(key, None)
                self.live[key] = a["add"]
            elif "remove" in a:
                key = self._key(a["remove"])
                self.live.pop(key, None)
                self.tombstones[key] = a["remove"]
        return version

    def remove_action(self, key: tuple[str, str | None], deletion_ms: int) -> dict[str, Any]:
        add = self.live[key]
        out = {
            "path": add["path"],
            "deletionTimestamp": deletion_ms,
            "dataChange": True,
            "size": add["size"],
            "partitionValues": add["partitionValues"],
        }
        if "deletionVector" in add:
            out["deletionVector"] = add["deletionVector"]
        return out

    def checkpoint(self) -> None:
        """A classic checkpoint of the current version (modified at that version's commit
        time, as if written right after it), and ``_last_checkpoint``."""
        rows: list[dict[str, Any]] = [
            {"protocol": self.protocol},
            {"metaData": {**self._metadata(), "configuration": list(self.configuration.items())}},
        ]
        for add in self.live.values():
            rows.append({"add": {**add, "partitionValues": list(add["partitionValues"].items())}})
        for rm in self.tombstones.values():
            rows.append({"remove": {**rm, "partitionValues": list(rm["partitionValues"].items())}})
        table = pa.Table.from_pylist(rows, schema=CHECKPOINT_SCHEMA)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, write_page_checksum=True)  # as parquet-mr writes them
        name = f"{self.version:020d}.checkpoint.parquet"
        self._publish(name, sink.getvalue().to_pybytes(), self.last_commit_ms, exclusive=False)
        last = json.dumps({"version": self.version, "size": len(rows)}).encode()
        self._publish("_last_checkpoint", last, None, exclusive=False)

    def v2_checkpoint(self, sidecars: int = 1) -> str:
        """A V2 checkpoint of the current version: ``<v>.checkpoint.<uuid>.json`` (protocol,
        metadata, ``checkpointMetadata``) whose adds and removes are in ``sidecars`` parquet
        files under ``_delta_log/_sidecars/``, and ``_last_checkpoint`` at its version. The table's
        protocol must have the ``v2Checkpoint`` feature for Delta readers to accept it.
        Returns the checkpoint's name."""
        side_dir = self.log / "_sidecars"
        side_dir.mkdir(exist_ok=True)
        rows = [
            {"add": {**a, "partitionValues": list(a["partitionValues"].items())}}
            for a in self.live.values()
        ] + [
            {"remove": {**r, "partitionValues": list(r["partitionValues"].items())}}
            for r in self.tombstones.values()
        ]
        schema = pa.schema([("add", ADD), ("remove", REMOVE)])
        lines: list[dict[str, Any]] = [
            {"checkpointMetadata": {"version": self.version}},
            {"protocol": self.protocol},
            {"metaData": self._metadata()},
        ]
        for i in range(sidecars):
            part = rows[i::sidecars]
            name = f"{uuid.uuid4()}.parquet"
            pq.write_table(
                pa.Table.from_pylist(part, schema=schema), side_dir / name, write_page_checksum=True
            )
            stamp = self.last_commit_ms * 1_000_000
            os.utime(side_dir / name, ns=(stamp, stamp))
            size = (side_dir / name).stat().st_size
            lines.append(
                {
                    "sidecar": {
                        "path": name,
                        "sizeInBytes": size,
                        "modificationTime": self.last_commit_ms,
                    }
                }
            )
        checkpoint = f"{self.version:020d}.checkpoint.{uuid.uuid4()}.json"
        data = ("\n".join(json.dumps(line) for line in lines) + "\n").encode()
        self._publish(checkpoint, data, self.last_commit_ms, exclusive=True)
        last = {"version": self.version, "size": len(lines)}
        self._publish("_last_checkpoint", json.dumps(last).encode(), None, exclusive=False)
        return checkpoint

    def drop_commits_before(self, version: int) -> list[int]:
        """Delta's log cleanup: deletes commit files older than ``version`` (which must have a
        checkpoint for the table to stay readable). Returns the versions dropped."""
        dropped = []
        for v in range(version):
            p = self.log / f"{v:020d}.json"
            if p.exists():
                p.unlink()
                dropped.append(v)
        return dropped


def build_wide_table(
    root: Path, files: int, partitions: int, mtime_ms: int, orphans: int
) -> SyntheticTable:
    """The benchmark table: ``files`` live empty data files in ``partitions`` partitions,
    committed in one commit and checkpointed, plus ``orphans`` uncommitted files spread over
    the same partitions. All files get ``mtime_ms``."""
    table = SyntheticTable(root)
    table.create(mtime_ms)
    adds = []
    for i in range(files):
        rel = f"p={i % partitions}/part-{i:06d}-{uuid.UUID(int=i)}.c000.snappy.parquet"
        table.write_file(rel, mtime_ms)
        adds.append({"add": SyntheticTable.add_action(rel, mtime_ms)})
    table.commit(adds, mtime_ms)
    table.checkpoint()
    for i in range(orphans):
        table.write_file(
            f"p={i % partitions}/part-{i:06d}-{uuid.uuid4()}.c000.snappy.parquet", mtime_ms
        )
    return table
