"""Reading checkpoints (classic, multi-part, V2 with sidecars) with pyarrow, columns pruned.

A checkpoint's file actions come back columnar (:mod:`~deltaguard.tools.deltalog.filetable`);
stats, tags and anything else a replay does not need are never read. The few non-file actions
(protocol, metadata, txn, domain metadata, sidecar, checkpoint metadata) come back typed.
Any damage (truncated or garbage parquet, bad JSON, a missing part or sidecar) raises
:class:`CorruptLogError` naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltaguard.tools.deltalog import filetable
from deltaguard.tools.deltalog.actions import (
    Action,
    ActionError,
    AddFile,
    CheckpointMetadata,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Sidecar,
    Txn,
    parse_action,
    parse_json_actions,
)
from deltaguard.tools.deltalog.errors import CorruptLogError
from deltaguard.tools.deltalog.names import SIDECARS_DIR, LogFileKind, LogFileName
from deltaguard.tools.storage import TableStore
from deltaguard.tools.storage.errors import StorageError

LOG_DIR = "_delta_log"
_SMALL_ACTIONS = ("metaData", "protocol", "txn", "domainMetadata", "checkpointMetadata", "sidecar")


@dataclass(frozen=True)
class CheckpointRef:
    """One checkpoint in the listing: its version, kind and files (names in ``_delta_log``;
    several for a multi-part checkpoint)."""

    version: int
    kind: LogFileKind
    files: tuple[str, ...]


@dataclass
class CheckpointState:
    """What a checkpoint holds: reconciled adds and tombstones (FILE_SCHEMA tables) and the
    non-file actions. ``sidecars`` lists the sidecar files it referenced (relative to the table
    root)."""

    ref: CheckpointRef
    adds: pa.Table
    removes: pa.Table
    actions: list[Action] = field(default_factory=list)
    sidecars: list[str] = field(default_factory=list)


def _rel(name: str) -> str:
    return f"{LOG_DIR}/{name}"


def _parquet(store: TableStore, rel_path: str) -> pq.ParquetFile:
    """The checkpoint (or sidecar) file, its pages checked against the CRC-32 the writer
    stored with each of them (parquet-mr has written one by default since 1.12, Delta Spark's
    checkpoints among them): a flipped bit is then an error naming the file, not a wrong path
    that would leave the file it names unreferenced."""
    data = store.read(rel_path)
    try:
        return pq.ParquetFile(pa.BufferReader(data), page_checksum_verification=True)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptLogError(
            f"{store.location(rel_path)}: unreadable parquet ({exc})", rel_path
        ) from None


def _columns(pf: pq.ParquetFile) -> list[str]:
    """The pruned column list for this file's schema: file-action fields + small actions."""
    schema = pf.schema_arrow
    cols: list[str] = []
    for action in ("add", "remove"):
        if action not in schema.names:
            continue
        typ = schema.field(action).type
        present = (
            {typ.field(i).name for i in range(typ.num_fields)} if pa.types.is_struct(typ) else set()
        )
        cols += [f"{action}.{f}" for f in filetable.CHECKPOINT_COLUMNS if f in present]
    cols += [name for name in _SMALL_ACTIONS if name in schema.names]
    return cols


def _normalize(value: Any) -> Any:
    """pyarrow renders maps as lists of (key, value) tuples; actions expect JSON objects."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, tuple) and len(v) == 2 for v in value)
    ):
        return {k: _normalize(v) for k, v in value}
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items() if v is not None}
    return value


def _small_actions(table: pa.Table, rel_path: str) -> list[Action]:
    out: list[Action] = []
    for name in _SMALL_ACTIONS:
        if name not in table.column_names:
            continue
        column = table[name]
        rows = column.filter(column.is_valid()).to_pylist()
        for row in rows:
            obj = _normalize(row)
            if name == "metaData" and isinstance(obj.get("configuration"), list):
                obj["configuration"] = {}
            if name == "metaData" and obj.get("partitionColumns") is None:
                obj["partitionColumns"] = []
            try:
                action = parse_action({name: obj})
            except ActionError as exc:
                raise CorruptLogError(f"{rel_path}: bad {name} action: {exc}", rel_path) from None
            if action is not None:
                out.append(action)
    return out


#: Checkpoint rows decoded at a time: the raw rows of one batch are freed before the next, so
#: reading a checkpoint holds its file tables plus one batch (not a second copy of them all).
BATCH_ROWS = 65_536


def _read_parquet_part(store: TableStore, rel_path: str) -> tuple[pa.Table, pa.Table, list[Action]]:
    pf = _parquet(store, rel_path)
    columns = _columns(pf)
    small_names = [name for name in _SMALL_ACTIONS if name in columns]
    adds: list[pa.Table] = []
    removes: list[pa.Table] = []
    small: list[pa.RecordBatch] = []
    try:
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=columns, use_threads=False):
            try:
                # parquet does not check that strings are UTF-8: a damaged file without page
                # checksums could hand on bytes no path can be (and no code can print)
                batch.validate(full=True)
                if "add" in batch.schema.names:
                    adds.append(filetable.from_struct(batch.column("add")))
                if "remove" in batch.schema.names:
                    removes.append(filetable.from_struct(batch.column("remove")))
            except (pa.ArrowException, ValueError, TypeError) as exc:
                raise CorruptLogError(
                    f"{store.location(rel_path)}: bad file actions ({exc})", rel_path
                ) from None
            if small_names:
                rows = batch.select(small_names)
                used = pc.is_valid(rows.column(0))
                for i in range(1, len(small_names)):
                    used = pc.or_(used, pc.is_valid(rows.column(i)))
                small.append(rows.filter(used))
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptLogError(
            f"{store.location(rel_path)}: unreadable parquet ({exc})", rel_path
        ) from None
    small_table = pa.Table.from_batches(small) if small else pa.table({}, schema=pa.schema([]))
    return (
        pa.concat_tables(adds) if adds else filetable.empty(),
        pa.concat_tables(removes) if removes else filetable.empty(),
        _small_actions(small_table, rel_path),
    )


def _read_json_part(store: TableStore, rel_path: str) -> tuple[pa.Table, pa.Table, list[Action]]:
    parsed = parse_json_actions(store.read(rel_path))
    if parsed.errors:
        err = parsed.errors[0]
        raise CorruptLogError(
            f"{store.location(rel_path)}:{err.line}: {err.message}", rel_path, err.line
        )
    adds = filetable.from_actions(a for a in parsed.actions if isinstance(a, AddFile))
    removes = filetable.from_actions(a for a in parsed.actions if isinstance(a, RemoveFile))
    others: list[Action] = [a for a in parsed.actions if not isinstance(a, AddFile | RemoveFile)]
    return adds, removes, others


def sidecar_rel_path(sidecar: Sidecar) -> str:
    """Where a sidecar lives, relative to the table root (sidecar paths are relative to
    ``_delta_log/_sidecars/`` unless absolute)."""
    if "://" in sidecar.path or sidecar.path.startswith("/"):
        return sidecar.path
    return f"{LOG_DIR}/{SIDECARS_DIR}/{sidecar.path}"


def read_checkpoint(store: TableStore, ref: CheckpointRef) -> CheckpointState:
    """Reads every part (and every sidecar) of a checkpoint. Raises :class:`CorruptLogError`
    for damage and :class:`StorageError` for access problems, both naming the file."""
    adds, removes, actions = [], [], []
    for name in ref.files:
        rel = _rel(name)
        try:
            part = (
                _read_json_part(store, rel)
                if name.endswith(".json")
                else _read_parquet_part(store, rel)
            )
        except StorageError as exc:
            raise CorruptLogError(f"checkpoint part {name}: {exc}", rel) from None
        adds.append(part[0])
        removes.append(part[1])
        actions += part[2]
    sidecars = [a for a in actions if isinstance(a, Sidecar)]
    sidecar_paths = [sidecar_rel_path(s) for s in sidecars]
    for rel in sidecar_paths:
        try:
            part = _read_parquet_part(store, rel)
        except StorageError as exc:
            raise CorruptLogError(
                f"sidecar {rel} of checkpoint {ref.files[0]}: {exc}", rel
            ) from None
        adds.append(part[0])
        removes.append(part[1])
    checkpoint_meta = [a for a in actions if isinstance(a, CheckpointMetadata)]
    if checkpoint_meta and checkpoint_meta[0].version != ref.version:
        raise CorruptLogError(
            f"{ref.files[0]}: checkpointMetadata says version {checkpoint_meta[0].version}",
            _rel(ref.files[0]),
        )
    if not any(isinstance(a, Protocol) for a in actions) or not any(
        isinstance(a, Metadata) for a in actions
    ):
        raise CorruptLogError(
            f"{store.location(_rel(ref.files[0]))}: checkpoint has no protocol or metaData action",
            _rel(ref.files[0]),
        )
    return CheckpointState(
        ref,
        pa.concat_tables(adds),
        pa.concat_tables(removes),
        [a for a in actions if isinstance(a, Protocol | Metadata | Txn | DomainMetadata)],
        sidecar_paths,
    )


def checkpoint_names(version: int, parts: int | None = None) -> list[str]:
    """The file names of a classic (``parts`` None or 1) or multi-part checkpoint at
    ``version`` (the protocol's names: ``V.checkpoint.parquet``,
    ``V.checkpoint.P.N.parquet``)."""
    if parts is None or parts <= 1:
        return [f"{version:020d}.checkpoint.parquet"]
    return [f"{version:020d}.checkpoint.{p:010d}.{parts:010d}.parquet" for p in range(1, parts + 1)]


def missing_parts(ref: CheckpointRef) -> list[str]:
    """The part files a multi-part checkpoint ``ref`` lacks (its part count read from the
    name of a part it has)."""
    parts = int(ref.files[0].split(".")[-2])
    return [n for n in checkpoint_names(ref.version, parts) if n not in ref.files]


def group_checkpoints(names: list[LogFileName]) -> tuple[list[CheckpointRef], list[CheckpointRef]]:
    """Checkpoint files grouped into checkpoints: (complete, incomplete multi-part), each sorted
    by version. Readers must ignore multi-part checkpoints with missing parts."""
    complete: list[CheckpointRef] = []
    incomplete: list[CheckpointRef] = []
    multipart: dict[tuple[int, int], list[LogFileName]] = {}
    for n in names:
        if n.kind in (LogFileKind.CHECKPOINT, LogFileKind.V2_CHECKPOINT):
            complete.append(CheckpointRef(n.version, n.kind, (n.name,)))
        elif n.kind is LogFileKind.MULTIPART_CHECKPOINT and n.parts:
            multipart.setdefault((n.version, n.parts), []).append(n)
    for (version, parts), files in multipart.items():
        ordered = tuple(f.name for f in sorted(files, key=lambda f: f.part or 0))
        ref = CheckpointRef(version, LogFileKind.MULTIPART_CHECKPOINT, ordered)
        have = {f.part for f in files}
        (complete if have == set(range(1, parts + 1)) else incomplete).append(ref)
    complete.sort(key=lambda r: (r.version, _preference(r)))
    incomplete.sort(key=lambda r: r.version)
    return complete, incomplete


def _preference(ref: CheckpointRef) -> int:
    """Among checkpoints of one version, the last one sorted is tried first: V2, classic,
    multi-part (deprecated)."""
    return {
        LogFileKind.MULTIPART_CHECKPOINT: 0,
        LogFileKind.CHECKPOINT: 1,
        LogFileKind.V2_CHECKPOINT: 2,
    }[ref.kind]
