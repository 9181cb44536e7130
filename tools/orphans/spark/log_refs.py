"""The reference sets of the latest snapshot, read by Spark.

The same sets as :mod:`deltaguard.tools.orphans.references` (read its docstring for what each
means and why ``named_in_log`` covers every version that can still be read), computed without holding
them in one process:

* every retained JSON commit and compaction is read with ``spark.read.text``; every checkpoint
  the snapshot or ``named_in_log`` needs (the snapshot's own, the oldest, the ones after a gap:
  :func:`~deltaguard.tools.orphans.references.checkpoints_besides`) and their sidecars with
  ``spark.read.parquet``, each action rendered back to its JSON line (``to_json`` drops nulls
  as the JSON log does);
* executors parse each line with the local engine's action parser
  (:func:`~deltaguard.tools.deltalog.actions.parse_action`) and map paths into the table with
  :func:`~deltaguard.tools.deltalog.paths.relative_to_root` and deletion vectors to their files;
* the snapshot is reconciled in Spark: newest version wins per ``(path, DV id)`` over the
  snapshot's checkpoint and the commits after it.

Only the log listing (file names in ``_delta_log``), the newest metadata and protocol, and the
names of sidecars reach the driver. A line that is not a valid action fails the job with the
file and the error (a reference we cannot read is one we could miss).

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

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from deltaguard.tools.deltalog.actions import (
    AddFile,
    CdcFile,
    Metadata,
    Protocol,
    RemoveFile,
    Sidecar,
    parse_action,
)
from deltaguard.tools.deltalog.checkpoint import LOG_DIR, CheckpointRef, sidecar_rel_path
from deltaguard.tools.deltalog.errors import (
    CorruptLogError,
    TableNotFoundError,
    VersionNotFoundError,
)
from deltaguard.tools.deltalog.features import check_readable
from deltaguard.tools.deltalog.filetable import key_string
from deltaguard.tools.deltalog.listing import LogListing
from deltaguard.tools.deltalog.names import LogFileKind
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.deltalog.snapshot import (
    DEFAULT_DELETED_FILE_RETENTION_MS,
    parse_interval_ms,
    unreconstructable,
)
from deltaguard.tools.orphans.references import checkpoints_besides
from deltaguard.tools.orphans.spark.store_spec import StoreSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameReader, SparkSession

#: One parsed file action: its key, path (relative), the DV file (relative, or null), kind,
#: version (-1: outside the snapshot's segment), deletion timestamp, and whether the path /
#: the DV file is outside the table root (then ``path`` / ``dv_path`` is the log's absolute
#: location: the audit checks those files; the reference sets leave them out, as the local
#: engine's do).
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


@dataclass
class SparkLog:
    """The latest snapshot's ``version``, ``metadata`` and ``protocol``, and ``actions``: every
    file action of the retained log (:data:`ACTIONS_SCHEMA`), persisted until
    :meth:`release`; ``notes``: the damaged checkpoints skipped (the local snapshot's notes)."""

    version: int
    metadata: Metadata
    protocol: Protocol
    actions: DataFrame
    notes: list[str] = field(default_factory=list)

    def release(self) -> None:
        self.actions.unpersist()

    def retention_ms(self) -> int:
        value = self.metadata.configuration.get("delta.deletedFileRetentionDuration")
        return parse_interval_ms(value) if value else DEFAULT_DELETED_FILE_RETENTION_MS


#: The data-source options of every read of the log (see the module docstring).
STRICT_READ_OPTIONS = {"ignoreCorruptFiles": "false", "ignoreMissingFiles": "false"}


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


def log_reader(spark: SparkSession) -> DataFrameReader:
    """A reader for log files that fails on a damaged or vanished file, whatever the session's
    ``spark.sql.files.ignoreCorruptFiles``/``ignoreMissingFiles`` say."""
    return spark.read.options(**STRICT_READ_OPTIONS)


def _first_missing(listing: LogListing, start: int, latest: int) -> int | None:
    return next((v for v in range(start, latest + 1) if v not in listing.commits), None)


def require_reconstructable(listing: LogListing, uri: str) -> None:
    """Raises :class:`~deltaguard.tools.deltalog.errors.TableNotFoundError` if ``listing`` has
    no commit, and :class:`~deltaguard.tools.deltalog.errors.VersionNotFoundError` if a commit
    after the newest checkpoint is missing (as the local engine's
    :func:`~deltaguard.tools.deltalog.snapshot.load_snapshot` does): the check the CLI runs
    before it starts a JVM. :func:`read_log` then falls back past a damaged checkpoint."""
    latest = listing.latest_version
    if latest is None:
        raise TableNotFoundError(f"{uri} is not a Delta table: no commits in {LOG_DIR}/")
    own = listing.checkpoints[-1] if listing.checkpoints else None
    start = own.version + 1 if own is not None else 0
    missing = _first_missing(listing, start, latest)
    if missing is not None:
        raise VersionNotFoundError(
            f"{uri}: cannot reconstruct version {latest}: commit "
            f"{LOG_DIR}/{missing:020d}.json is missing"
        )


def _spark_error(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _own_checkpoint(
    spark: SparkSession, spec: StoreSpec, listing: LogListing, uri: str
) -> tuple[CheckpointRef | None, list[DataFrame], list[str]]:
    """The checkpoint the snapshot starts from, its lines (persisted, read in full once), and
    a note per newer checkpoint skipped because Spark could not read it. The local engine's
    rule (:func:`~deltaguard.tools.deltalog.snapshot.load_snapshot`): the newest checkpoint
    whose commits after it are all retained and that reads in full (every part, every
    sidecar); a damaged one is skipped for the next older one (or commit 0). Raises
    :class:`VersionNotFoundError` if the commits after the one tried are not all retained, or
    :class:`CorruptLogError` if every checkpoint that could serve is damaged."""
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
            return None, [], _skipped_notes(skipped)
        parts: list[DataFrame] = []
        try:
            parts = _checkpoint_lines(spark, spec, ref, True)
            for part in parts:
                part.persist().count()  # every row decoded: a damaged page fails here
        except (PySparkException, Py4JError, ValueError) as exc:
            for part in parts:
                part.unpersist()
            skipped.append((ref, f"{ref.files[0]}: {_spark_error(exc)}"))
            continue
        return ref, parts, _skipped_notes(skipped)
    raise AssertionError("unreachable: the loop ends with ref=None")


def _skipped_notes(skipped: list[tuple[CheckpointRef, str]]) -> list[str]:
    return [f"skipped checkpoint {ref.files[0]}: {why}" for ref, why in skipped]


def _parser(spec: StoreSpec) -> Any:
    def parse(rows: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        store = spec.open()
        for row in rows:
            line, source, version, in_segment = row[0], row[1], row[2], row[3]
            if not line.strip():
                continue
            try:
                action = parse_action(orjson.loads(line))
            except (orjson.JSONDecodeError, ValueError, TypeError) as exc:
                raise CorruptLogError(f"{source}: {exc}", source) from None
            if isinstance(action, Metadata | Protocol | Sidecar):
                small = {Metadata: "metaData", Protocol: "protocol", Sidecar: "sidecar"}
                yield line, None, None, small[type(action)], version, in_segment, None, False, False
                continue
            if not isinstance(action, AddFile | RemoveFile | CdcFile):
                continue
            rel = relative_to_root(action.path, store)
            dv = None if isinstance(action, CdcFile) else action.deletion_vector
            dv_file = dv.file_path() if dv is not None else None
            dv_rel = relative_to_root(dv_file, store) if dv_file is not None else None
            kind = {AddFile: "add", RemoveFile: "remove", CdcFile: "cdc"}[type(action)]
            ts = action.deletion_timestamp if isinstance(action, RemoveFile) else None
            path = rel if rel is not None else action.path
            key = key_string(path, dv.unique_id if dv is not None else None)
            dv_path = dv_rel if dv_rel is not None else dv_file
            outside, dv_outside = rel is None, dv_file is not None and dv_rel is None
            yield key, path, dv_path, kind, version, in_segment, ts, outside, dv_outside

    return parse


def _json_lines(
    spark: SparkSession, paths: list[str], versions: dict[str, tuple[int, bool]]
) -> DataFrame:
    """Lines of JSON log files with the version of their file and whether the snapshot's
    segment includes it (``versions``: file name -> (version, in segment))."""
    from pyspark.sql import functions as F

    df = (
        log_reader(spark)
        .text(paths)
        .select(F.col("value").alias("line"), F.input_file_name().alias("file"))
    )
    by_name = spark.createDataFrame(
        [(name, v, seg) for name, (v, seg) in versions.items()],
        "name string, version long, in_segment boolean",
    )
    df = df.withColumn("name", F.regexp_extract("file", r"([^/]+)$", 1))
    return df.join(F.broadcast(by_name), "name", "left").select(
        "line",
        "file",
        F.coalesce("version", F.lit(-1)).alias("version"),
        F.coalesce("in_segment", F.lit(False)).alias("in_segment"),
    )


def _parquet_lines(
    spark: SparkSession, paths: list[str], version: int, in_segment: bool
) -> DataFrame:
    from pyspark.sql import functions as F

    df = log_reader(spark).parquet(*paths)
    present = [c for c in (*_FILE_ACTIONS, *_NON_FILE_ACTIONS) if c in df.columns]
    line = F.coalesce(
        *[
            F.when(
                F.col(c).isNotNull(), F.concat(F.lit(f'{{"{c}":'), F.to_json(F.col(c)), F.lit("}"))
            )
            for c in present
        ]
    )
    return df.select(
        line.alias("line"),
        F.input_file_name().alias("file"),
        F.lit(version).alias("version"),
        F.lit(in_segment).alias("in_segment"),
    ).where(F.col("line").isNotNull())


def _checkpoint_lines(
    spark: SparkSession, spec: StoreSpec, ref: CheckpointRef, in_segment: bool
) -> list[DataFrame]:
    store = spec.open()
    locations = [store.location(f"{LOG_DIR}/{name}") for name in ref.files]
    if ref.files[0].endswith(".json"):
        versions = {n: (ref.version, in_segment) for n in ref.files}
        parts = [_json_lines(spark, locations, versions)]
    else:
        parts = [_parquet_lines(spark, locations, ref.version, in_segment)]
    if ref.kind is LogFileKind.V2_CHECKPOINT:
        sidecar_lines = parts[0].where(parts[0].line.startswith('{"sidecar"')).select("line")
        rels = []
        for row in sidecar_lines.collect():
            action = parse_action(orjson.loads(row.line))
            if isinstance(action, Sidecar):
                rels.append(sidecar_rel_path(action))
        if rels:
            located = [r if "://" in r or r.startswith("/") else store.location(r) for r in rels]
            parts.append(_parquet_lines(spark, located, ref.version, in_segment))
    return parts


def read_log(
    spark: SparkSession, spec: StoreSpec, listing: LogListing, *, segment_only: bool = False
) -> SparkLog:
    """Every file action of the retained log, parsed (see the module docstring), and the
    latest snapshot's metadata and protocol; with ``segment_only`` only the snapshot's own
    checkpoint and commits (what the audit's file check needs: a damaged older commit is the
    log checks' finding, not this read's failure). Raises
    :class:`~deltaguard.tools.deltalog.errors.DeltaLogError` naming the file at fault (a
    damaged line fails the Spark job with it)."""
    from pyspark.sql import functions as F

    store = spec.open()
    own, own_lines, notes = _own_checkpoint(spark, spec, listing, store.uri)
    latest = listing.latest_version
    assert latest is not None  # _own_checkpoint raised otherwise
    in_chain = set(range(own.version + 1 if own is not None else 0, latest + 1))
    names = {n: (v, v in in_chain) for v, n in listing.commits.items()}
    names |= {c.name: (c.version, False) for c in listing.compactions}
    if segment_only:
        names = {n: (v, seg) for n, (v, seg) in names.items() if seg}
    sources = own_lines[:]
    if names:
        locations = [store.location(f"{LOG_DIR}/{n}") for n in names]
        sources.append(_json_lines(spark, locations, names))
    for i in [] if segment_only else checkpoints_besides(listing, own):
        sources += _checkpoint_lines(spark, spec, listing.checkpoints[i], False)
    lines = sources[0]
    for more in sources[1:]:
        lines = lines.unionByName(more)
    parsed = spark.createDataFrame(lines.rdd.mapPartitions(_parser(spec)), ACTIONS_SCHEMA)
    parsed = parsed.persist()
    small = (
        parsed.where(F.col("kind").isin("metaData", "protocol") & F.col("in_segment"))
        .groupBy("kind")
        .agg(F.max_by("key", "version").alias("line"))
        .collect()
    )
    found = {r.kind: parse_action(orjson.loads(r.line)) for r in small}
    metadata, protocol = found.get("metaData"), found.get("protocol")
    if not isinstance(metadata, Metadata) or not isinstance(protocol, Protocol):
        raise CorruptLogError(f"{store.uri}: version {latest} has no metaData or protocol action")
    check_readable(protocol, store.uri)
    for part in own_lines:
        part.unpersist()
    return SparkLog(latest, metadata, protocol, parsed, notes)


def snapshot_files(parsed: DataFrame) -> DataFrame:
    """The snapshot's file actions: per ``(path, DV id)`` the newest add or remove of the
    snapshot's checkpoint and the commits after it (``kind`` says which)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest = Window.partitionBy("key").orderBy(F.col("version").desc())
    return (
        parsed.where(F.col("in_segment") & F.col("kind").isin("add", "remove"))
        .withColumn("rank", F.row_number().over(newest))
        .where("rank = 1")
        .drop("rank")
    )


def reference_flags(
    spark: SparkSession, parsed: DataFrame, cutoff_ms: int
) -> tuple[DataFrame, int]:
    """One row per referenced path (:data:`REFS_SCHEMA`) for a deletion cut-off, persisted,
    and the number of live paths (data files and their DV files)."""
    from pyspark.sql import functions as F

    inside = parsed.where(~F.col("outside")).withColumn(
        "dv_path", F.when(~F.col("dv_outside"), F.col("dv_path"))
    )
    files = inside.where(F.col("kind").isin(*_FILE_ACTIONS))
    snap = snapshot_files(inside)
    adds = snap.where("kind = 'add'")
    removes = snap.where("kind = 'remove'")
    unexpired = removes.where((F.col("deletion_ts") >= cutoff_ms) | F.col("deletion_ts").isNull())

    def paths_and_dv_paths(df: DataFrame) -> DataFrame:
        """The rows' file paths and their deletion-vector files' paths, one column."""
        return df.select("path").unionByName(
            df.where(F.col("dv_path").isNotNull()).select(F.col("dv_path").alias("path"))
        )

    false, true, null = F.lit(False), F.lit(True), F.lit(None).cast("long")
    live = paths_and_dv_paths(adds).distinct().persist()
    rows = [
        live.select(
            "path",
            true.alias("live"),
            true.alias("protected"),
            false.alias("named_in_log"),
            false.alias("tombstone"),
            null.alias("tombstone_ms"),
            false.alias("change_data"),
        ),
        paths_and_dv_paths(unexpired).select(
            "path",
            false.alias("live"),
            true.alias("protected"),
            false.alias("named_in_log"),
            false.alias("tombstone"),
            null.alias("tombstone_ms"),
            false.alias("change_data"),
        ),
        paths_and_dv_paths(files).select(
            "path",
            false.alias("live"),
            false.alias("protected"),
            true.alias("named_in_log"),
            false.alias("tombstone"),
            null.alias("tombstone_ms"),
            false.alias("change_data"),
        ),
        removes.join(live, "path", "left_anti").select(
            "path",
            false.alias("live"),
            false.alias("protected"),
            false.alias("named_in_log"),
            true.alias("tombstone"),
            F.col("deletion_ts").alias("tombstone_ms"),
            false.alias("change_data"),
        ),
        files.where("kind = 'cdc'").select(
            "path",
            false.alias("live"),
            false.alias("protected"),
            false.alias("named_in_log"),
            false.alias("tombstone"),
            null.alias("tombstone_ms"),
            true.alias("change_data"),
        ),
    ]
    union = rows[0]
    for more in rows[1:]:
        union = union.unionByName(more)
    flags = (
        union.groupBy("path")
        .agg(
            *[
                F.max(c).alias(c)
                for c in (
                    "live",
                    "protected",
                    "named_in_log",
                    "tombstone",
                    "tombstone_ms",
                    "change_data",
                )
            ]
        )
        .persist()
    )
    count = live.count()
    live.unpersist()
    return flags, count
