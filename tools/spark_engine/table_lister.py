"""The table's files listed by Spark executors on the JVM side (``io.deltaguard.orphans.TableLister``
in the plugin jar): no listed path crosses into Python or reaches the driver.

The driver lists the root; each task walks some of its visible sub-directories (or key ranges
of a large S3 directory, cut by :mod:`.key_ranges`) through Hadoop's
``FileSystem`` with the session's Hadoop configuration (``sessionState.newHadoopConf``: the
settings Spark's own file reads use), skipping hidden names by
:func:`~deltaguard.tools.orphans.rules.hidden_regex`, the Python rule's one definition. The rows
become a DataFrame, read once by the job that classifies them (nothing is persisted); that job
also counts them (an ``Observation``) and the lister collects the hidden directories and the
streaming checkpoint markers (few) in accumulators.

:func:`list_table_jvm` returns None when the session's class path lacks the lister (a session
started without deltaguard's jar); the caller then lists with
:func:`~deltaguard.tools.spark_engine.listing.list_table_distributed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltaguard.tools.orphans.rules import hidden_regex
from deltaguard.tools.orphans.streaming import CHECKPOINT_MARKER_REGEX
from deltaguard.tools.spark_engine.listing import FILES_SCHEMA
from deltaguard.tools.spark_engine.store_spec import StoreSpec
from deltaguard.tools.storage import local_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation, SparkSession

_LISTER = "io.deltaguard.orphans.TableLister"


def hadoop_root(uri: str) -> str:
    """The table root as ``TableLister`` takes it: a local path or ``file:`` URI (decoded, as
    :func:`~deltaguard.tools.storage.local_path` reads it) as its encoded ``file:`` URI, an S3
    URI as it is: Hadoop's ``Path(String)`` takes it literally, as deltaguard does
    (``s3a://b/hash#1`` is the key ``hash#1``)."""
    path = local_path(uri)
    return uri if path is None else path.resolve().as_uri()


@dataclass
class JvmListing:
    """``files``: every visible file (path relative to the root, size, mtime in epoch ms), a
    DataFrame computed by the job that uses it (the listing runs then). After that job:
    :attr:`file_count` (its rows), :meth:`hidden_dirs` (directories not entered) and
    :meth:`markers` (the files that can mark a streaming checkpoint,
    :data:`~deltaguard.tools.orphans.streaming.CHECKPOINT_MARKER_REGEX`)."""

    files: DataFrame
    _hidden: Any
    _markers: Any
    _count: Observation

    @property
    def file_count(self) -> int:
        return observed(self._count, "files", self.files.count)

    def hidden_dirs(self) -> list[str]:
        return sorted(set(self._hidden.value()))

    def markers(self) -> set[str]:
        return set(self._markers.value())


def observed(observation: Observation, name: str, otherwise: Callable[[], int]) -> int:
    """The metric ``name`` of ``observation`` after the job that computed it, or
    ``otherwise()`` if Spark has none (an input the optimizer found empty drops the
    observation from the plan, and ``Observation.get`` then fails)."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]

    try:
        return int(observation.get[name])
    except Py4JError:
        return otherwise()


def lister_available(spark: SparkSession) -> bool:
    """True if the session's driver can load ``TableLister`` (deltaguard's jar is on its
    class path; the executors share it under every preset)."""
    from py4j.protocol import Py4JError

    try:
        jvm: Any = spark.sparkContext._jvm
        jvm.java.lang.Class.forName(
            _LISTER, False, jvm.Thread.currentThread().getContextClassLoader()
        )
    except Py4JError:  # ClassNotFoundException, through py4j
        return False
    return True


def max_tasks(spark: SparkSession) -> int:
    """The most tasks one listing runs in (also the most ranges of one directory)."""
    return 4 * max(1, spark.sparkContext.defaultParallelism)


def list_table_jvm(
    spark: SparkSession,
    spec: StoreSpec,
    partition_columns: Sequence[str],
    configuration: dict[str, str],
    cuts: Mapping[str, Sequence[str]] | None = None,
) -> JvmListing | None:
    """Every visible file below the root (see the module docstring), or None without the
    lister; the directories in ``cuts`` (relative path, ``""`` for the root) are listed in the
    key ranges those names cut them into (:mod:`.key_ranges`). Listing errors fail the Spark
    job that uses ``files`` (after Spark's task retries); a root that cannot be listed raises
    here."""
    from pyspark.sql import DataFrame, Observation
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_string

    if not lister_available(spark):
        return None
    sc = spark.sparkContext
    jvm: Any = sc._jvm
    session: Any = spark._jsparkSession
    conf = session.sessionState().newHadoopConf()
    hidden = sc._jsc.sc().collectionAccumulator("orphans hidden directories")
    markers = sc._jsc.sc().collectionAccumulator("orphans checkpoint markers")
    bounds = jvm.java.util.HashMap()
    for directory, names in (cuts or {}).items():
        jnames = jvm.java.util.ArrayList()
        for name in names:
            jnames.add(name)
        bounds.put(directory, jnames)
    lister: Any = getattr(jvm, _LISTER)
    jrdd = lister.list(
        sc._jsc,
        conf,
        hadoop_root(spec.uri),
        hidden_regex(partition_columns, configuration),
        CHECKPOINT_MARKER_REGEX,
        max_tasks(spark),
        hidden,
        markers,
        bounds,
    )
    schema = session.parseDataType(_parse_datatype_string(FILES_SCHEMA).json())
    files = DataFrame(session.createDataFrame(jrdd, schema), spark)
    count = Observation("orphans listing")
    files = files.observe(count, F.count(F.lit(1)).alias("files"))
    return JvmListing(files, hidden, markers, count)
