"""Inventory input for ``deltaguard orphans --inventory``: the rules both engines share.

With an inventory, the table's data files are not listed: the rows of the inventory that lie
under the table root stand for the listing (``_delta_log`` is still listed: the log protocol
needs it and it is small). Both engines read the inventory's files with their own reader
(the local engine with pyarrow, :mod:`.inventory_read`; the Spark engine with
``spark.read``, :mod:`.spark.inventory`) and give every batch to :func:`table_rows`, the one
definition of which rows count.

**Forms** (:class:`Form`):

* an S3 Inventory report, named by its ``manifest.json`` (``fileFormat`` CSV, gzipped, or
  Parquet or ORC; ``fileSchema`` the CSV's column names or the schema). The report lists the
  whole source bucket: only rows of the table's bucket whose key starts with the table's
  prefix count. CSV keys are URL-encoded (form encoding, ``+`` for a space) and are decoded;
  Parquet and ORC keys are not encoded. A versioned ("all versions") report has a row per
  version: only the latest version of a key counts (``IsLatest``), and a key whose latest
  version is a delete marker (``IsDeleteMarker``) is gone. Empty fields (a CSV's ``""``, such
  as a delete marker's ``Size``) read as null. Every data file is checked against the
  manifest's ``MD5checksum``, and ``manifest.json`` against ``manifest.checksum`` (the MD5
  of its bytes) when that file is there, before any row is used
  (:func:`check_md5`): a report that does not match what S3 wrote is refused.
* a Parquet dataset or a Delta table with the columns of Delta's ``VACUUM ... USING
  INVENTORY`` (:data:`INVENTORY_COLUMNS`): ``path`` a fully qualified URI (as Delta requires:
  ``s3``, ``s3a`` and ``s3n`` name the same bucket; ``file:`` or an absolute path on local
  disk), ``length``, ``isDir``, ``modificationTime`` (epoch ms). Rows with ``isDir`` are
  skipped (directories are never deleted); relative paths and other filesystems are outside
  the table.

Rows outside the table root are ignored; rows under it pass the hidden-name rule of the
listing (:func:`~deltaguard.tools.orphans.rules.hidden_name_rule` on every component, so a
file below a hidden directory is skipped, and ``_delta_log`` rows are never data files).
Files under the root that the inventory does not list are unknown and never candidates.

**Date rule.** The inventory's date is when it was taken: the report's
``creationTimestamp``; for a table form ``--inventory-date`` or, without it, the newest
``modificationTime`` among its rows. The derived date is the safe default: every row was
written before the inventory was taken, so it can only be earlier than the true date, and an
earlier date only moves the cut-off earlier; a date typed by hand can be wrong in either
direction. A file modified at or after the date is never a candidate: the scan's cut-off is
``min(now - retention, date)`` (:attr:`~deltaguard.tools.orphans.classify.ScanResult.cutoff_ms`),
and the re-read before deleting keeps that cut-off.

**Safety argument** (why an inventory, which is older than the scan, never makes cleanup
delete a file the table needs; it adds to :mod:`deltaguard.tools.orphans.cleanup`'s):

1. A file created after the inventory is not in it: unknown, never a candidate.
2. A file the inventory lists that was deleted since: deleting it again finds nothing and is
   recorded as ``missing``; nothing is lost.
3. A file the inventory lists whose key was written again since (new content): Delta writers
   never reuse a data file name (each name carries a random UUID), so the same key with new
   content means a commit wrote it, and the re-read of the log right before deleting (step 3
   of :mod:`.cleanup`) spares every file the log then names. So candidates need no extra
   request to confirm them, and the inventory's ``modificationTime`` is the age the
   retention rule judges.
4. Every row is judged at the cut-off ``min(now - retention, date)``: the retention protects
   writers in flight as in a listing, and the date keeps rows the inventory recorded while it
   was being taken from counting as old.
5. The log itself is listed and read as without an inventory: what it references is never a
   candidate.
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltaguard.logstore.s3_location import S3_SCHEMES
from deltaguard.tools.orphans.rules import hidden_name_rule
from deltaguard.tools.storage import LocalTableStore, S3TableStore, TableStore
from deltaguard.tools.storage import local_path as storage_local_path
from deltaguard.tools.storage.errors import StorageError

#: Delta's ``USING INVENTORY`` columns (``VacuumCommand.INVENTORY_SCHEMA``).
INVENTORY_COLUMNS = ("path", "length", "isDir", "modificationTime")
#: The S3 Inventory fields a report must have, normalized (:func:`field_name`).
REPORT_FIELDS = ("bucket", "key", "size", "lastmodifieddate")
#: Columns of the batches :func:`table_rows` returns.
FILES_SCHEMA = pa.schema([("path", pa.string()), ("size", pa.int64()), ("mtime_ms", pa.int64())])
_MAY_BE_HIDDEN = re.compile(r"(^|/)([._]|metadata(/|$))")
_MD5 = re.compile(r"[0-9a-fA-F]{32}")


class InventoryError(ValueError):
    """The inventory cannot be used; the message names the file or the setting."""


class Form(StrEnum):
    S3_CSV = "s3-inventory-csv"
    S3_PARQUET = "s3-inventory-parquet"
    S3_ORC = "s3-inventory-orc"
    PARQUET = "parquet-table"
    DELTA = "delta-table"

    @property
    def is_report(self) -> bool:
        """An S3 Inventory report (rows are bucket and key) rather than a table of paths."""
        return self in (Form.S3_CSV, Form.S3_PARQUET, Form.S3_ORC)


@dataclass(frozen=True)
class InventorySource:
    """An inventory, resolved: ``location`` as given, its form, ``data_files`` (absolute
    locations: S3 URIs or local paths; for a Delta table its live files), ``columns`` (a CSV
    report's column names), the report's ``source_bucket``, ``md5`` (a report's
    ``MD5checksum`` of each data file, in the order of ``data_files``), and ``date_ms`` with
    where it came from (None: derive it from the rows, :func:`inventory_date`)."""

    location: str
    form: Form
    data_files: tuple[str, ...]
    date_ms: int | None
    date_source: str
    columns: tuple[str, ...] = ()
    source_bucket: str | None = None
    md5: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableRoot:
    """Where a table's rows are in an inventory (picklable, for Spark's executors):
    ``bucket`` and key ``prefixes`` for a report, URI ``prefixes`` for a table of paths
    (each ending in ``/``), and what the hidden-name rule needs."""

    form: Form
    prefixes: tuple[str, ...]
    bucket: str | None = None
    partition_columns: tuple[str, ...] = ()
    configuration: tuple[tuple[str, str], ...] = ()

    def is_hidden(self) -> Callable[[str], bool]:
        return hidden_name_rule(self.partition_columns, dict(self.configuration))


@dataclass
class TableRows:
    """What one batch of an inventory holds for the table: ``files`` (:data:`FILES_SCHEMA`:
    visible files under the root, paths relative and decoded), how many rows were read and
    how many lie under the root, the newest ``modificationTime`` read (None for no row), and
    the hidden directories and files skipped."""

    files: pa.Table
    rows: int
    under: int
    newest_ms: int | None
    hidden_dirs: set[str] = field(default_factory=set)
    hidden_files: int = 0


@dataclass(frozen=True)
class InventoryReport:
    """The report's account of an inventory run (both engines, ``inventory`` in the JSON)."""

    location: str
    form: Form
    date_ms: int
    date_source: str
    rows_read: int
    rows_under_table: int

    def to_json(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "form": self.form.value,
            "date_ms": self.date_ms,
            "date": iso(self.date_ms),
            "date_source": self.date_source,
            "rows_read": self.rows_read,
            "rows_under_table": self.rows_under_table,
            "listing_skipped": True,
        }

    def line(self) -> str:
        """The terminal report's line."""
        return (
            f"inventory {self.location} ({self.form.value}) of {iso(self.date_ms)} "
            f"({self.date_source}): {self.rows_read} rows read, {self.rows_under_table} under "
            "the table; the data files were not listed"
        )


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def parse_date(text: str) -> int:
    """``--inventory-date``: an ISO 8601 timestamp (UTC unless it names a zone) as epoch ms."""
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InventoryError(
            f"--inventory-date {text!r} is not an ISO 8601 timestamp (2026-11-20T00:00:00Z)"
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return int(stamp.timestamp() * 1000)


def inventory_date(source: InventorySource, newest_ms: int | None) -> tuple[int, str]:
    """The date rule (module docstring): the source's date, else the newest row's
    ``modificationTime``. Raises :class:`InventoryError` if there is neither (no rows)."""
    if source.date_ms is not None:
        return source.date_ms, source.date_source
    if newest_ms is None:
        raise InventoryError(
            f"inventory {source.location} has no rows to derive its date from: "
            "pass --inventory-date"
        )
    return newest_ms, "the newest modificationTime in the inventory (no --inventory-date)"


def field_name(name: str) -> str:
    """An S3 Inventory field as compared: lower case, without ``_`` or spaces
    (``LastModifiedDate`` in a CSV schema, ``last_modified_date`` in Parquet and ORC)."""
    return name.strip().lower().replace("_", "").replace(" ", "")


def check_md5(data: bytes | Path, expected: str, where: str, what: str) -> None:
    """Raises :class:`InventoryError` naming ``where`` unless the MD5 of ``data`` (bytes, or
    a local file read in chunks) is ``expected`` (hex, any case; ``what`` says where the
    expected value is from). Both engines, for the report's data files and ``manifest.json``."""
    if isinstance(data, Path):
        with data.open("rb") as f:
            digest = hashlib.file_digest(f, lambda: hashlib.md5(usedforsecurity=False)).hexdigest()
    else:
        digest = hashlib.md5(data, usedforsecurity=False).hexdigest()
    if digest != expected.strip().lower():
        raise InventoryError(
            f"{where}: MD5 {digest} does not match {expected.strip()!r} in {what}: the file is "
            "not the one S3 Inventory wrote (changed, truncated or from another run); "
            "nothing was deleted"
        )


def parse_manifest(data: bytes, where: str) -> dict[str, Any]:
    """The fields of an S3 Inventory ``manifest.json`` this tool uses: ``form``,
    ``source_bucket``, ``destination_bucket``, ``keys`` (the data files' keys in the
    destination bucket), ``md5`` (each one's ``MD5checksum``), ``columns`` (CSV) and
    ``date_ms`` (``creationTimestamp``). Raises :class:`InventoryError` naming ``where`` and
    the field for anything missing or wrong."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InventoryError(f"{where} is not an S3 Inventory manifest (not JSON: {exc})") from None
    if not isinstance(doc, dict):
        raise InventoryError(f"{where} is not an S3 Inventory manifest (not a JSON object)")

    def need(name: str) -> Any:
        if doc.get(name) in (None, ""):
            raise InventoryError(f"{where}: the S3 Inventory manifest has no {name!r}")
        return doc[name]

    kind = str(need("fileFormat")).upper()
    forms = {"CSV": Form.S3_CSV, "PARQUET": Form.S3_PARQUET, "ORC": Form.S3_ORC}
    if kind not in forms:
        raise InventoryError(f"{where}: fileFormat {kind!r} is not CSV, Parquet or ORC")
    files = need("files")
    if not isinstance(files, list) or not all(isinstance(f, dict) and f.get("key") for f in files):
        raise InventoryError(f"{where}: 'files' must be a list of objects with a 'key'")
    bad_md5 = [f["key"] for f in files if not _MD5.fullmatch(str(f.get("MD5checksum", "")))]
    if bad_md5:
        raise InventoryError(
            f"{where}: the entry of {bad_md5[0]} in 'files' has no MD5checksum (32 hex digits): "
            "its data file cannot be verified"
        )
    try:
        date_ms = int(need("creationTimestamp"))
    except (TypeError, ValueError):
        raise InventoryError(f"{where}: creationTimestamp is not epoch milliseconds") from None
    columns: tuple[str, ...] = ()
    if forms[kind] is Form.S3_CSV:
        columns = tuple(c.strip() for c in str(need("fileSchema")).split(","))
        normal = [field_name(c) for c in columns]
        missing = [f for f in REPORT_FIELDS if f not in normal]
        if missing:
            raise InventoryError(
                f"{where}: the CSV fileSchema has no {', '.join(missing)} column "
                f"(fileSchema: {doc['fileSchema']!r})"
            )
    return {
        "form": forms[kind],
        "source_bucket": str(need("sourceBucket")),
        "destination_bucket": str(need("destinationBucket")).removeprefix("arn:aws:s3:::"),
        "keys": [str(f["key"]) for f in files],
        "md5": [str(f["MD5checksum"]).lower() for f in files],
        "columns": columns,
        "date_ms": date_ms,
    }


def table_root(
    store: TableStore,
    source: InventorySource,
    partition_columns: Sequence[str],
    configuration: Mapping[str, str],
) -> TableRoot:
    """Where the table at ``store`` is in ``source``'s rows. Raises :class:`InventoryError`
    for a report of another bucket, or a report given for a table on local disk."""
    columns = tuple(partition_columns)
    config = tuple(sorted(configuration.items()))
    if isinstance(store, S3TableStore):
        key = store.root.key.strip("/")
        key_prefix = f"{key}/" if key else ""
        if source.form.is_report:
            if source.source_bucket != store.root.bucket:
                raise InventoryError(
                    f"inventory {source.location} lists bucket {source.source_bucket!r}, "
                    f"not the table's bucket {store.root.bucket!r}"
                )
            return TableRoot(source.form, (key_prefix,), store.root.bucket, columns, config)
        uris = tuple(f"{s}://{store.root.bucket}/{key_prefix}" for s in S3_SCHEMES)
        return TableRoot(source.form, uris, None, columns, config)
    if isinstance(store, LocalTableStore):
        if source.form.is_report:
            raise InventoryError(
                f"inventory {source.location} is an S3 Inventory report; the table "
                f"{store.uri} is on local disk (use a Parquet or Delta inventory table)"
            )
        roots = {str(store.root).rstrip("/")}
        if real := store.real_root():
            roots.add(real.rstrip("/"))
        uris = tuple(
            f"{scheme}{root}/" for root in sorted(roots) for scheme in ("", "file:", "file://")
        )
        return TableRoot(source.form, uris, None, columns, config)
    raise InventoryError(f"--inventory: no inventory support for the store of {store.uri}")


def _column(batch: pa.Table, name: str, where: str, available: Mapping[str, str]) -> pa.Array:
    if name not in available:
        raise InventoryError(
            f"{where}: no {name!r} column (columns: {', '.join(batch.column_names)})"
        )
    return batch.column(available[name])


def _int64(values: Any, what: str, where: str) -> pa.ChunkedArray:
    """``values`` as int64 (a timestamp or, for ``lastmodifieddate``, ISO text: epoch ms);
    an empty or blank text field is null (a delete marker's ``Size`` in a CSV report)."""
    try:
        if pa.types.is_timestamp(values.type):
            return values.cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64())
        if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
            blank = pc.equal(pc.utf8_trim_whitespace(values), "")
            values = pc.if_else(blank, pa.scalar(None, values.type), values)
            if what == "lastmodifieddate":
                return values.cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64())
        return values.cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InventoryError(f"{where}: column {what!r} is not usable: {exc}") from None


def _flag(values: Any) -> pa.ChunkedArray:
    """A boolean column that may be text (CSV ``true``/``false``)."""
    if pa.types.is_boolean(values.type):
        return values
    return pc.equal(pc.utf8_lower(values.cast(pa.string())), "true")


def normalized(batch: pa.RecordBatch | pa.Table, form: Form, where: str) -> pa.Table:
    """One batch of raw inventory rows as ``location`` (a report: the bucket and the decoded
    key joined by ``/``; a table: the path), ``size``, ``mtime_ms``, keeping only current
    objects (a report: not a delete marker, the latest version) and files (a table: not
    ``isDir``). Raises :class:`InventoryError` naming ``where`` for a missing or unusable
    column."""
    table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    if form.is_report:
        available = {field_name(n): n for n in table.column_names}
        bucket = _column(table, "bucket", where, available).cast(pa.string())
        key = _column(table, "key", where, available).cast(pa.string())
        if form is Form.S3_CSV:
            key = _url_decoded(key)
        size = _int64(_column(table, "size", where, available), "size", where)
        mtime = _int64(
            _column(table, "lastmodifieddate", where, available), "lastmodifieddate", where
        )
        keep = pc.and_(pc.is_valid(key), pc.is_valid(bucket))
        if "islatest" in available:
            keep = pc.and_(keep, pc.invert(pc.equal(_flag(table[available["islatest"]]), False)))
        if "isdeletemarker" in available:
            marker = pc.fill_null(_flag(table[available["isdeletemarker"]]), False)
            keep = pc.and_(keep, pc.invert(marker))
        location = pc.binary_join_element_wise(bucket, key, "/")
    else:
        available = {n: n for n in table.column_names}
        missing = [c for c in INVENTORY_COLUMNS if c not in available]
        if missing:
            raise InventoryError(
                f"{where}: not a USING INVENTORY table: no {', '.join(missing)} column "
                f"(needs {', '.join(INVENTORY_COLUMNS)})"
            )
        location = table["path"].cast(pa.string())
        size = _int64(table["length"], "length", where)
        mtime = _int64(table["modificationTime"], "modificationTime", where)
        keep = pc.and_(pc.is_valid(location), pc.invert(pc.fill_null(_flag(table["isDir"]), False)))
    out = pa.table({"location": location, "size": pc.fill_null(size, 0), "mtime_ms": mtime})
    return out.filter(pc.fill_null(keep, False))


def _url_decoded(keys: pa.ChunkedArray) -> pa.ChunkedArray:
    """S3 Inventory's CSV keys decoded (form encoding: ``+`` is a space, ``%XX`` a byte of
    UTF-8); only the keys that hold ``%`` or ``+`` leave Arrow."""
    needs = pc.match_substring_regex(keys, r"[%+]")
    if not pc.any(needs).as_py():
        return keys
    values = keys.to_pylist()
    for i, flag in enumerate(needs.to_pylist()):
        if flag:
            values[i] = urllib.parse.unquote_plus(values[i])
    return pa.chunked_array([pa.array(values, pa.string())])


def table_rows(batch: pa.RecordBatch | pa.Table, root: TableRoot, where: str) -> TableRows:
    """The one rule of which inventory rows are the table's files (module docstring), for one
    batch of raw rows (:func:`normalized` first). Raises :class:`InventoryError` naming
    ``where`` for unusable rows."""
    rows = normalized(batch, root.form, where)
    newest = pc.max(rows["mtime_ms"]).as_py() if rows.num_rows else None
    location = rows["location"]
    heads = (
        tuple(f"{root.bucket}/{p}" for p in root.prefixes) if root.form.is_report else root.prefixes
    )
    under_mask = pc.starts_with(location, heads[0])
    rel = pc.utf8_slice_codeunits(location, len(heads[0]))
    for head in heads[1:]:
        here = pc.starts_with(location, head)
        under_mask = pc.or_(under_mask, here)
        rel = pc.if_else(here, pc.utf8_slice_codeunits(location, len(head)), rel)
    # a key ending in "/" is a directory marker; a doubled slash or dot segment is no file name
    proper = pc.invert(pc.match_substring_regex(rel, r"(^|/)\.\.?(/|$)|//|^/|^$|/$"))
    mask = pc.and_(under_mask, proper)
    under = rows.filter(under_mask).num_rows
    files = pa.table(
        {"path": rel, "size": rows["size"], "mtime_ms": rows["mtime_ms"]}, schema=FILES_SCHEMA
    ).filter(mask)
    hidden_dirs: set[str] = set()
    hidden_files = 0
    maybe = pc.match_substring_regex(files["path"], _MAY_BE_HIDDEN.pattern)
    if pc.any(maybe).as_py():
        is_hidden = root.is_hidden()
        visible = maybe.to_pylist()
        for i, (flag, path) in enumerate(zip(visible, files["path"].to_pylist(), strict=True)):
            if not flag:
                visible[i] = True
                continue
            parts = path.split("/")
            hidden_at = next((k for k, p in enumerate(parts) if is_hidden(p)), None)
            visible[i] = hidden_at is None
            if hidden_at is None:
                continue
            if hidden_at == len(parts) - 1:
                hidden_files += 1
            else:
                hidden_dirs.add("/".join(parts[: hidden_at + 1]))
        files = files.filter(pa.array(visible, pa.bool_()))
    return TableRows(files, rows.num_rows, under, newest, hidden_dirs, hidden_files)


def local_path(location: str) -> Path | None:
    """An inventory location as a local path, or None for an S3 URI
    (:func:`~deltaguard.tools.storage.local_path`). Raises :class:`InventoryError`
    for another scheme."""
    try:
        return storage_local_path(location)
    except StorageError:
        raise InventoryError(
            f"--inventory {location!r}: use a local path, file:, s3:// or s3a://"
        ) from None
