"""The ``add`` actions of chosen live files exactly as the log holds them.

A repair's ``remove`` must name a file the way its ``add`` did: the raw, URL-encoded ``path``
(readers reconcile by it: Spark canonicalizes both sides, delta-kernel and delta-rs compare the
strings) and every field Delta carries from an ``add`` to its ``remove``
(``AddFile.removeWithTimestamp``: partition values, size, tags, deletion vector, base row id,
default row commit version, stats). The replay keeps only decoded columns, so this module reads
the snapshot's own segment again (its checkpoint parts and sidecars, then its JSON commits in
order, the newest action of a key winning) and keeps the raw objects of the wanted keys only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltaguard.tools.deltalog import filetable
from deltaguard.tools.deltalog.actions import Sidecar, decode_path, parse_deletion_vector
from deltaguard.tools.deltalog.checkpoint import LOG_DIR, sidecar_rel_path
from deltaguard.tools.deltalog.errors import CorruptLogError
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.deltalog.snapshot import Snapshot
from deltaguard.tools.storage import TableStore


def _key(store: TableStore, add: Mapping[str, Any]) -> str:
    path = decode_path(str(add["path"]))
    path = relative_to_root(path, store) or path
    dv = parse_deletion_vector(add.get("deletionVector"))
    return filetable.key_string(path, dv.unique_id if dv is not None else None)


def _plain(value: Any) -> Any:
    """A pyarrow row as JSON: maps (lists of pairs) become objects, null values kept in maps
    (a null partition value is a value) and dropped from structs (an unset field)."""
    if isinstance(value, list) and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    return value


def _json_adds(data: bytes) -> Iterator[tuple[str, Any]]:
    """(action name, body) of every ``add``, ``remove`` and ``sidecar`` line."""
    for line in data.split(b"\n"):
        if not any(name in line for name in (b'"add"', b'"remove"', b'"sidecar"')):
            continue
        obj = orjson.loads(line)
        for name in ("add", "remove", "sidecar"):
            if isinstance(obj, dict) and isinstance(obj.get(name), dict):
                yield name, obj[name]


def _parquet_adds(store: TableStore, rel: str, wanted_paths: set[str]) -> Iterator[tuple[str, Any]]:
    """(``add`` or ``sidecar``, body) of the rows of a checkpoint part or sidecar whose decoded
    path is wanted (sidecars: all)."""
    pf = pq.ParquetFile(pa.BufferReader(store.read(rel)))
    columns = [c for c in ("add", "sidecar") if c in pf.schema_arrow.names]
    for batch in pf.iter_batches(columns=columns):
        if "sidecar" in batch.schema.names:
            column = batch.column("sidecar")
            for row in column.filter(column.is_valid()).to_pylist():
                yield "sidecar", row
        if "add" not in batch.schema.names:
            continue
        column = batch.column("add")
        column = column.filter(column.is_valid())
        paths = column.field("path").to_pylist()
        for i, raw in enumerate(paths):
            if raw is None:
                continue
            decoded = decode_path(raw)
            if decoded in wanted_paths or (relative_to_root(decoded, store) in wanted_paths):
                yield "add", _plain(column[i].as_py())


def raw_adds(snap: Snapshot, keys: set[str], paths: set[str]) -> dict[str, dict[str, Any]]:
    """The raw ``add`` object of each live key in ``keys`` (their decoded paths: ``paths``), by
    key, from the snapshot's segment. Raises :class:`CorruptLogError` if one is not found (the
    segment changed under the replay) and the store's errors."""
    store = snap.store
    found: dict[str, dict[str, Any]] = {}
    segment = snap.segment
    if segment.checkpoint is not None:
        sidecars: list[str] = []
        for name in segment.checkpoint.files:
            rel = f"{LOG_DIR}/{name}"
            items = (
                _json_adds(store.read(rel))
                if name.endswith(".json")
                else _parquet_adds(store, rel, paths)
            )
            for kind, body in items:
                if kind == "sidecar":
                    sidecars.append(sidecar_rel_path(Sidecar(str(body["path"]), None, None)))
                elif kind == "add" and (key := _key(store, body)) in keys:
                    found[key] = body
        for rel in sidecars:
            for kind, body in _parquet_adds(store, rel, paths):
                if kind == "add" and (key := _key(store, body)) in keys:
                    found[key] = body
    for piece in segment.pieces:
        for kind, body in _json_adds(store.read(f"{LOG_DIR}/{piece.name}")):
            if kind == "sidecar":
                continue
            key = _key(store, body)
            if key in keys:
                if kind == "add":
                    found[key] = body
                else:
                    found.pop(key, None)
    missing = keys - set(found)
    if missing:
        raise CorruptLogError(
            f"{store.uri}: the add action of {sorted(missing)[0]} is not in the snapshot's log "
            "segment any more (the log changed while it was read); run repair again"
        )
    return found
