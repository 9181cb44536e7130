"""The local engine's classification of listed data files, as Spark SQL columns.

:func:`data_class_columns` is the SQL generated from the orphans rule table
(:data:`~deltaguard.tools.orphans.classify.DATA_RULES`, which the local engine's
:func:`~deltaguard.tools.orphans.classify.data_candidate` evaluates) over a listed file
joined (left) with its path's reference flags
(:data:`~deltaguard.tools.spark_engine.log_refs.REFS_SCHEMA`; a file no entry names has
null flags); ``tests/test_orphans_spark_engine.py`` checks it row for row against
``data_candidate`` on every class. :func:`visible_unkept` is the local engine's visibility
and streaming checkpoint filter (:func:`~deltaguard.tools.orphans.rules.hidden_regex`,
:func:`~deltaguard.tools.orphans.streaming.in_checkpoint`) on a ``path`` column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import reduce
from operator import and_
from typing import TYPE_CHECKING

from deltaguard.tools.deltalog.times import iso_utc
from deltaguard.tools.orphans.classify import DATA_RULES, DataRule, Detail, Fact
from deltaguard.tools.orphans.rules import CHANGE_DATA_DIR, hidden_regex

if TYPE_CHECKING:
    from pyspark.sql import Column


def data_class_columns(
    cutoff_ms: int, lost: Mapping[str, str] | None = None
) -> tuple[Column, Column]:
    """The ``class`` (null: not a candidate, i.e. protected) and ``reason`` columns of a row
    with ``path``, ``mtime_ms`` and the nullable flags ``protected``, ``named_in_log``,
    ``tombstone``, ``tombstone_ms``, ``change_data``: one ``CASE`` generated from
    :data:`~deltaguard.tools.orphans.classify.DATA_RULES`. ``lost``: the files of lost commits
    with their reasons (:func:`~deltaguard.tools.orphans.classify.lost_commit_files`, a few
    per lost commit: a literal map)."""
    from pyspark.sql import functions as F

    def flag(name: str) -> Column:
        return F.coalesce(F.col(name), F.lit(False))

    lost_reason = (
        F.create_map(*(F.lit(x) for pair in sorted(lost.items()) for x in pair))[F.col("path")]
        if lost
        else F.lit(None).cast("string")
    )
    facts = {
        Fact.PROTECTED: flag("protected"),
        Fact.LOST: lost_reason.isNotNull(),
        Fact.NAMED_IN_LOG: flag("named_in_log"),
        Fact.RECENT: F.col("mtime_ms") >= F.lit(cutoff_ms),
        Fact.CHANGE_DATA_PATH: F.col("path").startswith(CHANGE_DATA_DIR + "/"),
        Fact.TOMBSTONE: flag("tombstone"),
        Fact.CHANGE_DATA: flag("change_data"),
    }
    details = {
        Detail.LOST_REASON: lost_reason,
        Detail.DELETED_AT: F.coalesce(iso_utc_column(F.col("tombstone_ms")), F.lit(iso_utc(None))),
    }
    return _case(facts, _class_value), _case(facts, lambda rule: _reason_value(rule, details))


def _case(facts: Mapping[Fact, Column], value: Callable[[DataRule], Column]) -> Column:
    """``CASE WHEN <rule> THEN value(rule) ... END`` over :data:`DATA_RULES` (the last holds
    always: the ``ELSE``)."""
    from pyspark.sql import functions as F

    *conditional, last = DATA_RULES
    assert not last.when, "the last data rule holds always"
    out: Column | None = None
    for rule in conditional:
        holds = reduce(and_, (facts[f] if v else ~facts[f] for f, v in rule.when))
        out = F.when(holds, value(rule)) if out is None else out.when(holds, value(rule))
    assert out is not None
    return out.otherwise(value(last))


def _class_value(rule: DataRule) -> Column:
    from pyspark.sql import functions as F

    if rule.file_class is None:
        return F.lit(None).cast("string")
    return F.lit(rule.file_class.value)


def _reason_value(rule: DataRule, details: Mapping[Detail, Column]) -> Column:
    from pyspark.sql import functions as F

    if rule.file_class is None:
        return F.lit(None).cast("string")
    if rule.detail is Detail.NONE:
        return F.lit(rule.reason)
    before, after = rule.reason.split("{}")
    return F.concat(F.lit(before), details[rule.detail], F.lit(after))


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
