"""One idempotent append of a DataFrame to a Delta table, and where it landed.

:func:`keyed_append` writes ``df`` with Delta's idempotent-write options ``txnAppId`` /
``txnVersion`` (a :class:`TxnKey`). Delta records the pair in the commit (a ``txn`` action) and
skips, without writing any data file, a later write whose ``txnVersion`` is ``<=`` the version
already recorded for that ``txnAppId`` in the table. After the write the function finds the
commit that carries the key in ``_delta_log`` (read through Hadoop's FileSystem, so any scheme
Spark can read works) and reports its version and Delta's own ``numOutputRows``; no commit with
the key means Delta skipped the write because an earlier run already committed it.

Also here: which Delta exceptions are retryable conflicts (:func:`is_retryable_conflict`), and
how a DataFrame's schema compares with a table's (:func:`plan_write`): a write to a table that
does not exist creates it, a write with columns the table lacks must evolve it (``mergeSchema``).

Classic (py4j) PySpark only: importing :mod:`delta.exceptions` installs delta-spark's converter,
which turns a JVM ``io.delta.exceptions.ConcurrentAppendException`` (etc.) into the Python class
of the same name (on delta-spark 4 a subclass of the classes in ``delta.exceptions.base``,
caught here).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import orjson

# Importing delta.exceptions installs the JVM -> Python conversion of Delta conflicts. Its names
# are the base classes on delta-spark 4 (``delta.exceptions.base``) and the classes themselves
# on delta-spark 3.3 (a module, no ``base``): this import works on both Spark lines.
from delta.exceptions import (
    ConcurrentAppendException,
    MetadataChangedException,
    ProtocolChangedException,
)

from deltaguard.logstore.commit_names import commit_file_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

#: Conflicts after which the same append, tried again on the new table state, can succeed:
#: another blind append that Delta cannot reconcile with this one (ConcurrentAppendException),
#: and a concurrent creation of the table or change of its schema or protocol (the other two).
#: Not retryable (fail at once): ConcurrentTransactionException (two runs with the same key at
#: the same time), delete conflicts (a blind append never causes them), everything else.
RETRYABLE_CONFLICTS: tuple[type[Exception], ...] = (
    ConcurrentAppendException,
    ProtocolChangedException,
    MetadataChangedException,
)


def is_retryable_conflict(exc: BaseException) -> bool:
    """True for the Delta conflicts in :data:`RETRYABLE_CONFLICTS`."""
    return isinstance(exc, RETRYABLE_CONFLICTS)


@dataclass(frozen=True)
class TxnKey:
    """Delta's idempotency key of one write: ``txnAppId`` names the write, ``txnVersion`` the run.

    A re-run must use the same ``app_id`` and ``version`` for the same write; a new run uses a
    higher ``version``. Delta skips the write if the table already records a ``txnVersion`` >=
    ``version`` for ``app_id``.
    """

    app_id: str
    version: int

    def __post_init__(self) -> None:
        if not self.app_id:
            raise ValueError("txnAppId must not be empty")
        if self.version < 0:
            raise ValueError(f"txnVersion must be >= 0, got {self.version}")

    def options(self) -> dict[str, str]:
        return {"txnAppId": self.app_id, "txnVersion": str(self.version)}


class WriteMode(StrEnum):
    """How a write changes the table besides adding rows."""

    #: The table does not exist: this write creates it.
    CREATE = "create"
    #: The DataFrame has columns the table lacks: this write adds them (``mergeSchema``).
    EVOLVE = "evolve"
    #: The table exists and has every column of the DataFrame.
    APPEND = "append"


def _missing(df_type: DataType, table_type: DataType, prefix: str) -> list[str]:
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(df_type, StructType) and isinstance(table_type, StructType):
        have = {f.name.lower(): f for f in table_type.fields}
        out: list[str] = []
        for field in df_type.fields:
            name = f"{prefix}{field.name}"
            if field.name.lower() not in have:
                out.append(name)
            else:
                out += _missing(field.dataType, have[field.name.lower()].dataType, name + ".")
        return out
    if isinstance(df_type, ArrayType) and isinstance(table_type, ArrayType):
        return _missing(df_type.elementType, table_type.elementType, prefix)
    if isinstance(df_type, MapType) and isinstance(table_type, MapType):
        return _missing(df_type.valueType, table_type.valueType, prefix)
    return []


def missing_columns(df_schema: StructType, table_schema: StructType) -> list[str]:
    """Columns (dotted for nested struct fields) of ``df_schema`` that ``table_schema`` lacks,
    compared case-insensitively as Spark resolves them. Type differences are not reported:
    Delta decides those when it writes (and fails the write if they do not fit)."""
    return _missing(df_schema, table_schema, "")


def plan_write(df_schema: StructType, table_schema: StructType | None) -> WriteMode:
    """CREATE for a missing table, EVOLVE if the DataFrame adds columns, else APPEND."""
    if table_schema is None:
        return WriteMode.CREATE
    return WriteMode.EVOLVE if missing_columns(df_schema, table_schema) else WriteMode.APPEND


def table_schema(spark: SparkSession, table: str) -> StructType | None:
    """The table's current schema (a fresh snapshot), or None if ``table`` is not a Delta table."""
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, table):
        return None
    return spark.read.format("delta").load(table).schema


@dataclass(frozen=True)
class AppendResult:
    """``committed``: this call created a commit (False: Delta skipped the write because the table
    already records the key). ``version`` and ``rows`` are those of that commit."""

    committed: bool
    version: int | None
    rows: int


def _known_version(spark: SparkSession, table: str) -> int:
    """The table version this driver last saw (-1 if none): a lower bound of any later commit."""
    jvm: Any = spark._jvm
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, table)
    snapshot = log.unsafeVolatileSnapshot()
    return -1 if snapshot is None else int(snapshot.version())


def read_commit(spark: SparkSession, table: str, version: int) -> list[dict[str, Any]]:
    """The actions of ``_delta_log/<version>.json``, read through Hadoop's FileSystem."""
    jvm: Any = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(
        f"{table.rstrip('/')}/_delta_log/{commit_file_name(version)}"
    )
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    stream = fs.open(path)
    try:
        text = str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


def find_keyed_commit(
    spark: SparkSession, table: str, key: TxnKey, after: int, upto: int
) -> tuple[int, dict[str, Any]] | None:
    """The newest commit in ``(after, upto]`` whose ``txn`` action carries ``key``, with its
    ``commitInfo``; None if there is none."""
    for version in range(upto, after, -1):
        actions = read_commit(spark, table, version)
        txns = [a["txn"] for a in actions if "txn" in a]
        if any(t.get("appId") == key.app_id and t.get("version") == key.version for t in txns):
            info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
            return version, info
    return None


def keyed_append(
    spark: SparkSession,
    table: str,
    df: DataFrame,
    key: TxnKey,
    *,
    merge_schema: bool = False,
    options: dict[str, str] | None = None,
) -> AppendResult:
    """Appends ``df`` to the Delta table at ``table`` (creating it if absent) in one commit
    tagged with ``key``; ``merge_schema`` adds the DataFrame's new columns to the table.

    Atomic: the rows are in the table after one commit, or not at all. Not retried here: Delta's
    conflicts are raised as the ``delta.exceptions`` classes (see :func:`is_retryable_conflict`),
    anything else as PySpark raised it. ``options`` are further DataFrameWriter options; they
    must not set ``txnAppId``, ``txnVersion`` or ``mergeSchema``.
    """
    extra = dict(options or {})
    clash = {"txnAppId", "txnVersion", "mergeSchema"} & set(extra)
    if clash:
        raise ValueError(f"options must not set {sorted(clash)}: keyed_append sets them")
    before = _known_version(spark, table)
    writer = df.write.format("delta").mode("append").options(**extra, **key.options())
    if merge_schema:
        writer = writer.option("mergeSchema", "true")
    writer.save(table)
    found = find_keyed_commit(spark, table, key, before, _known_version(spark, table))
    if found is None:
        return AppendResult(committed=False, version=None, rows=0)
    version, info = found
    rows = int(info.get("operationMetrics", {}).get("numOutputRows", 0))
    return AppendResult(committed=True, version=version, rows=rows)
