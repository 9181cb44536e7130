"""The fan-out write library: many (table, DataFrame) appends from one PySpark driver, none lost.

Needs the ``spark`` extra (``pip install 'deltaguard[spark]'``). :mod:`.writer` holds the
contract (:func:`write_fanout`), :mod:`.keyed_append` one idempotent Delta append, and
:mod:`.example_job` a spark-submit job that uses them. Guide: ``docs/guides/fanout.md``.
"""

from deltaguard.tools.fanout.writer import (
    BatchOutcome,
    BatchStatus,
    FanoutError,
    FanoutResult,
    RetryPolicy,
    TableOutcome,
    WriteRequest,
    write_fanout,
)

__all__ = [
    "BatchOutcome",
    "BatchStatus",
    "FanoutError",
    "FanoutResult",
    "RetryPolicy",
    "TableOutcome",
    "WriteRequest",
    "write_fanout",
]
