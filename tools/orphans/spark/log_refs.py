"""The reference sets of the latest snapshot, read by Spark.

The same sets as :mod:`deltaguard.tools.orphans.references` (read its docstring for what each
means and why ``ever`` covers every version that can still be read), computed without holding
them in one process:

* every retained JSON commit and compaction is read with ``spark.read.text``; every checkpoint
  the snapshot or ``ever`` needs (the snapshot's own, the oldest, the ones after a gap:
  :func:`~deltaguard.tools.orphans.references.checkpoints_besides`) and their sidecars with
  ``spark.read.parquet``, each action rendered back to its JSON line (``to_json`` drops nulls
  as the JSON log does);
* executors parse each line with the local engine's action parser
  (:func:`~deltaguard.tools.deltalog.actions.parse_action`) and map paths into the table with
  :func:`~deltaguard.tools.orphans.rules.relative_to_root` and deletion vectors to their files;
* the snapshot is reconciled in Spark: newest version wins per ``(path, DV id)`` over the
  snapshot's checkpoint and the commits after it.

Only the log listing (file names in ``_delta_log``), the newest metadata and protocol, and the
names of sidecars reach the driver. A line that is not a valid action fails the job with the
file and the error (a reference we cannot read is one we could miss).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
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
from deltaguard.tools.deltalog.snapshot import DEFAULT_DELETED_FILE_RETENTION_MS, parse_interval_ms
from deltaguard.tools.orphans.references import checkpoints_besides
from deltaguard.tools.orphans.rules import relative_to_root
from deltaguard.tools.orphans.spark.store_spec import StoreSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: One parsed file action: its key, path (relative), the DV file (relative, or null), kind,
#: version (-1: outside the snapshot's segment), deletion timestamp.
ACTIONS_SCHEMA = (
    "key string, path string, dv_path string, kind string, version long, in_segment boolean, "
    "deletion_ts long"
)
#: The reference flags of one path (what :class:`~..references.References` holds as sets).
REFS_SCHEMA = (
    "path string, live boolean, protected boolean, ever boolean, tombstone boolean, "
    "tombstone_ms long, change_data boolean"
)
_FILE_ACTIONS = ("add", "remove", "cdc")
_SMALL = ("metaData", "protocol", "sidecar")


@dataclass
class SparkLog:
    """The latest snapshot's ``version``, ``metadata`` and ``protocol``, and ``actions``: every
    file action of the retained log (:data:`ACTIONS_SCHEMA`), persisted until
    :meth:`release`."""

    version: int
    metadata: Metadata
    protocol: Protocol
    actions: DataFrame

    def release(self) -> None:
        self.actions.unpersist()

    def retention_ms(self) -> int:
        value = self.metadata.configuration.get("delta.deletedFileRetentionDuration")
        return parse_interval_ms(value) if value else DEFAULT_DELETED_FILE_RETENTION_MS


def segment(listing: LogListing, uri: str) -> tuple[int, CheckpointRef | None, list[int]]:
    """The latest version, the checkpoint the snapshot starts from, and the commits after it."""
    latest = listing.latest_version
    if latest is None:
        raise TableNotFoundError(f"{uri} is not a Delta table: no commits in {LOG_DIR}/")
    own = listing.checkpoints[-1] if listing.checkpoints else None
    start = own.version + 1 if own is not None else 0
    missing = [v for v in range(start, latest + 1) if v not in listing.commits]
    if missing:
        raise VersionNotFoundError(
            f"{uri}: cannot reconstruct version {latest}: commit "
            f"{LOG_DIR}/{missing[0]:020d}.json is missing"
        )
    return latest, own, list(range(start, latest + 1))


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
                yield line, None, None, small[type(action)], version, in_segment, None
                continue
            if not isinstance(action, AddFile | RemoveFile | CdcFile):
                continue
            rel = relative_to_root(action.path, store)
            if rel is None:
                continue
            dv = None if isinstance(action, CdcFile) else action.deletion_vector
            dv_file = dv.file_path() if dv is not None else None
            dv_rel = relative_to_root(dv_file, store) if dv_file is not None else None
            kind = {AddFile: "add", RemoveFile: "remove", CdcFile: "cdc"}[type(action)]
            ts = action.deletion_timestamp if isinstance(action, RemoveFile) else None
            key = key_string(rel, dv.unique_id if dv is not None else None)
            yield key, rel, dv_rel, kind, version, in_segment, ts

    return parse


def _json_lines(
    spark: SparkSession, paths: list[str], versions: dict[str, tuple[int, bool]]
) -> DataFrame:
    """Lines of JSON log files with the version of their file and whether the snapshot's
    segment includes it (``versions``: file name -> (version, in segment))."""
    from pyspark.sql import functions as F

    df = spark.read.text(paths).select(
        F.col("value").alias("line"), F.input_file_name().alias("file")
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

    df = spark.read.parquet(*paths)
    present = [c for c in (*_FILE_ACTIONS, *_SMALL) if c in df.columns]
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


def read_log(spark: SparkSession, spec: StoreSpec, listing: LogListing) -> SparkLog:
    """Every file action of the retained log, parsed (see the module docstring), and the
    latest snapshot's metadata and protocol. Raises
    :class:`~deltaguard.tools.deltalog.errors.DeltaLogError` naming the file at fault (a
    damaged line fails the Spark job with it)."""
    from pyspark.sql import functions as F

    store = spec.open()
    latest, own, chain = segment(listing, store.uri)
    in_chain = set(chain)
    names = {n: (v, v in in_chain) for v, n in listing.commits.items()}
    names |= {c.name: (c.version, False) for c in listing.compactions}
    sources = [_json_lines(spark, [store.location(f"{LOG_DIR}/{n}") for n in names], names)]
    if own is not None:
        sources += _checkpoint_lines(spark, spec, own, True)
    for i in checkpoints_besides(listing, own):
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
    return SparkLog(latest, metadata, protocol, parsed)


def reference_flags(
    spark: SparkSession, parsed: DataFrame, cutoff_ms: int
) -> tuple[DataFrame, int]:
    """One row per referenced path (:data:`REFS_SCHEMA`) for a deletion cut-off, persisted,
    and the number of live paths (data files and their DV files)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    files = parsed.where(F.col("kind").isin(*_FILE_ACTIONS))
    newest = Window.partitionBy("key").orderBy(F.col("version").desc())
    snap = (
        files.where(F.col("in_segment") & F.col("kind").isin("add", "remove"))
        .withColumn("rank", F.row_number().over(newest))
        .where("rank = 1")
    )
    adds = snap.where("kind = 'add'")
    removes = snap.where("kind = 'remove'")
    unexpired = removes.where((F.col("deletion_ts") >= cutoff_ms) | F.col("deletion_ts").isNull())

    def both(df: DataFrame) -> DataFrame:
        return df.select("path").unionByName(
            df.where(F.col("dv_path").isNotNull()).select(F.col("dv_path").alias("path"))
        )

    false, true, null = F.lit(False), F.lit(True), F.lit(None).cast("long")
    live = both(adds).distinct().persist()
    rows = [
        live.select(
            "path",
            true.alias("live"),
            true.alias("protected"),
            false.alias("ever"),
            false.alias("tombstone"),
            null.alias("tombstone_ms"),
            false.alias("change_data"),
        ),
        both(unexpired).select(
            "path",
            false.alias("live"),
            true.alias("protected"),
            false.alias("ever"),
            false.alias("tombstone"),
            null.alias("tombstone_ms"),
            false.alias("change_data"),
        ),
        both(files).select(
            "path",
            false.alias("live"),
            false.alias("protected"),
            true.alias("ever"),
            false.alias("tombstone"),
            null.alias("tombstone_ms"),
            false.alias("change_data"),
        ),
        removes.join(live, "path", "left_anti").select(
            "path",
            false.alias("live"),
            false.alias("protected"),
            false.alias("ever"),
            true.alias("tombstone"),
            F.col("deletion_ts").alias("tombstone_ms"),
            false.alias("change_data"),
        ),
        files.where("kind = 'cdc'").select(
            "path",
            false.alias("live"),
            false.alias("protected"),
            false.alias("ever"),
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
                for c in ("live", "protected", "ever", "tombstone", "tombstone_ms", "change_data")
            ]
        )
        .persist()
    )
    count = live.count()
    live.unpersist()
    return flags, count
