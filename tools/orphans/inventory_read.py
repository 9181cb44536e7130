"""The local engine's inventory reader: resolves ``--inventory`` and streams its rows with
pyarrow (the rules are :mod:`.inventory`'s, shared with the Spark engine).

Files are read a record batch at a time (CSV blocks, Parquet row groups, ORC stripes), so
memory holds one batch of the inventory plus the rows kept for the table. A local file is
read from disk as a stream; a file on S3 is fetched whole first (one data file of a report at a
time). A report's data files are ``s3://<destinationBucket>/<key>`` for a manifest on S3; for
a report copied to local disk (S3 Inventory's layout kept: ``<config>/<date>/manifest.json``
and ``<config>/data/<file>``), ``<manifest dir>/../data/<file>``. ``manifest.json`` is checked
against ``manifest.checksum`` next to it (when there) as it is opened, and each data file
against its ``MD5checksum`` before its first row is read (:func:`.inventory.check_md5`; the
Spark engine checks them all on the driver first, :func:`verify_data_files`).
"""

from __future__ import annotations

import gzip
import posixpath
from collections.abc import Container, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.orc as paorc
import pyarrow.parquet as pq

from deltaguard.tools.deltalog.snapshot import load_snapshot
from deltaguard.tools.orphans.inventory import (
    FILES_SCHEMA,
    Form,
    InventoryError,
    InventorySource,
    TableRoot,
    check_md5,
    local_path,
    parse_manifest,
    table_rows,
)
from deltaguard.tools.orphans.listing import TableListing
from deltaguard.tools.orphans.pathset import CHUNK
from deltaguard.tools.storage import FileInfo, S3Options, TableStore, in_skip, open_table
from deltaguard.tools.storage.errors import DeltaLogError, FileMissingError

MANIFEST = "manifest.json"
#: The MD5 of ``manifest.json``'s bytes, written next to it by S3 Inventory.
MANIFEST_CHECKSUM = "manifest.checksum"


def _parent_and_name(location: str) -> tuple[str, str]:
    head, _, name = location.rstrip("/").rpartition("/")
    return head, name


def read_bytes(location: str, s3: S3Options) -> bytes:
    """The bytes of one file (local path, ``file:`` or S3 URI); :class:`InventoryError`
    naming it if it cannot be read."""
    try:
        path = local_path(location)
        if path is not None:
            return path.read_bytes()
        parent, name = _parent_and_name(location)
        return open_table(parent, s3).read(name)
    except (OSError, DeltaLogError) as exc:
        raise InventoryError(f"cannot read inventory file {location}: {exc}") from None


def optional_bytes(location: str, s3: S3Options) -> bytes | None:
    """:func:`read_bytes`, or None if there is no file at ``location``."""
    try:
        path = local_path(location)
        if path is not None:
            return path.read_bytes() if path.is_file() else None
        parent, name = _parent_and_name(location)
        return open_table(parent, s3).read(name)
    except FileMissingError:
        return None
    except (OSError, DeltaLogError) as exc:
        raise InventoryError(f"cannot read inventory file {location}: {exc}") from None


def _is_delta(store: TableStore) -> bool:
    try:
        return any(store.list_dir("_delta_log"))
    except DeltaLogError:
        return False


def _parquet_files(store: TableStore) -> list[str]:
    """The data files of a Parquet dataset (hidden names, such as ``_SUCCESS``, skipped)."""
    return sorted(
        store.location(info.path)
        for info in store.walk("")
        if not any(part.startswith((".", "_")) for part in info.path.split("/"))
    )


def open_inventory(location: str, s3: S3Options, date_ms: int | None) -> InventorySource:
    """``--inventory LOCATION`` (and ``--inventory-date``, epoch ms or None) resolved: a
    ``manifest.json`` is an S3 Inventory report (its date is ``creationTimestamp``:
    ``date_ms`` is refused with it), a directory with a ``_delta_log`` a Delta table, any
    other file or directory a Parquet dataset. Raises :class:`InventoryError` naming the
    location for anything missing or unusable."""
    if location.rstrip("/").endswith(MANIFEST):
        if date_ms is not None:
            raise InventoryError(
                "--inventory-date is for an inventory table: an S3 Inventory report's date "
                "is its creationTimestamp"
            )
        return _report(location, s3)
    try:
        path = local_path(location)
        if path is not None and path.is_file():
            files = [str(path)]
            form = Form.PARQUET
        elif path is not None and not path.is_dir():
            raise InventoryError(f"--inventory {location}: no such file or directory")
        else:
            store = open_table(location, s3)
            form = Form.DELTA if _is_delta(store) else Form.PARQUET
            files = _delta_files(store, location) if form is Form.DELTA else _parquet_files(store)
            if not files and path is None:  # an S3 location naming one object
                parent, name = _parent_and_name(location)
                if open_table(parent, s3).stat(name) is not None:
                    files = [location]
    except DeltaLogError as exc:
        raise InventoryError(f"cannot read inventory {location}: {exc}") from None
    if not files:
        raise InventoryError(f"--inventory {location}: no Parquet files, no Delta table there")
    source = "--inventory-date" if date_ms is not None else ""
    return InventorySource(location, form, tuple(files), date_ms, source)


def _delta_files(store: TableStore, location: str) -> list[str]:
    snapshot = load_snapshot(store)
    if snapshot.adds.table.num_rows and "deletionVector" in snapshot.adds.table.column_names:
        if snapshot.adds.table["deletionVector"].null_count < snapshot.adds.table.num_rows:
            raise InventoryError(
                f"inventory table {location} has deletion vectors: not supported "
                "(rewrite it without them, e.g. OPTIMIZE or REORG ... APPLY (PURGE))"
            )
    return sorted(snapshot.live_locations())


def _report(location: str, s3: S3Options) -> InventorySource:
    data = read_bytes(location, s3)
    checksum_at = f"{_parent_and_name(location)[0]}/{MANIFEST_CHECKSUM}"
    checksum = optional_bytes(checksum_at, s3)
    if checksum is not None:
        check_md5(data, checksum.decode(errors="replace"), location, checksum_at)
    fields = parse_manifest(data, location)
    local = local_path(location)
    if local is not None:
        data_dir = local.parent.parent / "data"
        files = [str(data_dir / posixpath.basename(key)) for key in fields["keys"]]
    else:
        files = [f"s3://{fields['destination_bucket']}/{key}" for key in fields["keys"]]
    return InventorySource(
        location,
        fields["form"],
        tuple(files),
        fields["date_ms"],
        f"creationTimestamp of {MANIFEST}",
        fields["columns"],
        fields["source_bucket"],
        tuple(fields["md5"]),
    )


def _verified_input(source: InventorySource, location: str, s3: S3Options) -> Any:
    """What pyarrow reads ``location`` from (a local path, or the fetched bytes), its MD5
    checked first when ``source`` is a report (:func:`.inventory.check_md5`)."""
    path = local_path(location)
    data: Path | bytes = path if path is not None else read_bytes(location, s3)
    if source.form.is_report:
        expected = source.md5[source.data_files.index(location)]
        try:
            check_md5(data, expected, location, f"the MD5checksum of {source.location}")
        except OSError as exc:
            raise InventoryError(f"cannot read inventory file {location}: {exc}") from None
    return str(data) if isinstance(data, Path) else pa.BufferReader(data)


def verify_data_files(source: InventorySource, s3: S3Options) -> None:
    """Checks every data file of a report against its ``MD5checksum`` (nothing for an
    inventory table): the Spark engine's check on the driver, before its executors read them.
    Raises :class:`~.inventory.InventoryError` naming the first file that does not match or
    cannot be read."""
    if source.form.is_report:
        for location in source.data_files:
            _verified_input(source, location, s3)


def raw_batches(source: InventorySource, location: str, s3: S3Options) -> Iterator[Any]:
    """The record batches of one data file of ``source``, as the file holds them. Raises
    :class:`InventoryError` naming the file if it cannot be read or parsed."""
    try:
        stream = _verified_input(source, location, s3)
        if source.form is Form.S3_CSV:
            compressed = location.endswith(".gz")
            raw = pa.input_stream(stream, compression="gzip" if compressed else None)
            reader = pacsv.open_csv(
                raw,
                read_options=pacsv.ReadOptions(column_names=list(source.columns)),
                convert_options=pacsv.ConvertOptions(
                    column_types={c: pa.string() for c in source.columns}
                ),
            )
            yield from reader
        elif source.form is Form.S3_ORC:
            orc = paorc.ORCFile(stream)
            for stripe in range(orc.nstripes):
                yield orc.read_stripe(stripe)
        else:
            yield from pq.ParquetFile(stream).iter_batches(batch_size=65_536)
    except InventoryError:
        raise
    except (pa.ArrowException, OSError, EOFError, gzip.BadGzipFile) as exc:
        kind = source.form.value.removeprefix("s3-inventory-").removesuffix("-table")
        raise InventoryError(f"inventory file {location} is not readable {kind}: {exc}") from None


@dataclass
class InventoryRows:
    """Every row of an inventory that is a visible file of the table (:data:`FILES_SCHEMA`),
    the counts, the newest ``modificationTime`` read and what the hidden-name rule
    skipped."""

    files: pa.Table
    rows: int = 0
    under: int = 0
    newest_ms: int | None = None
    hidden_dirs: set[str] = field(default_factory=set)
    hidden_files: int = 0


def read_table_rows(source: InventorySource, root: TableRoot, s3: S3Options) -> InventoryRows:
    """Streams every data file of ``source`` through :func:`.inventory.table_rows`."""
    pieces: list[pa.Table] = []
    out = InventoryRows(FILES_SCHEMA.empty_table())
    for location in source.data_files:
        for batch in raw_batches(source, location, s3):
            rows = table_rows(batch, root, location)
            pieces.append(rows.files)
            out.rows += rows.rows
            out.under += rows.under
            if rows.newest_ms is not None and (
                out.newest_ms is None or rows.newest_ms > out.newest_ms
            ):
                out.newest_ms = rows.newest_ms
            out.hidden_dirs |= rows.hidden_dirs
            out.hidden_files += rows.hidden_files
    if pieces:
        out.files = pa.concat_tables(pieces)
    return out


def inventory_listing(rows: InventoryRows, referenced: Container[str]) -> TableListing:
    """The inventory's rows for the table as a listing (:class:`.listing.TableListing`):
    files in ``referenced`` are only counted, as the listing does; no directory was listed."""
    files: list[FileInfo] = []
    known = 0
    table = rows.files
    for start in range(0, table.num_rows, CHUNK):
        piece = table.slice(start, CHUNK)
        paths = piece["path"].to_pylist()
        skip = in_skip(paths, referenced)
        sizes, mtimes = piece["size"].to_pylist(), piece["mtime_ms"].to_pylist()
        for k, path in enumerate(paths):
            if skip[k]:
                known += 1
            else:
                files.append(FileInfo(path, sizes[k], mtimes[k]))
    return TableListing(files, 0, rows.hidden_files, sorted(rows.hidden_dirs), known)
