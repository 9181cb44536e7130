"""A classic (V1 spec) checkpoint as one parquet file, with pyarrow.

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
    rows: list[dict[str, Any]] = [
        {"protocol": _fit(protocol, PROTOCOL)},
        {"metaData": _fit(metadata, METADATA)},
    ]
    rows += [{"txn": _fit(t, TXN)} for t in txns]
    rows += [{"domainMetadata": _fit(d, DOMAIN)} for d in domains]
    for add in adds:
        fitted = _fit({**add, "dataChange": False}, ADD)
        if not stats:
            fitted.pop("stats", None)
        rows.append({"add": fitted})
    for remove in removes:
        rows.append({"remove": _fit({**remove, "dataChange": False}, REMOVE)})
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def parquet_bytes(table: pa.Table) -> bytes:
    """The table as one parquet file (snappy, page CRCs written: the audit verifies them)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy", write_page_checksum=True)
    return bytes(sink.getvalue().to_pybytes())
