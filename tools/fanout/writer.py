"""Concurrent fan-out appends: many (table, DataFrame) writes from one driver, none lost.

:func:`write_fanout` appends each DataFrame of a mapping or stream to its Delta table from a
bounded thread pool, and returns a :class:`FanoutResult` with one :class:`TableOutcome` per
table. Its contract:

- **Creation and schema evolution run alone.** Per table, a write that creates the table (it does
  not exist) or evolves its schema (the DataFrame has columns the table lacks; written with
  ``mergeSchema``) holds the table exclusively; the other writes to that table wait for it, then
  run in parallel. This is what makes concurrent first writes safe: without it they fail with
  ``ProtocolChangedException`` / ``MetadataChangedException``. Writes to different tables never
  wait for each other (beyond the pool's bound).
- **Ordering.** Writes start in input order, at most ``max_workers`` at a time. Commits of
  parallel writes to one table land in any order; each is one atomic Delta commit.
- **Retries.** Only Delta's retryable conflicts (``ConcurrentAppendException``,
  ``ProtocolChangedException``, ``MetadataChangedException``: see
  :data:`deltaguard.tools.fanout.keyed_append.RETRYABLE_CONFLICTS`) are retried, up to
  ``RetryPolicy.max_attempts`` attempts per write, with full-jitter exponential backoff, and
  each attempt re-plans create/evolve/append against the table's current schema. Anything else
  fails that write at once (no retry).
- **Every failure surfaces.** Every future is read. A failed write's exception is kept in its
  :class:`BatchOutcome` (never swallowed, never only logged). With ``raise_on_error=True`` (the
  default) :class:`FanoutError`, an ``ExceptionGroup`` of all write errors carrying the full
  result, is raised after every write has finished. With ``stop_on_error=True``, writes not yet
  started when one fails are not started (status ``cancelled``). An exception raised by the
  input stream itself stops submission, and is raised in a FanoutError once in-flight writes end.
- **Idempotency.** Every write carries Delta's ``txnAppId`` / ``txnVersion``:
  ``txnAppId = "<job_id>/<key>"``, ``txnVersion = run_version``. ``key`` is the request's own key
  or, if it has none, the write's ordinal among the writes to the same table (0, 1, ...) in
  input order. A re-run after a crash with the same ``job_id``, ``run_version`` and the same
  writes (same keys, or the same order per table) skips every write already committed: Delta
  skips a write whose ``txnVersion`` is ``<=`` the one recorded for that ``txnAppId``
  (status ``skipped``). A new logical run must use a higher ``run_version`` (e.g. the run date
  as ``yyyymmdd``, or the scheduler's run number). Keys must be unique per table in one run.

Tables are identified by their path string as given; give each table one spelling.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Self

from deltaguard.logstore.backoff import full_jitter_delay
from deltaguard.tools.fanout.keyed_append import (
    AppendResult,
    TxnKey,
    WriteMode,
    is_retryable_conflict,
    keyed_append,
    missing_columns,
    plan_write,
    table_schema,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


@dataclass(frozen=True)
class RetryPolicy:
    """Attempts per write (first try included) and the full-jitter backoff between them: before
    attempt ``n + 1`` the write sleeps ``uniform(0, min(max_delay_s, base_delay_s * 2**(n-1)))``."""

    max_attempts: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")

    def delay_s(self, attempt: int, rng: random.Random) -> float:
        return full_jitter_delay(attempt, self.base_delay_s, self.max_delay_s, rng)


@dataclass(frozen=True)
class WriteRequest:
    """One append: ``df`` to the Delta table at ``table``. ``key`` names the write within the
    run for idempotency (default: its ordinal among the run's writes to ``table``)."""

    table: str
    df: DataFrame
    key: str | None = None


class BatchStatus(StrEnum):
    #: Committed by this call.
    WRITTEN = "written"
    #: Not written: the table already records this write's key (an earlier run committed it).
    SKIPPED = "skipped"
    #: Failed; ``error`` holds the exception.
    FAILED = "failed"
    #: Not started because another write failed and ``stop_on_error`` was set.
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class BatchOutcome:
    """What happened to one write. ``mode`` is how its last attempt was planned; ``version`` and
    ``rows`` are those of its commit (Delta's ``numOutputRows``) when ``status`` is WRITTEN."""

    table: str
    key: str
    txn_app_id: str
    txn_version: int
    status: BatchStatus
    mode: WriteMode | None = None
    rows: int = 0
    version: int | None = None
    attempts: int = 0
    error: BaseException | None = None
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "status": self.status.value,
            "mode": self.mode.value if self.mode else None,
            "rows": self.rows,
            "version": self.version,
            "attempts": self.attempts,
            "error": _describe(self.error),
            "seconds": round(self.seconds, 2),
        }


def _describe(error: BaseException | None) -> str | None:
    return None if error is None else f"{type(error).__name__}: {str(error)[:300]}"


@dataclass(frozen=True)
class TableOutcome:
    """All writes of one run to one table, in input order."""

    table: str
    batches: tuple[BatchOutcome, ...]

    @property
    def rows(self) -> int:
        """Rows this run committed to the table (skipped writes add none)."""
        return sum(b.rows for b in self.batches)

    @property
    def version(self) -> int | None:
        """The newest version this run committed (None if it committed nothing)."""
        versions = [b.version for b in self.batches if b.version is not None]
        return max(versions) if versions else None

    @property
    def attempts(self) -> int:
        return sum(b.attempts for b in self.batches)

    @property
    def errors(self) -> list[BaseException]:
        return [b.error for b in self.batches if b.error is not None]

    @property
    def error(self) -> BaseException | None:
        """The first error of the table's writes, in input order."""
        return next(iter(self.errors), None)

    @property
    def ok(self) -> bool:
        return all(b.status in (BatchStatus.WRITTEN, BatchStatus.SKIPPED) for b in self.batches)

    def summary(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "version": self.version,
            "attempts": self.attempts,
            "error": _describe(self.error),
            "batches": [b.summary() for b in self.batches],
        }


@dataclass(frozen=True)
class FanoutResult:
    """Per-table outcomes, in the order tables first appeared in the input."""

    tables: dict[str, TableOutcome]
    input_error: BaseException | None = None

    @property
    def batches(self) -> list[BatchOutcome]:
        return [b for t in self.tables.values() for b in t.batches]

    @property
    def errors(self) -> list[BaseException]:
        errors = [e for t in self.tables.values() for e in t.errors]
        return errors + ([self.input_error] if self.input_error else [])

    @property
    def ok(self) -> bool:
        return self.input_error is None and all(t.ok for t in self.tables.values())

    def summary(self) -> dict[str, Any]:
        """JSON-ready: per table rows, version, attempts, first error and every batch."""
        return {
            "ok": self.ok,
            "input_error": _describe(self.input_error),
            "tables": {name: t.summary() for name, t in self.tables.items()},
        }


class FanoutError(ExceptionGroup):
    """Raised after every write ended: the exceptions of all failed writes (and of the input
    stream, if it failed); ``result`` is the complete :class:`FanoutResult`."""

    result: FanoutResult

    def __new__(
        cls, message: str, exceptions: list[Exception], result: FanoutResult | None = None
    ) -> Self:
        self = super().__new__(cls, message, exceptions)
        if result is not None:
            self.result = result
        return self

    def __init__(
        self, message: str, exceptions: list[Exception], result: FanoutResult | None = None
    ) -> None:
        super().__init__(message, exceptions)

    def derive(self, excs: Any) -> FanoutError:  # type: ignore[override]
        return FanoutError(self.message, list(excs), getattr(self, "result", None))


class _TableGate:
    """Per-table shared/exclusive lock (waiting exclusive holders go first), plus the newest
    schema of the table this run has seen (None: not known yet, or no table)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._exclusive_waiting = 0
        self.schema: StructType | None = None

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive or self._exclusive_waiting:
                self._cond.wait()
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._exclusive_waiting += 1
            while self._exclusive or self._shared:
                self._cond.wait()
            self._exclusive_waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()

    def fits(self, df_schema: StructType) -> bool:
        """The table is known to exist with every column of ``df_schema``."""
        return self.schema is not None and not missing_columns(df_schema, self.schema)


@dataclass
class _Run:
    spark: SparkSession
    job_id: str
    run_version: int
    retry: RetryPolicy
    options: dict[str, str]
    stop_on_error: bool
    rng: random.Random = field(default_factory=random.Random)
    gates: dict[str, _TableGate] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def attempt(self, request: WriteRequest, key: TxnKey) -> tuple[WriteMode, AppendResult]:
        """One attempt: in parallel if the table is known to fit the DataFrame, else alone
        (creating or evolving the table, or learning that it already fits)."""
        gate = self.gates[request.table]
        df_schema = request.df.schema
        while True:
            with gate.shared():
                if gate.fits(df_schema):
                    return WriteMode.APPEND, self._append(request, key, merge_schema=False)
            with gate.exclusive():
                if not gate.fits(df_schema):
                    gate.schema = table_schema(self.spark, request.table)
                    mode = plan_write(df_schema, gate.schema)
                    if mode is not WriteMode.APPEND:
                        gate.schema = None  # unknown until this write has landed
                        result = self._append(request, key, merge_schema=mode is WriteMode.EVOLVE)
                        gate.schema = table_schema(self.spark, request.table)
                        return mode, result
            # The table exists and has the DataFrame's columns: write alongside the others.

    def _append(self, request: WriteRequest, key: TxnKey, merge_schema: bool) -> AppendResult:
        return keyed_append(
            self.spark,
            request.table,
            request.df,
            key,
            merge_schema=merge_schema,
            options=self.options,
        )

    def write(self, request: WriteRequest, key_name: str) -> BatchOutcome:
        """All attempts of one write; returns its outcome and never raises."""
        key = TxnKey(f"{self.job_id}/{key_name}", self.run_version)
        started = time.monotonic()
        base: dict[str, Any] = {
            "table": request.table,
            "key": key_name,
            "txn_app_id": key.app_id,
            "txn_version": key.version,
        }
        attempts = 0
        mode: WriteMode | None = None
        while True:
            if self.stop.is_set():
                return BatchOutcome(**base, status=BatchStatus.CANCELLED, attempts=attempts)
            attempts += 1
            try:
                mode, result = self.attempt(request, key)
            except Exception as exc:
                if is_retryable_conflict(exc) and attempts < self.retry.max_attempts:
                    time.sleep(self.retry.delay_s(attempts, self.rng))
                    continue
                if self.stop_on_error:
                    self.stop.set()
                return BatchOutcome(
                    **base,
                    status=BatchStatus.FAILED,
                    mode=mode,
                    attempts=attempts,
                    error=exc,
                    seconds=time.monotonic() - started,
                )
            return BatchOutcome(
                **base,
                status=BatchStatus.WRITTEN if result.committed else BatchStatus.SKIPPED,
                mode=mode,
                rows=result.rows,
                version=result.version,
                attempts=attempts,
                seconds=time.monotonic() - started,
            )


def _requests(
    writes: Mapping[str, DataFrame] | Iterable[WriteRequest | tuple[str, DataFrame]],
) -> Iterator[WriteRequest]:
    items: Iterable[Any] = writes.items() if isinstance(writes, Mapping) else writes
    for item in items:
        yield item if isinstance(item, WriteRequest) else WriteRequest(item[0], item[1])


def write_fanout(
    spark: SparkSession,
    writes: Mapping[str, DataFrame] | Iterable[WriteRequest | tuple[str, DataFrame]],
    *,
    job_id: str,
    run_version: int,
    max_workers: int = 4,
    retry: RetryPolicy | None = None,
    options: dict[str, str] | None = None,
    raise_on_error: bool = True,
    stop_on_error: bool = False,
) -> FanoutResult:
    """Appends every DataFrame of ``writes`` (a ``{table: df}`` mapping, or an iterable, possibly
    lazy, of ``(table, df)`` pairs or :class:`WriteRequest`) to its Delta table, at most
    ``max_workers`` at once, under the contract in this module's docstring.

    ``job_id`` and ``run_version`` form the idempotency keys; ``options`` are extra
    DataFrameWriter options for every write (not ``txnAppId``, ``txnVersion``, ``mergeSchema``).
    Returns the per-table outcomes; raises :class:`FanoutError` after all writes ended if any
    failed and ``raise_on_error``, or if the input stream raised.
    """
    _check_arguments(job_id, run_version, max_workers)
    run = _Run(
        spark, job_id, run_version, retry or RetryPolicy(), dict(options or {}), stop_on_error
    )
    outcomes: dict[str, list[BatchOutcome | None]] = {}
    keys: dict[str, set[str]] = {}
    pending: dict[Future[BatchOutcome], tuple[str, int]] = {}
    input_error: Exception | None = None

    def collect(done: Iterable[Future[BatchOutcome]]) -> None:
        for future in done:
            table, index = pending.pop(future)
            outcomes[table][index] = future.result()  # write() never raises: nothing is hidden

    with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="fanout") as pool:
        try:
            for request in _requests(writes):
                table_outcomes = outcomes.setdefault(request.table, [])
                run.gates.setdefault(request.table, _TableGate())
                key_name = request.key if request.key is not None else str(len(table_outcomes))
                table_outcomes.append(None)
                index = len(table_outcomes) - 1
                if key_name in keys.setdefault(request.table, set()):
                    table_outcomes[index] = BatchOutcome(
                        request.table,
                        key_name,
                        f"{job_id}/{key_name}",
                        run_version,
                        BatchStatus.FAILED,
                        error=ValueError(f"{request.table}: key {key_name!r} given twice"),
                    )
                    continue
                keys[request.table].add(key_name)
                if len(pending) >= 2 * max_workers:  # a bounded backlog for lazy streams
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    collect(done)
                pending[pool.submit(run.write, request, key_name)] = (request.table, index)
        except Exception as exc:
            input_error = exc
        finally:
            collect(wait(list(pending)).done)
    result = FanoutResult(
        {
            t: TableOutcome(t, tuple(o for o in batches if o is not None))
            for t, batches in outcomes.items()
        },
        input_error,
    )
    _raise_if_failed(result, raise_on_error)
    return result


def _check_arguments(job_id: str, run_version: int, max_workers: int) -> None:
    """Raises ValueError for an empty ``job_id``, a ``run_version`` no txnVersion can hold, or
    fewer than one worker."""
    if not job_id:
        raise ValueError("job_id must not be empty: it is part of every write's txnAppId")
    TxnKey(job_id, run_version)  # validates run_version
    if max_workers < 1:
        raise ValueError("max_workers must be >= 1")


def _raise_if_failed(result: FanoutResult, raise_on_error: bool) -> None:
    """Raises :class:`FanoutError` if the input stream raised, or writes failed and
    ``raise_on_error``."""
    errors = [e for e in result.errors if isinstance(e, Exception)]
    input_error = result.input_error
    if input_error is not None or (raise_on_error and errors):
        failed = sum(1 for b in result.batches if b.status is BatchStatus.FAILED)
        raise FanoutError(
            f"fan-out: {failed} of {len(result.batches)} writes failed"
            + (" and the input stream raised" if input_error else ""),
            errors,
            result,
        )
