"""The reference sets of the latest snapshot, read by Spark.

The same sets as :mod:`deltaguard.tools.orphans.references` (read its docstring for what each
means and why ``named_in_log`` covers every version that can still be read), computed without holding
them in one process:

* every retained JSON commit and compaction is read with ``spark.read.json`` (an explicit
  schema, ``FAILFAST``: a line that is not JSON fails the job); every checkpoint the snapshot
  or ``named_in_log`` needs (the snapshot's own, the oldest, the ones after a gap:
  :func:`~deltaguard.tools.orphans.references.checkpoints_besides`) and their sidecars with
  ``spark.read.parquet``, projected onto the same columns (:data:`RAW_SCHEMA`: the paths,
  deletion vector ids and deletion timestamps of file actions; metaData, protocol and
  sidecar actions as JSON text, parsed on the driver by the local engine's parser);
* the actions are mapped in Spark SQL when their raw path is already its decoded path
  relative to the root and their DV (if any) is inline
  (:data:`~deltaguard.tools.deltalog.paths.NEEDS_RULE_OR_DECODING`); the others (encoded,
  absolute or unnormalized paths, DVs in files) go through the one path rule,
  :func:`~deltaguard.tools.deltalog.paths.relative_to_root`, and
  :meth:`~deltaguard.tools.deltalog.actions.DeletionVector.file_path` in the executors; a
  file action without a path fails the job naming its file;
* the snapshot is reconciled in Spark: newest version wins per ``(path, DV id)`` over the
  snapshot's checkpoint and the JSON files after it, chosen by the local engine's rule
  (:func:`~deltaguard.tools.deltalog.listing.json_chain`: each commit, or the log compaction
  that covers a missing one).

Only the log listing (file names in ``_delta_log``), the newest metadata and protocol, and the
names of sidecars reach the driver. A line that is not JSON, or a file action without a path,
fails the job (a reference we cannot read is one we could miss).

**No read of the log skips a damaged file.** A session with
``spark.sql.files.ignoreCorruptFiles`` or ``spark.sql.files.ignoreMissingFiles`` on would
drop a truncated checkpoint part (or one deleted after listing) silently: its references
would vanish, the fallback to an older checkpoint would never trigger, and live files would
look unreferenced. Every read here (the scan's, the re-read before delete, the audit's file
check) goes through :func:`log_reader`, which sets both data-source options to ``false``,
and runs inside :func:`strict_file_reads`, which also sets both session settings to ``false``
until the engine's work is done and then restores them (the options alone are not enough:
a truncated part of a multi-part checkpoint was still skipped in one of Spark's jobs).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import orjson

from deltaguard.tools.deltalog.actions import (
    DV_STORAGE_TYPES,
    ActionError,
    DeletionVector,
    Metadata,
    Protocol,
    Sidecar,
    decode_path,
    parse_action,
)
from deltaguard.tools.deltalog.checkpoint import LOG_DIR, CheckpointRef, sidecar_rel_path
from deltaguard.tools.deltalog.errors import CorruptLogError
from deltaguard.tools.deltalog.features import check_readable
from deltaguard.tools.deltalog.filetable import key_string
from deltaguard.tools.deltalog.listing import LogListing, json_chain
from deltaguard.tools.deltalog.names import LogFileKind
from deltaguard.tools.deltalog.paths import NEEDS_RULE_OR_DECODING, relative_to_root
from deltaguard.tools.deltalog.snapshot import unreconstructable
from deltaguard.tools.orphans.references import checkpoints_besides
from deltaguard.tools.spark_engine.store_spec import LITERAL_PATHS, StoreSpec
from deltaguard.tools.spark_engine.table_lister import observed
from deltaguard.tools.storage import TableStore, table_not_found
from deltaguard.tools.storage.errors import TableNotFoundError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameReader, Observation, SparkSession

P = ParamSpec("P")
R = TypeVar("R")

#: One parsed file action: its key, path (relative), the DV file (relative, or null), kind,
#: version (of its log file), whether the snapshot's segment includes that file, deletion
#: timestamp, and whether the path / the DV file is outside the table root (then ``path`` /
#: ``dv_path`` is the log's absolute location: the audit checks those files; the reference
#: sets leave them out, as the local engine's do).
ACTIONS_SCHEMA = (
    "key string, path string, dv_path string, kind string, version long, in_segment boolean, "
    "deletion_ts long, outside boolean, dv_outside boolean"
)
#: The reference flags of one path (what :class:`~..references.References` holds as sets).
REFS_SCHEMA = (
    "path string, live boolean, protected boolean, named_in_log boolean, tombstone boolean, "
    "tombstone_ms long, change_data boolean"
)
_FILE_ACTIONS = ("add", "remove", "cdc")
#: The actions that name no data file (read on the driver).
_NON_FILE_ACTIONS = ("metaData", "protocol", "sidecar")


@dataclass(frozen=True)
class UncheckedPathRule:
    """Actions planned without the path rule's branch: ``count`` (an observation on the raw
    log rows) counts, in the first job that computes them, the rows that need the rule, and
    ``with_rule`` plans the actions with it."""

    count: Observation
    with_rule: Callable[[], DataFrame]


@dataclass
class SparkLog:
    """The latest snapshot's ``version``, ``metadata`` and ``protocol``, and ``actions``: every
    file action of the retained log (:data:`ACTIONS_SCHEMA`), computed when used (from the
    snapshot's checkpoint, held in ``cached`` until :meth:`release`, and the other log
    files, read again); ``notes``: the damaged checkpoints skipped (the local snapshot's
    notes); ``one_checkpoint``: see below."""

    version: int
    metadata: Metadata
    protocol: Protocol
    actions: DataFrame
    notes: list[str] = field(default_factory=list)
    cached: list[DataFrame] = field(default_factory=list)
    #: the snapshot is its checkpoint alone (no commit after it): each ``(path, DV id)`` is
    #: in it once, so nothing needs reconciling (:func:`reference_rows`)
    one_checkpoint: bool = False
    #: the rows of ``cached`` (the snapshot's checkpoint: all its actions)
    checkpoint_rows: int = 0
    #: set while ``actions`` leave out the path rule's branch unchecked
    #: (``read_log(defer_path_rule=True)``); :func:`settle_path_rule` settles it
    unchecked: UncheckedPathRule | None = None

    def release(self) -> None:
        for frame in self.cached:
            frame.unpersist()


#: The data-source options of every read of the log (see the module docstring).
STRICT_READ_OPTIONS = {
    "ignoreCorruptFiles": "false",
    "ignoreMissingFiles": "false",
    # parquet-mr checks each checkpoint page against the CRC-32 its writer stored (Delta
    # Spark's checkpoints carry them): a flipped bit fails the read, naming the file, instead
    # of changing a path and leaving the file it names unreferenced (a data source option
    # reaches the reader's Hadoop configuration)
    "parquet.page.verify-checksum.enabled": "true",
    **LITERAL_PATHS,  # the table's own log files, never a glob's matches
}


#: The session settings :func:`strict_file_reads` turns off.
SKIPPING_SETTINGS = ("spark.sql.files.ignoreCorruptFiles", "spark.sql.files.ignoreMissingFiles")


@contextmanager
def strict_file_reads(spark: SparkSession) -> Iterator[None]:
    """Both :data:`SKIPPING_SETTINGS` off in ``spark`` for the block, restored afterwards (the
    module docstring says why)."""
    saved = {key: spark.conf.get(key, None) for key in SKIPPING_SETTINGS}
    for key in SKIPPING_SETTINGS:
        spark.conf.set(key, "false")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def strict_reads(
    job: Callable[Concatenate[SparkSession, P], R],
) -> Callable[Concatenate[SparkSession, P], R]:
    """``job`` (its first argument the session) run inside :func:`strict_file_reads`: no file
    read skips a damaged file. Same arguments, result and errors."""

    @functools.wraps(job)
    def run(spark: SparkSession, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with strict_file_reads(spark):
            return job(spark, *args, **kwargs)

    return run


def log_reader(spark: SparkSession) -> DataFrameReader:
    """A reader for log files that fails on a damaged or vanished file, whatever the session's
    ``spark.sql.files.ignoreCorruptFiles``/``ignoreMissingFiles`` say."""
    return spark.read.options(**STRICT_READ_OPTIONS)


def _first_missing(listing: LogListing, start: int, latest: int) -> int | None:
    """The first version in [start, latest] neither a commit nor a log compaction covers, by
    the local engine's rule (:func:`~deltaguard.tools.deltalog.listing.json_chain`)."""
    chain = json_chain(listing, start, latest)
    return chain if isinstance(chain, int) else None


def require_reconstructable(listing: LogListing, uri: str, store: TableStore) -> None:
    """Raises :class:`~deltaguard.tools.storage.errors.TableNotFoundError` if ``listing`` (of
    ``store``) has no commit (naming a location where nothing exists as such), and :class:`~deltaguard.tools.deltalog.errors.VersionNotFoundError` if a commit
    after the newest checkpoint is missing (as the local engine's
    :func:`~deltaguard.tools.deltalog.snapshot.load_snapshot` does, in its words:
    :func:`~deltaguard.tools.deltalog.snapshot.unreconstructable`): the check the CLI runs
    before it starts a JVM. :func:`read_log` then falls back past a damaged checkpoint."""
    latest = listing.latest_version
    if latest is None:
        raise table_not_found(store, f"no commits in {LOG_DIR}/")
    own = listing.checkpoints[-1] if listing.checkpoints else None
    start = own.version + 1 if own is not None else 0
    missing = _first_missing(listing, start, latest)
    if missing is not None:
        raise unreconstructable(uri, latest, missing, own, [])


def _spark_error(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _own_checkpoint(
    spark: SparkSession, spec: StoreSpec, listing: LogListing, uri: str
) -> tuple[CheckpointRef | None, list[DataFrame], int, list[str]]:
    """The checkpoint the snapshot starts from, its lines (persisted, read in full once) and
    their number, and a note per newer checkpoint skipped because Spark could not read it. The
    local engine's rule (:func:`~deltaguard.tools.deltalog.snapshot.load_snapshot`): the
    newest checkpoint whose commits after it are all retained and that reads in full (every
    part, every sidecar); a damaged one is skipped for the next older one (or commit 0). Raises
    :class:`~deltaguard.tools.deltalog.errors.VersionNotFoundError` if the commits after the
    one tried are not all retained, or :class:`CorruptLogError` if every checkpoint that could
    serve is damaged."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    latest = listing.latest_version
    if latest is None:
        raise TableNotFoundError(f"{uri} is not a Delta table: no commits in {LOG_DIR}/")
    skipped: list[tuple[CheckpointRef, str]] = []
    for ref in [*reversed(listing.checkpoints), None]:
        start = ref.version + 1 if ref is not None else 0
        missing = _first_missing(listing, start, latest)
        if missing is not None:
            raise unreconstructable(uri, latest, missing, ref, skipped)
        if ref is None:
            return None, [], 0, _skipped_notes(skipped)
        parts: list[DataFrame] = []
        rows = 0
        try:
            parts = _checkpoint_actions(spark, spec, ref, True)
            for part in parts:
                rows += part.persist().count()  # every row decoded: a damaged page fails here
        except (PySparkException, Py4JError, ValueError) as exc:
            for part in parts:
                part.unpersist()
            skipped.append((ref, f"{ref.files[0]}: {_spark_error(exc)}"))
            continue
        return ref, parts, rows, _skipped_notes(skipped)
    raise AssertionError("unreachable: the loop ends with ref=None")


def _skipped_notes(skipped: list[tuple[CheckpointRef, str]]) -> list[str]:
    return [f"skipped checkpoint {ref.files[0]}: {why}" for ref, why in skipped]


#: The columns the log is read into (both JSON commits and checkpoint parquet): the file
#: actions' fields the references need (nested projection: nothing else of a checkpoint is
#: decoded), and the small actions as their JSON bodies (parsed on the driver).
_DV_FIELDS = "storageType string, pathOrInlineDv string, offset int"
RAW_SCHEMA = (
    f"add struct<path string, deletionVector struct<{_DV_FIELDS}>>, "
    f"remove struct<path string, deletionTimestamp long, deletionVector struct<{_DV_FIELDS}>>, "
    "cdc struct<path string>, metaData string, protocol string, sidecar string"
)


def _raw_columns(df: DataFrame) -> DataFrame:
    """``df`` (a log file read) projected onto :data:`RAW_SCHEMA`: fields its schema lacks are
    null, struct bodies of small actions become their JSON text (``to_json`` drops nulls as
    the JSON log does)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    schema = df.schema

    def field(path: str, kind: str) -> Any:
        node: Any = schema
        for name in path.split("."):
            if not isinstance(node, StructType) or name not in node.fieldNames():
                return F.lit(None).cast(kind)
            node = node[name].dataType
        col = F.col(path)
        return F.to_json(col) if kind == "string" and isinstance(node, StructType) else col

    def dv(action: str) -> Any:
        base = f"{action}.deletionVector"
        return F.when(
            field(f"{base}.storageType", "string").isNotNull(),
            F.struct(
                field(f"{base}.storageType", "string").alias("storageType"),
                field(f"{base}.pathOrInlineDv", "string").alias("pathOrInlineDv"),
                field(f"{base}.offset", "int").alias("offset"),
            ),
        )

    def present(action: str, body: Any) -> Any:
        return F.when(F.col(action).isNotNull(), body) if action in schema.fieldNames() else None

    def struct_or_null(action: str, *cols: Any) -> Any:
        body = present(action, F.struct(*cols))
        return body if body is not None else F.lit(None)

    add = struct_or_null(
        "add", field("add.path", "string").alias("path"), dv("add").alias("deletionVector")
    )
    remove = struct_or_null(
        "remove",
        field("remove.path", "string").alias("path"),
        field("remove.deletionTimestamp", "long").alias("deletionTimestamp"),
        dv("remove").alias("deletionVector"),
    )
    cdc = struct_or_null("cdc", field("cdc.path", "string").alias("path"))
    raw = spark_schema(RAW_SCHEMA)
    return df.select(
        *[
            c.cast(raw[name].dataType).alias(name)
            for name, c in (("add", add), ("remove", remove), ("cdc", cdc))
        ],
        *[field(name, "string").alias(name) for name in _NON_FILE_ACTIONS],
    )


def spark_schema(ddl: str) -> Any:
    """A DDL schema string as a :class:`~pyspark.sql.types.StructType`."""
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(ddl)


def _json_actions(spark: SparkSession, paths: list[str], in_segment: Any) -> DataFrame:
    """The actions of JSON log files (:data:`RAW_SCHEMA`, ``spark.read.json`` in ``FAILFAST``
    mode: a line that is not JSON, or whose action is not an object, fails the job) with the
    version of their file (the 20 digits every JSON log file name starts with:
    :mod:`~deltaguard.tools.deltalog.names`) and whether the snapshot's segment includes it
    (``in_segment``: a boolean column of ``name``, the file name, and ``version``). Both are
    computed from the file name in Spark SQL: no table of names is built in Python, so no
    Python worker starts for it."""
    from pyspark.sql import functions as F

    df = (
        log_reader(spark)
        .schema(RAW_SCHEMA)
        .option("mode", "FAILFAST")
        .json(paths)
        .withColumn("file", F.input_file_name())
    )
    df = df.withColumn("name", F.regexp_extract("file", r"([^/]+)$", 1))
    digits = F.regexp_extract("name", r"^([0-9]{20})\.", 1)
    unnamed = F.raise_error(F.concat(F.col("file"), F.lit(": not a log file name with a version")))
    df = df.withColumn("version", F.when(digits == "", unnamed).otherwise(digits.cast("long")))
    return df.select(
        *_FILE_ACTIONS,
        *_NON_FILE_ACTIONS,
        "file",
        "version",
        F.coalesce(in_segment, F.lit(False)).alias("in_segment"),
    )


def _parquet_actions(
    spark: SparkSession, paths: list[str], version: int, in_segment: bool
) -> DataFrame:
    """The actions of checkpoint parquet files (:data:`RAW_SCHEMA`, only those columns read)."""
    from pyspark.sql import functions as F

    df = _raw_columns(log_reader(spark).parquet(*paths))
    return df.select(
        "*",
        F.input_file_name().alias("file"),
        F.lit(version).cast("long").alias("version"),
        F.lit(in_segment).alias("in_segment"),
    ).where(F.greatest(*[F.col(c).isNotNull() for c in (*_FILE_ACTIONS, *_NON_FILE_ACTIONS)]))


def _checkpoint_actions(
    spark: SparkSession, spec: StoreSpec, ref: CheckpointRef, in_segment: bool
) -> list[DataFrame]:
    store = spec.open()
    locations = [store.location(f"{LOG_DIR}/{name}") for name in ref.files]
    if ref.files[0].endswith(".json"):
        from pyspark.sql import functions as F

        parts = [_json_actions(spark, locations, F.lit(in_segment))]
    else:
        parts = [_parquet_actions(spark, locations, ref.version, in_segment)]
    if ref.kind is LogFileKind.V2_CHECKPOINT:
        rels = []
        for row in parts[0].where(parts[0].sidecar.isNotNull()).select("sidecar").collect():
            action = parse_action({"sidecar": orjson.loads(row.sidecar)})
            if isinstance(action, Sidecar):
                rels.append(sidecar_rel_path(action))
        if rels:
            located = [r if "://" in r or r.startswith("/") else store.location(r) for r in rels]
            parts.append(_parquet_actions(spark, located, ref.version, in_segment))
    return parts


def _invalid(kind: str) -> Any:
    """An error (raised when the row is computed) for a file action without a path: the JSON
    log's line, or the checkpoint row, names no file, and a reference we cannot read is one we
    could miss."""
    from pyspark.sql import functions as F

    return F.raise_error(F.concat(F.col("file"), F.lit(f": {kind}: missing field 'path'")))


def _actions(raw: DataFrame) -> DataFrame:
    """One row per action of the raw rows, in one pass over them: ``kind``, the raw ``path``
    and ``dv`` of a file action (``deletion_ts`` of a remove), the JSON line ``small`` of a
    metaData, protocol or sidecar action, and the row's file, version and segment flag."""
    from pyspark.sql import functions as F

    dv_type = spark_schema(RAW_SCHEMA)["add"].dataType["deletionVector"].dataType
    no_dv, no_ts = F.lit(None).cast(dv_type), F.lit(None).cast("long")
    no_str = F.lit(None).cast("string")
    entries = []
    for kind in _FILE_ACTIONS:
        body = F.col(kind)
        path = F.when(body.path.isNull(), _invalid(kind)).otherwise(body.path)
        entry = F.struct(
            F.lit(kind).alias("kind"),
            path.cast("string").alias("path"),
            (body.deletionVector if kind != "cdc" else no_dv).alias("dv"),
            (body.deletionTimestamp if kind == "remove" else no_ts).alias("deletion_ts"),
            no_str.alias("small"),
        )
        entries.append(F.when(body.isNotNull(), entry))
    for kind in _NON_FILE_ACTIONS:
        line = F.concat(F.lit(f'{{"{kind}":'), F.col(kind), F.lit("}"))
        entry = F.struct(
            F.lit(kind).alias("kind"),
            no_str.alias("path"),
            no_dv.alias("dv"),
            no_ts.alias("deletion_ts"),
            line.alias("small"),
        )
        entries.append(F.when(F.col(kind).isNotNull(), entry))
    present = F.filter(F.array(*entries), lambda e: e.isNotNull())
    return raw.select(F.explode(present).alias("a"), "file", "version", "in_segment").select(
        "a.*", "file", "version", "in_segment"
    )


def _plain_actions(actions: DataFrame) -> DataFrame:
    """:data:`ACTIONS_SCHEMA` rows of actions (:func:`_actions`) that need no path rule: a
    file action's path is its relative path and its DV (if any) is inline, so it has no DV
    file; a small action's ``key`` is its JSON line (parsed on the driver)."""
    from pyspark.sql import functions as F

    dv_id = F.concat(
        F.col("dv.storageType"),
        F.col("dv.pathOrInlineDv"),
        F.when(F.col("dv.offset").isNotNull(), F.concat(F.lit("@"), F.col("dv.offset"))).otherwise(
            F.lit("")
        ),
    )
    key = (
        F.when(F.col("small").isNotNull(), F.col("small"))
        .when(F.col("dv").isNull(), F.col("path"))
        .otherwise(F.concat(F.col("path"), F.lit("\x00"), dv_id))
    )
    return actions.select(
        key.alias("key"),
        "path",
        F.lit(None).cast("string").alias("dv_path"),
        "kind",
        "version",
        "in_segment",
        "deletion_ts",
        F.lit(False).alias("outside"),
        F.lit(False).alias("dv_outside"),
    )


def _needs_path_rule(path: Any, dv: Any | None) -> Any:
    """True for a file action :func:`_plain_actions` cannot map: a ``path`` that needs the
    path rule (:data:`~deltaguard.tools.deltalog.paths.NEEDS_RULE_OR_DECODING`), or a ``dv``
    that is not a complete inline one (stored in a file, or without a ``storageType`` or
    ``pathOrInlineDv``: :func:`_ruled` rejects those as the local engine's parser does); None:
    the action has no DV field. Never null, so every action is either plain or ruled."""
    from pyspark.sql import functions as F

    no = F.lit(False)
    test = F.coalesce(path.rlike(NEEDS_RULE_OR_DECODING), no)
    if dv is None:
        return test
    inline = (dv.storageType == "i") & dv.pathOrInlineDv.isNotNull()
    return test | (dv.isNotNull() & ~F.coalesce(inline, no))


def _raw_needs_path_rule() -> Any:
    """:func:`_needs_path_rule` of any file action of a raw log row (:data:`RAW_SCHEMA`):
    the same test as on :func:`_actions`' rows, without first splitting the row."""
    from pyspark.sql import functions as F

    tests = [
        _needs_path_rule(
            F.col(f"{kind}.path"), None if kind == "cdc" else F.col(f"{kind}.deletionVector")
        )
        for kind in _FILE_ACTIONS
    ]
    return reduce(operator.or_, tests)


def _ruled(spec: StoreSpec) -> Any:
    """The file actions :func:`_needs_path_rule` selects, mapped in the executors by the one
    path rule (:func:`~deltaguard.tools.deltalog.paths.relative_to_root`) and the DV file
    rule (:meth:`~deltaguard.tools.deltalog.actions.DeletionVector.file_path`)."""

    def parse(rows: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        store = spec.open()
        for row in rows:
            dv = None
            try:
                decoded = decode_path(row.path)
                if row.dv is not None:
                    kind, where = row.dv.storageType, row.dv.pathOrInlineDv
                    if kind not in DV_STORAGE_TYPES or not isinstance(where, str):
                        raise ActionError(
                            f"deletionVector: storageType {kind!r}, pathOrInlineDv {where!r}"
                        )
                    dv = DeletionVector(kind, where, row.dv.offset, 0, 0)
                dv_file = dv.file_path() if dv is not None else None
            except (ActionError, ValueError, TypeError) as exc:
                raise CorruptLogError(f"{row.file}: {row.kind}: {exc}", row.file) from None
            rel = relative_to_root(decoded, store)
            dv_rel = relative_to_root(dv_file, store) if dv_file is not None else None
            path = rel if rel is not None else decoded
            key = key_string(path, dv.unique_id if dv is not None else None)
            dv_path = dv_rel if dv_rel is not None else dv_file
            outside, dv_outside = rel is None, dv_file is not None and dv_rel is None
            yield (
                key,
                path,
                dv_path,
                row.kind,
                row.version,
                row.in_segment,
                row.deletion_ts,
                outside,
                dv_outside,
            )

    return parse


def _ruled_count() -> Any:
    """The count of raw log rows that need the path rule (:func:`_raw_needs_path_rule`): an
    aggregate column named ``ruled``."""
    from pyspark.sql import functions as F

    return F.count_if(_raw_needs_path_rule()).alias("ruled")


def parse_actions(
    spark: SparkSession, spec: StoreSpec, raw: DataFrame, path_rule: bool
) -> DataFrame:
    """Raw log rows (:data:`RAW_SCHEMA` plus ``file``, ``version``, ``in_segment``) as
    :data:`ACTIONS_SCHEMA` rows: in Spark SQL, except the file actions the path rule can
    change (:func:`_needs_path_rule`), which alone go through Python (:func:`_ruled`); with
    ``path_rule`` false those are left out (the caller knows there are none, or checks:
    :func:`read_log`). Not persisted: the job that uses them reads the log again, which
    measured cheaper than holding every action."""
    from pyspark.sql import functions as F

    actions = _actions(raw)
    ruled = F.col("small").isNull() & _needs_path_rule(F.col("path"), F.col("dv"))
    parsed = _plain_actions(actions.where(~ruled))
    if path_rule:
        python = actions.where(ruled).rdd.mapPartitions(_ruled(spec))
        parsed = parsed.unionByName(spark.createDataFrame(python, ACTIONS_SCHEMA))
    return parsed


def _union(frames: list[DataFrame]) -> DataFrame:
    return reduce(lambda a, b: a.unionByName(b), frames)


def read_log(
    spark: SparkSession,
    spec: StoreSpec,
    listing: LogListing,
    *,
    segment_only: bool = False,
    defer_path_rule: bool = False,
) -> SparkLog:
    """Every file action of the retained log, parsed (see the module docstring), and the
    latest snapshot's metadata and protocol; with ``segment_only`` only the snapshot's own
    checkpoint and commits (what the audit's file check needs: a damaged older commit is the
    log checks' finding, not this read's failure). Raises
    :class:`~deltaguard.tools.deltalog.errors.DeltaLogError` naming the file at fault (a
    damaged line fails the Spark job with it: with ``defer_path_rule`` a damaged log file
    older than the snapshot's checkpoint fails the first job that computes the actions).

    Whether any action needs the path rule (:func:`parse_actions`) is known before the
    actions are planned: one job over the snapshot's segment (its checkpoint, already held,
    and the commits after it) finds the newest metadata and protocol and counts the segment's
    actions that need the rule. If some do, the actions are planned with the rule. If none
    do and older log files are read too, those are counted: by a second job, or with
    ``defer_path_rule`` by the first job that computes the actions (an observation, read by
    :func:`settle_path_rule`), which saves parsing the older commits twice (they are most of
    the log on a large table)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    store = spec.open()
    own, own_lines, own_rows, notes = _own_checkpoint(spark, spec, listing, store.uri)
    latest = listing.latest_version
    assert latest is not None  # _own_checkpoint raised otherwise
    first = own.version + 1 if own is not None else 0

    def json_of(names: list[str], in_segment: bool) -> list[DataFrame]:
        locations = [store.location(f"{LOG_DIR}/{n}") for n in names]
        return [_json_actions(spark, locations, F.lit(in_segment))] if names else []

    chain = json_chain(listing, first, latest)
    assert not isinstance(chain, int)  # _own_checkpoint raised otherwise
    in_chain = {piece.name for piece in chain}
    segment = own_lines + json_of([piece.name for piece in chain], True)
    others: list[DataFrame] = []
    if not segment_only:
        rest = [*listing.commits.values(), *(c.name for c in listing.compactions)]
        others += json_of([n for n in rest if n not in in_chain], False)
        for i in checkpoints_besides(listing, own):
            others += _checkpoint_actions(spark, spec, listing.checkpoints[i], False)
    try:
        metadata, protocol, path_rule = _segment_summary(_union(segment), store.uri, latest)
        raw = _union(segment + others)
        unchecked = None
        if path_rule or not others:
            actions = parse_actions(spark, spec, raw, path_rule)
        elif defer_path_rule:
            count = Observation("deltaguard actions needing the path rule")
            unchecked = UncheckedPathRule(count, lambda: parse_actions(spark, spec, raw, True))
            actions = parse_actions(spark, spec, raw.observe(count, _ruled_count()), False)
        else:
            (counted,) = _union(others).agg(_ruled_count()).collect()
            actions = parse_actions(spark, spec, raw, bool(counted.ruled))
    except BaseException:
        for part in own_lines:
            part.unpersist()
        raise
    return SparkLog(
        version=latest,
        metadata=metadata,
        protocol=protocol,
        actions=actions,
        notes=notes,
        cached=own_lines,
        one_checkpoint=own is not None and not chain,
        checkpoint_rows=own_rows,
        unchecked=unchecked,
    )


def _segment_summary(segment: DataFrame, uri: str, latest: int) -> tuple[Metadata, Protocol, bool]:
    """One job over the raw rows of the snapshot's segment (:data:`RAW_SCHEMA` plus
    ``version`` and ``in_segment``): its newest metadata and protocol, and whether any of its
    rows needs the path rule (:func:`_ruled_count`). Raises
    :class:`~deltaguard.tools.deltalog.errors.CorruptLogError` if either action is missing,
    and what :func:`~deltaguard.tools.deltalog.features.check_readable` raises."""
    from pyspark.sql import functions as F

    def newest(kind: str) -> Any:
        in_segment = F.col(kind).isNotNull() & F.col("in_segment")
        return F.max_by(F.col(kind), F.when(in_segment, F.col("version"))).alias(kind)

    (summary,) = segment.agg(
        _ruled_count(), *[newest(kind) for kind in ("metaData", "protocol")]
    ).collect()
    found = {
        k: parse_action(orjson.loads(f'{{"{k}":{summary[k]}}}'))
        for k in ("metaData", "protocol")
        if summary[k] is not None
    }
    metadata, protocol = found.get("metaData"), found.get("protocol")
    if not isinstance(metadata, Metadata) or not isinstance(protocol, Protocol):
        raise CorruptLogError(f"{uri}: version {latest} has no metaData or protocol action")
    check_readable(protocol, uri)
    return metadata, protocol, bool(summary.ruled)


def settle_path_rule(log: SparkLog) -> bool:
    """For a log read with ``defer_path_rule`` (:func:`read_log`), once a job has computed all
    of ``log.actions`` (an aggregation or a write, never a ``limit``): True if no action
    needed the path rule, so ``log.actions`` were complete. Otherwise ``log.actions`` are
    replaced by the actions with the rule and False is returned: what that job computed from
    them is incomplete and must be computed again. Spark reporting no count (an optimizer
    that dropped the observation) counts as needing the rule. True at once for a log whose
    actions were planned with the rule or checked before."""
    unchecked = log.unchecked
    if unchecked is None:
        return True
    log.unchecked = None
    if observed(unchecked.count, "ruled", lambda: 1) == 0:
        return True
    log.actions = unchecked.with_rule()
    return False


def snapshot_files(parsed: DataFrame) -> DataFrame:
    """The snapshot's file actions: per ``(path, DV id)`` the newest add or remove of the
    snapshot's checkpoint and the commits after it (``kind`` says which); one hash
    aggregation."""
    from pyspark.sql import functions as F

    fields = [c for c in parsed.columns if c != "key"]
    return (
        parsed.where(F.col("in_segment") & F.col("kind").isin("add", "remove"))
        .groupBy("key")
        .agg(F.max_by(F.struct(*fields), F.col("version")).alias("newest"))
        .select("key", "newest.*")
    )


def reference_rows(parsed: DataFrame, cutoff_ms: int, one_checkpoint: bool = False) -> DataFrame:
    """The rows :func:`flag_aggregates` groups by path: for each file action inside the table
    its path and its DV file's path, with what the action says about each (see
    :mod:`deltaguard.tools.orphans.references` for the sets): a snapshot add makes both live
    and protected, a snapshot remove deleted at or after the cut-off (or with no timestamp)
    protects both and is a tombstone of its path, every retained action names both, a ``cdc``
    action marks its path change data. The snapshot is :func:`snapshot_files` (one shuffle by
    ``(path, DV id)``), or with ``one_checkpoint`` (:attr:`SparkLog.one_checkpoint`: the
    snapshot is one checkpoint, each key once) the segment's actions themselves, each giving
    one row with all its flags."""
    from pyspark.sql import functions as F

    inside = parsed.where(~F.col("outside") & F.col("kind").isin(*_FILE_ACTIONS)).withColumn(
        "dv_path", F.when(~F.col("dv_outside"), F.col("dv_path"))
    )
    t, f = F.lit(True), F.lit(False)
    no_ts = F.lit(None).cast("long")

    def two(live: Any, protected: Any, named: Any, remove: Any, ts: Any, cdc: Any) -> Any:
        """The action's path row and (if it has one) its DV file's row (never a tombstone
        or change data)."""

        def row(path: Any, is_path: bool) -> Any:
            return F.struct(
                path.alias("path"),
                live.alias("live"),
                protected.alias("protected"),
                named.alias("named_in_log"),
                (remove if is_path else f).alias("snapshot_remove"),
                (ts if is_path else no_ts).alias("tombstone_ms"),
                (cdc if is_path else f).alias("change_data"),
            )

        dv = F.when(F.col("dv_path").isNotNull(), row(F.col("dv_path"), False))
        return F.filter(F.array(row(F.col("path"), True), dv), lambda r: r.isNotNull())

    is_add, is_remove = F.col("kind") == "add", F.col("kind") == "remove"
    unexpired = (F.col("deletion_ts") >= cutoff_ms) | F.col("deletion_ts").isNull()
    tombstone_ms = F.when(is_remove, F.col("deletion_ts"))
    is_cdc = F.col("kind") == "cdc"
    if one_checkpoint:
        seg = F.col("in_segment")
        return inside.select(
            F.inline(
                two(
                    seg & is_add,
                    seg & (is_add | (is_remove & unexpired)),
                    t,
                    seg & is_remove,
                    F.when(seg, tombstone_ms),
                    is_cdc,
                )
            )
        )
    snap = snapshot_files(inside)
    from_snapshot = snap.select(
        F.inline(two(is_add, is_add | unexpired, f, is_remove, tombstone_ms, f))
    )
    named = inside.select(F.inline(two(f, f, t, f, no_ts, is_cdc)))
    return from_snapshot.unionByName(named)


def flag_aggregates() -> list[Any]:
    """The :data:`REFS_SCHEMA` flags of a path from its :func:`reference_rows` (aggregate
    columns over a group by ``path``; a group without such rows gets nulls: no flag). A
    tombstone is a snapshot remove of a path that is not live; its time is the newest
    deletion timestamp among them."""
    from pyspark.sql import functions as F

    live = F.max("live")
    tombstone = F.max("snapshot_remove") & ~F.coalesce(live, F.lit(False))
    return [
        live.alias("live"),
        F.max("protected").alias("protected"),
        F.max("named_in_log").alias("named_in_log"),
        tombstone.alias("tombstone"),
        F.when(tombstone, F.max("tombstone_ms")).alias("tombstone_ms"),
        F.max("change_data").alias("change_data"),
    ]


def reference_flags(log: SparkLog, cutoff_ms: int) -> DataFrame:
    """One row per referenced path (:data:`REFS_SCHEMA`) of ``log`` for a deletion cut-off
    (not persisted: computed by the job that uses it)."""
    rows = reference_rows(log.actions, cutoff_ms, log.one_checkpoint)
    return rows.groupBy("path").agg(*flag_aggregates())
