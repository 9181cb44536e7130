"""The Spark engine's inventory reader: the listing's files from an inventory (the rules are
:mod:`deltaguard.tools.orphans.inventory`'s, shared with the local engine).

The inventory's data files are read with ``spark.read`` (CSV with the report's column names,
gzip by extension; Parquet; ORC; a Delta inventory table's live files, as the driver resolved
them, :func:`~deltaguard.tools.orphans.inventory_read.open_inventory`), and every Arrow batch
goes through :func:`~deltaguard.tools.orphans.inventory.table_rows` in the executors
(in batches of :data:`BATCH_ROWS` rows of a partition). A report's data files are first checked
against its ``MD5checksum`` on the driver
(:func:`~deltaguard.tools.orphans.inventory_read.verify_data_files`). Each batch emits its files and a few rows of counts; the driver collects
only the counts and the hidden directories, never a file path.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltaguard.tools.orphans.inventory import (
    Form,
    InventoryError,
    InventoryReport,
    InventorySource,
    TableRoot,
    inventory_date,
    normalized,
    table_rows,
)
from deltaguard.tools.orphans.inventory_read import verify_data_files
from deltaguard.tools.spark_engine.listing import FILES_SCHEMA, DistributedListing
from deltaguard.tools.spark_engine.store_spec import LITERAL_PATHS
from deltaguard.tools.storage import S3Options

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_ROWS_SCHEMA = f"kind int, {FILES_SCHEMA}"
#: Rows of a partition given to the shared rule at a time.
BATCH_ROWS = 65_536
#: Row kinds: a file; counts (size: rows read, mtime_ms: newest); a hidden directory (path);
#: counts (size: rows under the root); counts (size: files emitted).
_FILE, _READ, _HIDDEN_DIR, _UNDER, _EMITTED = 0, 1, 2, 3, 4


@dataclass
class SparkInventory:
    """The inventory as the scan's listing, and the report's account of it."""

    listing: DistributedListing
    report: InventoryReport


def _hadoop(location: str) -> str:
    """A data file's location as Spark's Hadoop filesystems name it."""
    for scheme in ("s3://", "s3n://"):
        if location.startswith(scheme):
            return "s3a://" + location.removeprefix(scheme)
    return location if ":" in location.split("/")[0] else f"file:{location}"


def raw_frame(spark: SparkSession, source: InventorySource) -> DataFrame:
    """Every data file of ``source`` as one DataFrame, columns as the files hold them. Raises
    :class:`~deltaguard.tools.orphans.inventory.InventoryError` naming the file (or, when
    Spark does not say which, the inventory) if Spark cannot read their schema."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    try:
        return _read(spark, source)
    except (PySparkException, Py4JError) as exc:
        text = str(exc)
        named = [f for f in source.data_files if f.rpartition("/")[2] in text]
        what = named[0] if named else f"inventory {source.location}"
        kind = source.form.value.removeprefix("s3-inventory-").removesuffix("-table")
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        raise InventoryError(f"{what} is not readable {kind}: {first}") from None


def _read(spark: SparkSession, source: InventorySource) -> DataFrame:
    files = [_hadoop(f) for f in source.data_files]
    if source.form is Form.S3_CSV:
        from pyspark.sql.types import StringType, StructField, StructType

        schema = StructType([StructField(c, StringType()) for c in source.columns])
        reader = spark.read.options(**LITERAL_PATHS).schema(schema)
        return reader.option("header", False).csv(files)
    if source.form is Form.S3_ORC:
        return spark.read.options(**LITERAL_PATHS).orc(files)
    return spark.read.options(**LITERAL_PATHS).parquet(*files)


def _rows_of(root: TableRoot, where: str, names: list[str]) -> Any:
    """Each partition's rows in Arrow batches through the shared rule, as row tuples."""

    def run(rows: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        each = iter(rows)
        while chunk := list(itertools.islice(each, BATCH_ROWS)):
            batch = pa.table({n: [r[k] for r in chunk] for k, n in enumerate(names)})
            got = table_rows(batch, root, where)
            files = got.files
            yield from zip(
                itertools.repeat(_FILE),
                files["path"].to_pylist(),
                files["size"].to_pylist(),
                files["mtime_ms"].to_pylist(),
                strict=False,
            )
            yield _READ, None, got.rows, got.newest_ms
            yield _UNDER, None, got.under, None
            yield _EMITTED, None, files.num_rows, None
            for hidden in sorted(got.hidden_dirs):
                yield _HIDDEN_DIR, hidden, 0, None

    return run


def inventory_listing_spark(
    spark: SparkSession, source: InventorySource, root: TableRoot, s3: S3Options | None = None
) -> SparkInventory:
    """The table's files in ``source`` as a :class:`DistributedListing` (persisted until its
    ``release``) and the report's account (the date by
    :func:`~deltaguard.tools.orphans.inventory.inventory_date`). Raises
    :class:`~deltaguard.tools.orphans.inventory.InventoryError` for a report's data file that
    does not match its ``MD5checksum`` (read with ``s3``'s options) or missing columns (on the
    driver, before any job); unreadable files fail the job."""
    verify_data_files(source, s3 or S3Options())
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType, TimestampType

    raw = raw_frame(spark, source)
    empty = pa.table({name: pa.array([], pa.string()) for name in raw.columns})
    normalized(empty, source.form, source.location)  # the columns, checked on the driver
    frame = raw.select(  # timestamps as epoch ms: Python's datetimes would be local times
        *(
            F.expr(f"unix_millis(`{f.name}`)").alias(f.name)
            if isinstance(f.dataType, TimestampType | TimestampNTZType)
            else F.col(f"`{f.name}`")
            for f in raw.schema.fields
        )
    )
    produced = frame.rdd.mapPartitions(_rows_of(root, source.location, frame.columns))
    rows = spark.createDataFrame(produced, _ROWS_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
    counts = rows.filter(F.col("kind") != _FILE).collect()
    read = sum(r["size"] for r in counts if r.kind == _READ)
    newest = max(
        (r.mtime_ms for r in counts if r.kind == _READ and r.mtime_ms is not None), default=None
    )
    under = sum(r["size"] for r in counts if r.kind == _UNDER)
    emitted = sum(r["size"] for r in counts if r.kind == _EMITTED)
    hidden_dirs = sorted({r.path for r in counts if r.kind == _HIDDEN_DIR})
    date_ms, date_source = inventory_date(source, newest)
    files = rows.filter(F.col("kind") == _FILE).select("path", "size", "mtime_ms")
    listing = DistributedListing(files, 0, hidden_dirs, emitted, [rows])
    report = InventoryReport(source.location, source.form, date_ms, date_source, read, under)
    return SparkInventory(listing, report)
