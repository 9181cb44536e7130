"""Table stores whose deletes fail part way, for the Spark engine's cleanup tests: a real
table (local disk) whose ``delete_batch`` deletes every file of the batch but ``poison`` and
then raises. Executors get this module by value (``register_pickle_by_value``), so the tests
need nothing installed on them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deltaguard.tools.spark_engine.store_spec import StoreSpec
from deltaguard.tools.storage import DeleteOutcome, StopCheck, TableStore, open_table


class PartWayFailure(BaseException):
    """Not an Exception: nothing in deltaguard catches it, so the Spark task fails."""


@dataclass(frozen=True)
class PoisonedDeleteSpec(StoreSpec):
    """``StoreSpec`` of a store whose batch holding ``poison`` deletes the rest, then raises
    ``ConnectionResetError`` (``fatal=False``) or :class:`PartWayFailure` (``fatal=True``)."""

    poison: str = ""
    fatal: bool = False

    def open(self) -> TableStore:
        return _PoisonedStore(open_table(self.uri, self.s3), self.poison, self.fatal)  # type: ignore[return-value]


class _PoisonedStore:
    def __init__(self, inner: TableStore, poison: str, fatal: bool) -> None:
        self._inner, self._poison, self._fatal = inner, poison, fatal

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def delete_batch(
        self, rel_paths: Sequence[str], attempts: int, stop: StopCheck | None = None
    ) -> DeleteOutcome:
        kept = [p for p in rel_paths if p != self._poison]
        out = self._inner.delete_batch(kept, attempts, stop)
        if self._poison in rel_paths:
            if self._fatal:
                raise PartWayFailure(f"the executor died deleting {self._poison}")
            raise ConnectionResetError(f"connection reset deleting {self._poison}")
        return out
