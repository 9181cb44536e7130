"""Checkpoint rows and parquet files, with pyarrow: a classic (V1 spec) checkpoint, and the
sidecars and parquet top-level file of a V2 checkpoint (:mod:`.v2`).

One row per action, each action in its own struct column (PROTOCOL.md "Checkpoints",
"Checkpoint Schema"); every column is present in every file (a missing action is a null
struct), the layout Delta Spark writes, so readers that project columns by name (Spark,
delta-rs, Kernel) find each one. ``protocol.readerFeatures`` / ``writerFeatures`` are in the
schema always (non-null for reader version 3 / writer version 7, as the protocol requires).

What is written, following Delta Spark's ``InMemoryLogReplay`` and ``Checkpoints``:

* ``add``: every live file, each field the log gave it (stats as the JSON string, tags,
  deletion vector, ``baseRowId`` / ``defaultRowCommitVersion``, ``clusteringProvider``), raw
  URL-encoded path, ``dataChange`` false. No ``stats_parsed`` / ``partitionValues_parsed``:
  those are for ``delta.checkpoint.writeStatsAsStruct``, refused by the caller.
  ``delta.checkpoint.writeStatsAsJson`` false drops ``stats``.
* ``remove``: the tombstones not yet expired (``deletionTimestamp`` newer than the table's
  ``delta.deletedFileRetentionDuration`` before now; one without a timestamp is kept), without
  ``stats`` and ``tags`` (the protocol: tombstones serve VACUUM only), ``dataChange`` false.
* ``metaData``, ``protocol``, every ``txn``, every ``domainMetadata`` not removed.

Fields the log carries beyond this schema (a future field) are not written: the caller refuses
tables whose features it does not know.

A V2 checkpoint (PROTOCOL.md "V2 Spec") splits the same rows: the file actions (``add``,
``remove``) go to sidecars (:data:`SIDECAR_SCHEMA`: those two columns, as Delta Spark writes
them), the rest to the top-level file with its ``checkpointMetadata`` and one ``sidecar`` row per
sidecar (:data:`V2_SCHEMA`, Delta Spark's column order for a parquet top-level file).
:func:`spark_schema` gives a schema as the Spark ``StructType`` JSON that Delta writes into
``_last_checkpoint``'s ``checkpointSchema`` and the ``sidecarFileSchema`` tag.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

_STR_MAP = pa.map_(pa.string(), pa.string())
_DV = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)
ADD = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", _STR_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("tags", _STR_MAP),
        ("deletionVector", _DV),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
        ("clusteringProvider", pa.string()),
        ("stats", pa.string()),
    ]
)
REMOVE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", _STR_MAP),
        ("size", pa.int64()),
        ("deletionVector", _DV),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)
METADATA = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", _STR_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", _STR_MAP),
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
TXN = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
DOMAIN = pa.struct(
    [("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())]
)
CHECKPOINT_METADATA = pa.struct([("version", pa.int64()), ("tags", _STR_MAP)])
SIDECAR = pa.struct(
    [
        ("path", pa.string()),
        ("sizeInBytes", pa.int64()),
        ("modificationTime", pa.int64()),
        ("tags", _STR_MAP),
    ]
)
#: The classic checkpoint's columns, in Delta Spark's order.
SCHEMA = pa.schema(
    [
        ("txn", TXN),
        ("add", ADD),
        ("remove", REMOVE),
        ("metaData", METADATA),
        ("protocol", PROTOCOL),
        ("domainMetadata", DOMAIN),
    ]
)
#: A V2 checkpoint's sidecar files: the file actions only.
SIDECAR_SCHEMA = pa.schema([("add", ADD), ("remove", REMOVE)])
#: A V2 checkpoint's parquet top-level file (Delta Spark's ``createCheckpointV2ParquetFile``).
V2_SCHEMA = pa.schema(
    [
        *SCHEMA,
        ("checkpointMetadata", CHECKPOINT_METADATA),
        ("sidecar", SIDECAR),
    ]
)


def _fit(body: dict[str, Any], typ: pa.StructType) -> dict[str, Any]:
    """``body`` with the fields of ``typ`` only; a map given as an object becomes pairs."""
    out: dict[str, Any] = {}
    for f in typ:
        value = body.get(f.name)
        if value is None:
            continue
        if pa.types.is_map(f.type):
            value = list(value.items())
        elif pa.types.is_struct(f.type):
            value = _fit(value, f.type)
        out[f.name] = value
    return out


def non_file_rows(
    protocol: dict[str, Any],
    metadata: dict[str, Any],
    txns: Iterable[dict[str, Any]],
    domains: Iterable[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The rows of the non-file actions, each ``{name: body}`` fitted to its column: protocol,
    metaData, txns, domain metadata (Delta Spark's ``nonFileActions`` order)."""
    rows: list[dict[str, Any]] = [
        {"protocol": _fit(protocol, PROTOCOL)},
        {"metaData": _fit(metadata, METADATA)},
    ]
    rows += [{"txn": _fit(t, TXN)} for t in txns]
    rows += [{"domainMetadata": _fit(d, DOMAIN)} for d in domains]
    return rows


def file_rows(
    adds: Iterable[dict[str, Any]], removes: Iterable[dict[str, Any]], *, stats: bool = True
) -> list[dict[str, Any]]:
    """The rows of the file actions: adds, then removes (see the module docstring for what is
    changed)."""
    rows: list[dict[str, Any]] = []
    for add in adds:
        fitted = _fit({**add, "dataChange": False}, ADD)
        if not stats:
            fitted.pop("stats", None)
        rows.append({"add": fitted})
    for remove in removes:
        rows.append({"remove": _fit({**remove, "dataChange": False}, REMOVE)})
    return rows


def checkpoint_rows(
    adds: Iterable[dict[str, Any]],
    removes: Iterable[dict[str, Any]],
    protocol: dict[str, Any],
    metadata: dict[str, Any],
    txns: Iterable[dict[str, Any]],
    domains: Iterable[dict[str, Any]],
    *,
    stats: bool = True,
) -> pa.Table:
    """The checkpoint's rows: protocol, metaData, txns, domain metadata, adds, removes (the
    bodies raw, as the log has them; see the module docstring for what is changed)."""
    rows = non_file_rows(protocol, metadata, txns, domains)
    rows += file_rows(adds, removes, stats=stats)
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def v2_rows(
    checkpoint_metadata: dict[str, Any],
    sidecars: Iterable[dict[str, Any]],
    non_file: Iterable[dict[str, Any]],
) -> list[dict[str, Any]]:
    """A V2 top-level file's rows, in Delta Spark's order: the ``checkpointMetadata``, one
    ``sidecar`` per sidecar file, then the non-file rows (:func:`non_file_rows`)."""
    rows: list[dict[str, Any]] = [
        {"checkpointMetadata": _fit(checkpoint_metadata, CHECKPOINT_METADATA)}
    ]
    rows += [{"sidecar": _fit(s, SIDECAR)} for s in sidecars]
    rows += list(non_file)
    return rows


def _spark_type(typ: pa.DataType) -> Any:
    """One pyarrow type of these schemas as Spark's JSON data type (every field nullable, as
    Delta Spark writes checkpoint schemas: ``asNullable``)."""
    if pa.types.is_struct(typ):
        return {
            "type": "struct",
            "fields": [
                {"name": f.name, "type": _spark_type(f.type), "nullable": True, "metadata": {}}
                for f in typ
            ],
        }
    if pa.types.is_map(typ):
        return {
            "type": "map",
            "keyType": _spark_type(typ.key_type),
            "valueType": _spark_type(typ.item_type),
            "valueContainsNull": True,
        }
    if pa.types.is_list(typ):
        return {"type": "array", "elementType": _spark_type(typ.value_type), "containsNull": True}
    names = {
        pa.string(): "string",
        pa.int64(): "long",
        pa.int32(): "integer",
        pa.bool_(): "boolean",
    }
    return names[typ]


def spark_schema(schema: pa.Schema) -> dict[str, Any]:
    """``schema`` as Spark's ``StructType`` JSON (``{"type": "struct", "fields": [...]}``)."""
    return dict(_spark_type(pa.struct(list(schema))))


def parquet_bytes(table: pa.Table) -> bytes:
    """The table as one parquet file (snappy, page CRCs written: the audit verifies them)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy", write_page_checksum=True)
    return bytes(sink.getvalue().to_pybytes())
