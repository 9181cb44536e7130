"""The table's files listed by Spark executors, one directory level per round.

Round ``n`` is one Spark job over the directories found at depth ``n`` (an RDD, repartitioned
so each task lists a slice of them): each task lists its directories with the store's
one-directory listing (:meth:`TableStore.children`, the local engine's, so S3 pages and local
``scandir`` behave the same) and emits files and sub-directories. Hidden directories
(:func:`~deltaguard.tools.orphans.rules.hidden_name_rule`) are not entered, as VACUUM does.
The driver only counts each round's files and directories and collects the hidden directory
names (one small job a round); no task lists more than its directories, and no file path
reaches the driver.

Limit: one directory is listed by one task (a flat table with millions of files in its root
is listed by a single S3 pagination, as in the local engine).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.orphans.rules import hidden_name_rule
from deltaguard.tools.spark_engine.store_spec import StoreSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FILES_SCHEMA = "path string, size long, mtime_ms long"
_FILE, _DIR, _HIDDEN_DIR = 0, 1, 2


@dataclass
class DistributedListing:
    """``files``: every visible file (path relative to the root, size, mtime in epoch ms), a
    DataFrame persisted until :meth:`release`; ``dirs``: directories listed (0: not
    counted); ``hidden_dirs``: directories not entered; ``file_count``: the rows of
    ``files``; ``markers``: the files of ``files`` that can mark a streaming checkpoint
    (:data:`~deltaguard.tools.orphans.streaming.CHECKPOINT_MARKER_REGEX`), if the listing
    collected them (None: the caller looks for them in ``files``)."""

    files: DataFrame
    dirs: int
    hidden_dirs: list[str]
    file_count: int
    _persisted: list[Any]
    markers: list[str] | None = None

    def release(self) -> None:
        for rdd in self._persisted:
            rdd.unpersist()


def _lister(
    spec: StoreSpec,
    partition_columns: Sequence[str],
    configuration: dict[str, str],
    every_file: bool,
) -> Any:
    def run(dirs: Iterable[str]) -> Iterator[tuple[int, str, int, int]]:
        store = spec.open()
        is_hidden = hidden_name_rule(partition_columns, configuration)
        for rel_dir in dirs:
            files, subdirs, _ = store.children(rel_dir)
            for f in files:
                if every_file or not is_hidden(f.path.rpartition("/")[2]):
                    yield _FILE, f.path, f.size, f.mtime_ms
            for sub in subdirs:
                hidden = sub == LOG_DIR if every_file else is_hidden(sub.rpartition("/")[2])
                yield (_HIDDEN_DIR if hidden else _DIR), sub, 0, 0

    return run


def _count_round(found: Any) -> tuple[int, int, list[str]]:
    """One round's files and directories to list next (counted) and hidden directories
    (named), in one job over the round's rows."""
    counted = found.map(
        lambda r: (int(r[0] == _FILE), int(r[0] == _DIR), [r[1]] if r[0] == _HIDDEN_DIR else [])
    )
    files, dirs, hidden = counted.fold(
        (0, 0, []), lambda a, b: (a[0] + b[0], a[1] + b[1], a[2] + b[2])
    )
    return int(files), int(dirs), list(hidden)


def list_table_distributed(
    spark: SparkSession,
    spec: StoreSpec,
    partition_columns: Sequence[str],
    configuration: dict[str, str],
    *,
    dirs_per_task: int = 64,
    every_file: bool = False,
) -> DistributedListing:
    """Lists every visible file below the root (see the module docstring); with
    ``every_file`` every file outside ``_delta_log``, hidden or not (what the audit checks
    live files against). Listing errors in a task fail the job (Spark's ``task.maxFailures``
    retries it first)."""
    from pyspark import StorageLevel

    lister = _lister(spec, list(partition_columns), dict(configuration), every_file)
    dirs = spark.sparkContext.parallelize([""], 1)
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    rounds: list[Any] = []
    hidden: list[str] = []
    listed = 1  # the root
    file_count = 0
    while True:
        found = dirs.mapPartitions(lister).persist(StorageLevel.MEMORY_AND_DISK)
        rounds.append(found)
        next_dirs = found.filter(lambda r: r[0] == _DIR).map(lambda r: r[1])
        files_here, pending, hidden_here = _count_round(found)
        file_count += files_here
        hidden += hidden_here
        if pending == 0:
            break
        listed += pending
        # about dirs_per_task directories a task, every core busy, at most 4 tasks a core
        tasks = max(-(-pending // dirs_per_task), min(pending, parallelism))
        dirs = next_dirs.repartition(min(tasks, 4 * parallelism))
    files_rdd = spark.sparkContext.union([r.filter(lambda r: r[0] == _FILE) for r in rounds])
    # persisted as rows of the JVM: each later use reads them, not the Python rounds again
    files = spark.createDataFrame(files_rdd.map(lambda r: (r[1], r[2], r[3])), FILES_SCHEMA)
    files = files.persist(StorageLevel.MEMORY_AND_DISK)
    return DistributedListing(files, listed, sorted(hidden), file_count, [*rounds, files])
