"""The V2 checkpoint of a snapshot (PROTOCOL.md "V2 Spec", "UUID-named checkpoint"), built in
memory as Delta Spark's ``Checkpoints.writeCheckpoint`` writes it when ``v2Checkpoint`` is on
and ``delta.checkpointPolicy = v2`` (:func:`.build.uses_v2_checkpoints`):

1. :func:`v2_sidecars`: the file actions (the live ``add`` and unexpired ``remove`` actions of
   :mod:`.build`, the same rows a classic checkpoint holds) in sidecar parquet files of
   ``add`` and ``remove`` columns, at most :data:`SIDECAR_ROWS` rows each (Delta's part size
   for V2 checkpoints) and at least one (Delta writes one for an empty table too), named
   ``N.checkpoint.P.K.<uuid>.parquet`` for ``_delta_log/_sidecars/``, as Delta names them.
2. :func:`v2_top_level`: once the sidecars are stored (the top-level file names each one's
   size and modification time, known only then), the top-level file
   ``N.checkpoint.<uuid>.json`` (Delta Spark's default) or ``.parquet``: one
   ``checkpointMetadata`` (``version``; tags ``sidecarNumActions``, ``sidecarSizeInBytes``,
   ``numOfAddFiles``, ``sidecarFileSchema``), one ``sidecar`` action per sidecar (``path``
   the file name, ``sizeInBytes``, ``modificationTime``), then the non-file actions
   (protocol, metaData, every txn, every domain metadata not removed). No file action is in
   the top-level file: all are in the sidecars, as the protocol requires (all or none).
3. :func:`v2_last_checkpoint`: ``_last_checkpoint`` for it: ``size`` (every action of the
   sidecars and the top-level file), ``sizeInBytes`` (all of their bytes), ``numOfAddFiles``,
   ``checkpointSchema`` (a parquet top-level file's schema; none for JSON, as Delta), and
   ``v2Checkpoint`` (the top-level file's ``path``, ``sizeInBytes``, ``modificationTime``, its
   ``nonFileActions`` with the ``checkpointMetadata`` last and its ``sidecarFiles``, each list
   left out when longer than :data:`HINT_MAX_ACTIONS`, as Delta trims it).

Nothing here writes: :mod:`.v2_write` stores the files, create-exclusive.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from deltaguard.tools.checkpoint.build import (
    check_checkpointable,
    stats_as_json,
    unexpired_tombstones,
    uses_v2_checkpoints,
)
from deltaguard.tools.checkpoint.last_checkpoint import last_checkpoint_json
from deltaguard.tools.checkpoint.parquet import (
    SIDECAR_SCHEMA,
    V2_SCHEMA,
    file_rows,
    non_file_rows,
    parquet_bytes,
    spark_schema,
    v2_rows,
)
from deltaguard.tools.checkpoint.state import raw_state
from deltaguard.tools.deltalog.errors import UnsupportedTableError
from deltaguard.tools.deltalog.names import TopLevelFormat
from deltaguard.tools.deltalog.snapshot import Snapshot

#: Rows per sidecar at most (Delta's ``checkpointPartSize`` default for V2 checkpoints).
SIDECAR_ROWS = 50_000
#: A schema whose JSON is longer is left out of ``_last_checkpoint`` and the tags (Delta's
#: ``checkpointSchemaWriteThresholdLength`` default).
SCHEMA_MAX_CHARS = 20_000
#: ``_last_checkpoint``'s ``v2Checkpoint`` leaves out a longer list of non-file actions or
#: sidecars (Delta's ``lastCheckpointNonFileActionsThreshold`` / ``SidecarsThreshold``).
HINT_MAX_ACTIONS = 30


@dataclass(frozen=True)
class SidecarFile:
    """One sidecar built in memory: its file name (in ``_delta_log/_sidecars/``), bytes and
    rows."""

    name: str
    body: bytes
    actions: int


@dataclass(frozen=True)
class StoredFile:
    """A file as stored: its name, size and modification time (epoch ms)."""

    name: str
    size: int
    mtime_ms: int


@dataclass(frozen=True)
class V2Sidecars:
    """Step 1: the sidecars of ``version`` and what the top-level file needs (the raw non-file
    actions, as ``{name: body}``, in Delta's order)."""

    version: int
    sidecars: list[SidecarFile]
    non_file: list[dict[str, Any]]
    add_files: int
    tombstones: int

    @property
    def file_actions(self) -> int:
        return sum(s.actions for s in self.sidecars)


@dataclass(frozen=True)
class V2TopLevel:
    """Step 2: the top-level file built in memory: its name, bytes, rows, the
    ``checkpointMetadata`` body, the stored sidecars it names and (parquet only) its schema as
    Spark JSON."""

    name: str
    body: bytes
    actions: int
    checkpoint_metadata: dict[str, Any]
    sidecars: list[StoredFile]
    schema: dict[str, Any] | None


def _schema_json(schema: pa.Schema) -> dict[str, Any] | None:
    """``schema`` as Spark JSON, or None when Delta would leave it out (too long)."""
    value = spark_schema(schema)
    return value if len(orjson.dumps(value)) <= SCHEMA_MAX_CHARS else None


def sidecar_name(version: int, part: int, parts: int) -> str:
    """A new sidecar's file name (Delta's ``newV2CheckpointSidecarFile``)."""
    return f"{version:020d}.checkpoint.{part:010d}.{parts:010d}.{uuid.uuid4()}.parquet"


def top_level_name(version: int, fmt: TopLevelFormat) -> str:
    """A new UUID-named top-level file's name (Delta's ``newV2Checkpoint*File``)."""
    return f"{version:020d}.checkpoint.{uuid.uuid4()}.{fmt.value}"


def v2_sidecars(snap: Snapshot, now_ms: int) -> V2Sidecars:
    """Step 1 (module docstring) for ``snap`` (tombstones expire at ``now_ms``). Raises
    :class:`UnsupportedTableError` for a table refused by :func:`.build.check_checkpointable`
    or that takes classic checkpoints, and the replay's errors; writes nothing."""
    check_checkpointable(snap, v2=True)
    if not uses_v2_checkpoints(snap):
        raise UnsupportedTableError(
            f"{snap.store.uri} takes classic checkpoints (no v2Checkpoint feature with "
            "delta.checkpointPolicy=v2): no V2 checkpoint written"
        )
    state = raw_state(snap)
    assert state.protocol is not None and state.metadata is not None  # checked by raw_state
    adds = state.adds()
    removes = unexpired_tombstones(snap, state, now_ms)
    rows = file_rows(adds, removes, stats=stats_as_json(snap))
    parts = max(1, math.ceil(len(rows) / SIDECAR_ROWS))
    size = math.ceil(len(rows) / parts) if rows else 0
    sidecars = []
    for part in range(parts):
        chunk = rows[part * size : (part + 1) * size]
        table = pa.Table.from_pylist(chunk, schema=SIDECAR_SCHEMA)
        sidecars.append(
            SidecarFile(
                sidecar_name(snap.version, part + 1, parts), parquet_bytes(table), len(chunk)
            )
        )
    non_file = [
        {"protocol": state.protocol},
        {"metaData": state.metadata},
        *({"txn": t} for t in state.txns.values()),
        *({"domainMetadata": d} for d in state.domains.values()),
    ]
    return V2Sidecars(snap.version, sidecars, non_file, len(adds), len(removes))


def _fitted_non_file(non_file: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The raw non-file actions as parquet rows."""
    body = {name: [a[name] for a in non_file if name in a] for name in ("txn", "domainMetadata")}
    protocol = next(a["protocol"] for a in non_file if "protocol" in a)
    metadata = next(a["metaData"] for a in non_file if "metaData" in a)
    return non_file_rows(protocol, metadata, body["txn"], body["domainMetadata"])


def v2_top_level(
    parts: V2Sidecars, stored: list[StoredFile], fmt: TopLevelFormat = TopLevelFormat.JSON
) -> V2TopLevel:
    """Step 2 (module docstring): the top-level file naming the ``stored`` sidecars (in
    ``parts.sidecars``' order)."""
    tags = {
        "sidecarNumActions": str(parts.file_actions),
        "sidecarSizeInBytes": str(sum(s.size for s in stored)),
        "numOfAddFiles": str(parts.add_files),
    }
    sidecar_schema = _schema_json(SIDECAR_SCHEMA)
    if sidecar_schema is not None:
        tags["sidecarFileSchema"] = orjson.dumps(sidecar_schema).decode()
    metadata = {"version": parts.version, "tags": tags}
    sidecars = [
        {"path": s.name, "sizeInBytes": s.size, "modificationTime": s.mtime_ms} for s in stored
    ]
    name = top_level_name(parts.version, fmt)
    if fmt is TopLevelFormat.JSON:
        lines = [
            {"checkpointMetadata": metadata},
            *({"sidecar": s} for s in sidecars),
            *parts.non_file,
        ]
        body = b"".join(orjson.dumps(line) + b"\n" for line in lines)
        return V2TopLevel(name, body, len(lines), metadata, stored, None)
    rows = v2_rows(metadata, sidecars, _fitted_non_file(parts.non_file))
    table = pa.Table.from_pylist(rows, schema=V2_SCHEMA)
    return V2TopLevel(
        name, parquet_bytes(table), len(rows), metadata, stored, _schema_json(V2_SCHEMA)
    )


def v2_last_checkpoint(parts: V2Sidecars, top: V2TopLevel, top_stored: StoredFile) -> bytes:
    """Step 3 (module docstring): ``_last_checkpoint``'s content for ``top`` as stored."""
    non_file = [*parts.non_file, {"checkpointMetadata": top.checkpoint_metadata}]
    sidecars = [
        {"path": s.name, "sizeInBytes": s.size, "modificationTime": s.mtime_ms}
        for s in top.sidecars
    ]
    v2: dict[str, Any] = {
        "path": top_stored.name,
        "sizeInBytes": top_stored.size,
        "modificationTime": top_stored.mtime_ms,
    }
    if len(non_file) <= HINT_MAX_ACTIONS:
        v2["nonFileActions"] = non_file
    if len(sidecars) <= HINT_MAX_ACTIONS:
        v2["sidecarFiles"] = sidecars
    return last_checkpoint_json(
        parts.version,
        parts.file_actions + top.actions,
        sum(s.size for s in top.sidecars) + top_stored.size,
        parts.add_files,
        checkpoint_schema=top.schema,
        v2_checkpoint=v2,
    )
