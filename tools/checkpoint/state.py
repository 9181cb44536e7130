"""The raw actions a checkpoint of a snapshot must hold, exactly as the log holds them.

The replay (:func:`deltaguard.tools.deltalog.snapshot.load_snapshot`) keeps decoded columns
only (no stats, tags, row-tracking fields, raw paths). A checkpoint must carry every field of
each action, so this module reads the snapshot's own log segment again, whole: its checkpoint
parts and sidecars, then its JSON commits in order. Reconciliation is the protocol's ("Action
Reconciliation", the replay's key: decoded path relative to the root, plus the deletion vector's
unique id; the newest action of a key wins; ``txn`` per appId, ``domainMetadata`` per domain,
``removed`` dropping it; the newest ``protocol`` and ``metaData``).

The replay stays the one authority: :func:`raw_state` checks that its live keys, protocol and
metaData are the snapshot's, and raises :class:`CorruptLogError` otherwise (the log changed
while it was read, or a bug): a checkpoint is never written from a state the replay disagrees
with.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltaguard.tools.deltalog import filetable
from deltaguard.tools.deltalog.actions import (
    Metadata,
    Protocol,
    Sidecar,
    decode_path,
    parse_action,
    parse_deletion_vector,
)
from deltaguard.tools.deltalog.checkpoint import LOG_DIR, sidecar_rel_path
from deltaguard.tools.deltalog.errors import CorruptLogError
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.deltalog.snapshot import Snapshot
from deltaguard.tools.storage import TableStore

#: The actions a checkpoint carries over from the log (never commitInfo, cdc, or a V2
#: checkpoint's own checkpointMetadata and sidecar rows).
_KEPT = ("add", "remove", "metaData", "protocol", "txn", "domainMetadata")


@dataclass
class RawState:
    """The reconciled raw actions: ``files`` by replay key (an ``add`` or a ``remove``, each
    as ``{"add": {...}}`` / ``{"remove": {...}}``), the newest ``protocol`` and ``metaData``
    bodies, ``txn`` bodies by appId and live ``domainMetadata`` bodies by domain."""

    files: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    protocol: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    txns: dict[str, dict[str, Any]] = field(default_factory=dict)
    domains: dict[str, dict[str, Any]] = field(default_factory=dict)

    def apply(self, store: TableStore, name: str, body: dict[str, Any]) -> None:
        """Applies one action (newest wins)."""
        if name in ("add", "remove"):
            self.files[file_key(store, body)] = (name, body)
        elif name == "protocol":
            self.protocol = body
        elif name == "metaData":
            self.metadata = body
        elif name == "txn":
            self.txns[str(body["appId"])] = body
        elif name == "domainMetadata":
            if body.get("removed"):
                self.domains.pop(str(body["domain"]), None)
            else:
                self.domains[str(body["domain"])] = body

    def adds(self) -> list[dict[str, Any]]:
        return [body for kind, body in self.files.values() if kind == "add"]

    def removes(self) -> list[dict[str, Any]]:
        return [body for kind, body in self.files.values() if kind == "remove"]


def file_key(store: TableStore, body: Mapping[str, Any]) -> str:
    """The replay's reconciliation key of a raw ``add`` or ``remove`` (:func:`filetable.
    key_string` of the decoded path, relative to the root when it lies inside, and the deletion
    vector's unique id)."""
    path = decode_path(str(body["path"]))
    path = relative_to_root(path, store) or path
    dv = parse_deletion_vector(body.get("deletionVector"))
    return filetable.key_string(path, dv.unique_id if dv is not None else None)


def from_arrow(value: Any, typ: pa.DataType) -> Any:
    """A value of a pyarrow row (``to_pylist``) of type ``typ`` as the log's JSON: a map (a
    list of pairs, empty or not) becomes an object keeping null values (a null partition value
    is a value), a struct drops its null fields (an unset field)."""
    if value is None:
        return None
    if pa.types.is_map(typ):
        return {k: from_arrow(v, typ.item_type) for k, v in value}
    if pa.types.is_struct(typ):
        return {
            f.name: from_arrow(value[f.name], f.type) for f in typ if value.get(f.name) is not None
        }
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return [from_arrow(v, typ.value_type) for v in value]
    return value


def _parquet_actions(store: TableStore, rel: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(action name, body) of every row of a checkpoint part or sidecar, sidecar rows
    included."""
    try:
        pf = pq.ParquetFile(pa.BufferReader(store.read(rel)))
        names = [n for n in (*_KEPT, "sidecar") if n in pf.schema_arrow.names]
        for batch in pf.iter_batches(columns=names):
            for name in names:
                column = batch.column(name)
                for row in column.filter(column.is_valid()).to_pylist():
                    yield name, from_arrow(row, column.type)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptLogError(f"{store.location(rel)}: unreadable parquet ({exc})", rel) from None


def _json_actions(store: TableStore, rel: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(action name, body) of every kept action (and sidecar) of a JSON commit or checkpoint."""
    for number, line in enumerate(store.read(rel).split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise CorruptLogError(f"{store.location(rel)}:{number}: {exc}", rel, number) from None
        if not isinstance(obj, dict):
            continue
        for name in (*_KEPT, "sidecar"):
            if isinstance(obj.get(name), dict):
                yield name, obj[name]


def raw_state(snap: Snapshot) -> RawState:
    """The raw actions of ``snap``'s segment, reconciled, checked against the snapshot (see the
    module docstring). Raises :class:`CorruptLogError` and the store's errors."""
    store = snap.store
    state = RawState()
    segment = snap.segment
    if segment.checkpoint is not None:
        sidecars: list[str] = []
        for name in segment.checkpoint.files:
            rel = f"{LOG_DIR}/{name}"
            reader = _json_actions if name.endswith(".json") else _parquet_actions
            for kind, body in reader(store, rel):
                if kind == "sidecar":
                    sidecars.append(sidecar_rel_path(Sidecar(str(body["path"]), None, None)))
                else:
                    state.apply(store, kind, body)
        for rel in sidecars:
            for kind, body in _parquet_actions(store, rel):
                if kind in ("add", "remove"):
                    state.apply(store, kind, body)
    for piece in segment.pieces:
        for kind, body in _json_actions(store, f"{LOG_DIR}/{piece.name}"):
            if kind != "sidecar":
                state.apply(store, kind, body)
    _check_agrees(snap, state)
    return state


def _check_agrees(snap: Snapshot, state: RawState) -> None:
    where = snap.store.uri
    live = {k for k, (kind, _) in state.files.items() if kind == "add"}
    replayed = set(filetable.keys(snap.adds.table).to_pylist())
    if live != replayed:
        raise CorruptLogError(
            f"{where}: the log's add actions at version {snap.version} disagree with its replay "
            f"({len(live ^ replayed)} file(s) differ): the log changed while it was read; run "
            "the command again"
        )
    protocol = parse_action({"protocol": state.protocol}) if state.protocol else None
    metadata = parse_action({"metaData": state.metadata}) if state.metadata else None
    if not isinstance(protocol, Protocol) or protocol != snap.protocol:
        raise CorruptLogError(f"{where}: the protocol at version {snap.version} changed while read")
    if not isinstance(metadata, Metadata) or metadata != snap.metadata:
        raise CorruptLogError(f"{where}: the metaData at version {snap.version} changed while read")
