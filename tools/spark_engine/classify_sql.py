"""The local engine's classification of listed data files, as Spark SQL columns.

:func:`data_class_columns` is :func:`~deltaguard.tools.orphans.classify.data_candidate` over
a listed file joined (left) with its path's reference flags
(:data:`~deltaguard.tools.spark_engine.log_refs.REFS_SCHEMA`; a file no entry names has
null flags), with the same classes and reasons (the reason texts are the local engine's
constants); ``tests/test_orphans_spark_engine.py`` checks it row for row against
``data_candidate`` on every class. :func:`visible_unkept` is the local engine's visibility
and streaming checkpoint filter (:func:`~deltaguard.tools.orphans.rules.hidden_regex`,
:func:`~deltaguard.tools.orphans.streaming.in_checkpoint`) on a ``path`` column.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from deltaguard.tools.deltalog.times import iso_utc
from deltaguard.tools.orphans.classify import (
    EXPIRED_CHANGE_DATA_REASON,
    EXPIRED_REASON,
    ORPHAN_CHANGE_DATA_REASON,
    ORPHAN_REASON,
    RECENT_REASON,
    TOMBSTONE_REASON,
    FileClass,
)
from deltaguard.tools.orphans.rules import CHANGE_DATA_DIR, hidden_regex

if TYPE_CHECKING:
    from pyspark.sql import Column


def data_class_columns(
    cutoff_ms: int, lost: Mapping[str, str] | None = None
) -> tuple[Column, Column]:
    """The ``class`` (null: not a candidate, i.e. protected) and ``reason`` columns of a row
    with ``path``, ``mtime_ms`` and the nullable flags ``protected``, ``named_in_log``,
    ``tombstone``, ``tombstone_ms``, ``change_data``. ``lost``: the files of lost commits
    with their reasons (:func:`~deltaguard.tools.orphans.classify.lost_commit_files`, a few
    per lost commit: a literal map)."""
    from pyspark.sql import functions as F

    def flag(name: str) -> Column:
        return F.coalesce(F.col(name), F.lit(False))

    before, after = TOMBSTONE_REASON.split("{}")
    tombstone_ms = F.coalesce(iso_utc_column(F.col("tombstone_ms")), F.lit(iso_utc(None)))
    protected = flag("protected")
    recent = F.col("mtime_ms") >= F.lit(cutoff_ms)
    orphan = ~flag("named_in_log")
    lost_reason = (
        F.create_map(*(F.lit(x) for pair in sorted(lost.items()) for x in pair))[F.col("path")]
        if lost
        else F.lit(None).cast("string")
    )
    lost_file = lost_reason.isNotNull() & orphan
    file_class = (
        F.when(protected, F.lit(None).cast("string"))
        .when(lost_file, F.lit(FileClass.LOST_COMMIT.value))
        .when(recent, F.lit(FileClass.RECENT.value))
        .when(orphan, F.lit(FileClass.ORPHAN.value))
        .otherwise(F.lit(FileClass.EXPIRED_TOMBSTONE.value))
    )
    reason = (
        F.when(protected, F.lit(None).cast("string"))
        .when(lost_file, lost_reason)
        .when(recent, F.lit(RECENT_REASON))
        .when(
            orphan,
            F.when(
                F.col("path").startswith(CHANGE_DATA_DIR + "/"), F.lit(ORPHAN_CHANGE_DATA_REASON)
            ).otherwise(F.lit(ORPHAN_REASON)),
        )
        .when(flag("tombstone"), F.concat(F.lit(before), tombstone_ms, F.lit(after)))
        .when(flag("change_data"), F.lit(EXPIRED_CHANGE_DATA_REASON))
        .otherwise(F.lit(EXPIRED_REASON))
    )
    return file_class, reason


def iso_utc_column(ms: Column) -> Column:
    """:func:`~deltaguard.tools.deltalog.times.iso_utc` of a column of epoch milliseconds
    (null for null), the same string for every session time zone: the date comes from DATE
    arithmetic and the time of day from integer arithmetic, never from a timestamp rendered
    in the session's zone."""
    from pyspark.sql import functions as F

    day_ms = 86_400_000
    days = F.floor(ms / day_ms)
    rest = ms - days * day_ms

    def two(n: Column, width: int = 2) -> Column:
        return F.lpad(n.cast("long").cast("string"), width, "0")

    return F.concat(
        F.date_add(F.lit("1970-01-01").cast("date"), days.cast("int")).cast("string"),
        F.lit("T"),
        two(F.floor(rest / 3_600_000)),
        F.lit(":"),
        two(F.floor(rest % 3_600_000 / 60_000)),
        F.lit(":"),
        two(F.floor(rest % 60_000 / 1_000)),
        F.lit("."),
        two(rest % 1_000, 3),
        F.lit("+00:00"),
    )


def partition_column() -> Column:
    """:func:`~deltaguard.tools.orphans.rules.partition_of` of the ``path`` column."""
    from pyspark.sql import functions as F

    return F.regexp_extract(F.col("path"), r"(?s)^(.*)/[^/]*$", 1)


def visible_unkept(
    partition_columns: Sequence[str], configuration: dict[str, str], checkpoints: Iterable[str]
) -> Column:
    """True for a ``path`` VACUUM can see (no hidden component) outside every streaming
    checkpoint directory of ``checkpoints`` (``""``: the root itself is one)."""
    from pyspark.sql import functions as F

    dirs = sorted(set(checkpoints))
    if "" in dirs:
        return F.lit(False)
    visible = ~F.col("path").rlike(hidden_regex(partition_columns, configuration))
    for d in dirs:
        visible = visible & ~F.col("path").startswith(d + "/")
    return visible
