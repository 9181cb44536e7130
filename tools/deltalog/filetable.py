"""File actions (``add`` or ``remove``) as one columnar table, so a million-file snapshot stays
a few pyarrow buffers instead of a million Python objects.

:data:`FILE_SCHEMA` is the one layout: ``path`` is decoded (the reconciliation key, with
``dv_unique_id``), ``deletion_timestamp`` is null for adds, ``modification_time`` may be null
for removes; stats and tags are not kept. :class:`FileActions` wraps such a table and yields
typed :class:`~deltaguard.tools.deltalog.actions.AddFile` / ``RemoveFile`` values on demand.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaguard.tools.deltalog.actions import AddFile, DeletionVector, RemoveFile, decode_path

FILE_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("size", pa.int64()),
        ("modification_time", pa.int64()),
        ("deletion_timestamp", pa.int64()),
        ("data_change", pa.bool_()),
        ("partition_values", pa.map_(pa.string(), pa.string())),
        ("dv_storage_type", pa.string()),
        ("dv_path_or_inline_dv", pa.string()),
        ("dv_offset", pa.int64()),
        ("dv_size_in_bytes", pa.int64()),
        ("dv_cardinality", pa.int64()),
        ("dv_unique_id", pa.string()),
    ]
)

#: checkpoint struct field -> FILE_SCHEMA column
_CHECKPOINT_FIELDS = {
    "path": "path",
    "size": "size",
    "modificationTime": "modification_time",
    "deletionTimestamp": "deletion_timestamp",
    "dataChange": "data_change",
    "partitionValues": "partition_values",
}
_DV_FIELDS = {
    "storageType": "dv_storage_type",
    "pathOrInlineDv": "dv_path_or_inline_dv",
    "offset": "dv_offset",
    "sizeInBytes": "dv_size_in_bytes",
    "cardinality": "dv_cardinality",
}
#: the checkpoint columns (dotted, for pruned parquet reads) a file table needs, per action
CHECKPOINT_COLUMNS = (*_CHECKPOINT_FIELDS, "deletionVector")


def empty() -> pa.Table:
    return FILE_SCHEMA.empty_table()


def _decode(paths: pa.Array) -> pa.Array:
    """URL-decode only the paths that contain '%' (most need nothing)."""
    encoded = pc.match_substring(paths, "%")
    if not pc.any(encoded).as_py():
        return paths
    values = paths.to_pylist()
    flags = encoded.to_pylist()
    return pa.array(
        [decode_path(v) if f else v for v, f in zip(values, flags, strict=True)], pa.string()
    )


#: Per type, one all-null array that :func:`_nulls` slices (a slice shares its buffers).
_NULLS: dict[pa.DataType, pa.Array] = {}


def _nulls(typ: pa.DataType, n: int) -> pa.Array:
    """An all-null array of ``n`` values of ``typ`` that costs no memory of its own: a slice of
    one shared array per type (grown when a longer one is asked for). Arrow arrays are
    immutable, so sharing is safe."""
    shared = _NULLS.get(typ)
    if shared is None or len(shared) < n:
        shared = _NULLS[typ] = pa.nulls(n, typ)
    return shared.slice(0, n)


def _column(values: pa.Array | None, typ: pa.DataType, n: int) -> pa.Array:
    """A FILE_SCHEMA column of ``n`` rows from a decoded field (cast to ``typ``); shared nulls
    (:func:`_nulls`) when the field is missing or holds no value, the common case for the
    deletion vector fields (a table without DVs) and an add's deletion time: a million-file
    snapshot then keeps no buffer of nulls (measured: 34 MB less at 975,000 adds)."""
    if values is None or values.null_count == n:
        return _nulls(typ, n)
    return values.cast(typ)


def _unique_id(storage: pa.Array, inline: pa.Array, offset: pa.Array) -> pa.Array:
    base = pc.binary_join_element_wise(storage, inline, "")
    with_offset = pc.binary_join_element_wise(base, pc.cast(offset, pa.string()), "@")
    return pc.if_else(pc.is_valid(offset), with_offset, base)


def from_struct(column: pa.ChunkedArray | pa.Array) -> pa.Table:
    """The rows of a checkpoint's ``add`` or ``remove`` struct column that hold an action, as a
    FILE_SCHEMA table. Fields missing from the checkpoint's schema are null."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    struct: pa.StructArray = column
    names = [struct.type.field(i).name for i in range(struct.type.num_fields)]
    if "path" not in names:
        return empty()
    # flatten() merges the struct's own validity into its children (a null ``add`` of a
    # ``remove`` row may still carry "" in its non-nullable children).
    fields = dict(zip(names, struct.flatten(), strict=True))
    mask = pc.is_valid(fields["path"])
    fields = {name: child.filter(mask) for name, child in fields.items()}
    n = len(fields["path"])
    cols: dict[str, pa.Array] = {}
    for src, dst in _CHECKPOINT_FIELDS.items():
        cols[dst] = _column(fields.get(src), FILE_SCHEMA.field(dst).type, n)
    cols["path"] = _decode(cols["path"])
    dv = fields.get("deletionVector")
    dv_fields = (
        dict(
            zip(
                [dv.type.field(i).name for i in range(dv.type.num_fields)],
                dv.flatten(),
                strict=True,
            )
        )
        if dv is not None
        else {}
    )
    for src, dst in _DV_FIELDS.items():
        cols[dst] = _column(dv_fields.get(src), FILE_SCHEMA.field(dst).type, n)
    cols["dv_unique_id"] = _column(
        _unique_id(cols["dv_storage_type"], cols["dv_path_or_inline_dv"], cols["dv_offset"]),
        pa.string(),
        n,
    )
    return pa.Table.from_pydict(cols, schema=FILE_SCHEMA)


def from_actions(actions: Iterable[AddFile | RemoveFile]) -> pa.Table:
    """Typed file actions as a FILE_SCHEMA table."""
    rows: dict[str, list[Any]] = {name: [] for name in FILE_SCHEMA.names}
    for a in actions:
        dv = a.deletion_vector
        rows["path"].append(a.path)
        rows["size"].append(a.size)
        rows["modification_time"].append(a.modification_time if isinstance(a, AddFile) else None)
        rows["deletion_timestamp"].append(
            a.deletion_timestamp if isinstance(a, RemoveFile) else None
        )
        rows["data_change"].append(a.data_change)
        pv = a.partition_values
        rows["partition_values"].append(list(pv.items()) if pv is not None else None)
        rows["dv_storage_type"].append(dv.storage_type if dv else None)
        rows["dv_path_or_inline_dv"].append(dv.path_or_inline_dv if dv else None)
        rows["dv_offset"].append(dv.offset if dv else None)
        rows["dv_size_in_bytes"].append(dv.size_in_bytes if dv else None)
        rows["dv_cardinality"].append(dv.cardinality if dv else None)
        rows["dv_unique_id"].append(dv.unique_id if dv else None)
    return pa.Table.from_pydict(rows, schema=FILE_SCHEMA)


def keys(table: pa.Table) -> pa.ChunkedArray:
    """``path`` + NUL + ``dv_unique_id`` (or the path alone without a DV): one string per row."""
    joined = pc.binary_join_element_wise(table["path"], table["dv_unique_id"], "\x00")
    return pc.if_else(pc.is_valid(table["dv_unique_id"]), joined, table["path"])


def key_string(path: str, dv_unique_id: str | None) -> str:
    """The same key as :func:`keys`, for one typed action."""
    return f"{path}\x00{dv_unique_id}" if dv_unique_id is not None else path


class FileActions:
    """A read-only set of file actions of one kind (adds or removes) in FILE_SCHEMA layout."""

    def __init__(self, table: pa.Table, kind: type[AddFile] | type[RemoveFile]) -> None:
        self.table = table
        self.kind = kind

    def __len__(self) -> int:
        return int(self.table.num_rows)

    def paths(self) -> list[str]:
        """Decoded paths as in the log (relative to the table root, or absolute URIs)."""
        return self.table["path"].to_pylist()  # type: ignore[no-any-return]

    def total_size(self) -> int:
        total = pc.sum(self.table["size"]).as_py()
        return int(total or 0)

    def deletion_vectors(self) -> Iterator[tuple[str, DeletionVector]]:
        """(data file path, DV descriptor) for every entry that has a DV."""
        with_dv = self.table.filter(pc.is_valid(self.table["dv_storage_type"]))
        for row in with_dv.select(["path", *_DV_FIELDS.values()]).to_pylist():
            yield row["path"], _dv(row)  # type: ignore[misc]

    def __iter__(self) -> Iterator[Any]:
        for batch in self.table.to_batches(max_chunksize=65536):
            for row in batch.to_pylist():
                dv = _dv(row)
                pv = dict(row["partition_values"]) if row["partition_values"] is not None else None
                if self.kind is AddFile:
                    yield AddFile(
                        row["path"],
                        pv or {},
                        row["size"] or 0,
                        row["modification_time"] or 0,
                        bool(row["data_change"]),
                        dv,
                    )
                else:
                    yield RemoveFile(
                        row["path"],
                        row["deletion_timestamp"],
                        bool(row["data_change"]),
                        row["size"],
                        pv,
                        dv,
                    )


def _dv(row: dict[str, Any]) -> DeletionVector | None:
    if row["dv_storage_type"] is None:
        return None
    return DeletionVector(
        row["dv_storage_type"],
        row["dv_path_or_inline_dv"] or "",
        row["dv_offset"],
        row["dv_size_in_bytes"] or 0,
        row["dv_cardinality"] or 0,
    )
