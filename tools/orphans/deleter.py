"""Deleting files below a table root: checked, batched, retried, and accounted for per file.

Contract of :func:`delete_files`:

* **Containment.** Every path is checked before anything is deleted: it must be relative,
  made of plain components (no ``..``, ``.``, empty parts or NUL) and, on local disk, must not
  resolve through a symlinked directory to somewhere outside the root. One bad path raises
  :class:`OutsideTableError` and nothing at all is deleted.
* **Batches.** On S3, keys go in DeleteObjects requests of at most 1,000 keys (S3's limit),
  a few requests in flight at once; on local disk, one ``unlink`` per file. Nothing is atomic
  across files: a crash leaves some files deleted, which is why the manifest is written
  before and after (:mod:`.manifest`).
* **Retries.** The store's client has the read policy
  (:mod:`deltaguard.logstore.clients`), so botocore already retries each DeleteObjects
  request that fails as a whole (throttling, 5xx, connection errors); deleting is idempotent.
  On top of that, a request that still fails and each key S3 reports as failed with a
  retryable code (``SlowDown``, ``InternalError``, ``ServiceUnavailable``) are retried with
  full-jitter backoff, up to ``attempts`` times. Other per-key errors (``AccessDenied``) are
  recorded and not retried.
* **Outcome.** Every path ends in exactly one of ``deleted``, ``missing`` (already gone:
  fine, the goal is reached), ``failed`` (not deleted, with the error) or ``unknown`` (with
  the error: a request that failed without an answer, or with a 5xx other than 503, after
  its retries, and every path of a batch that raised part way). Nothing is raised for a file
  that could not be deleted, and a batch that fails does not stop the others.
  :func:`delete_in_batches` hands each batch's outcome to a callback instead of keeping it
  (the local cleanup streams them to the manifest's records).
* **Stop.** Given a ``stop`` check (:mod:`.interrupt`), no delete is sent once it returns
  True: a batch not begun is ``not_sent`` whole, a batch in flight finishes the request it
  sent (its per-key answers are read) and sends no retry; its paths no request named are
  ``not_sent``, those of a request that failed as a whole ``unknown`` or ``failed``
  (:meth:`~deltaguard.tools.storage.TableStore.delete_batch`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from deltaguard.tools.storage import DeleteOutcome, StopCheck, TableStore

#: S3's DeleteObjects limit.
S3_BATCH_KEYS = 1000
_PARALLEL_BATCHES = 4


class OutsideTableError(ValueError):
    """A path to delete is not a plain relative path inside the table root."""


def check_contained(store: TableStore, rel_paths: Sequence[str]) -> None:
    """Raises :class:`OutsideTableError` naming the first path that is not safely inside the
    table root (see module docstring)."""
    real_root = store.real_root()
    for rel in rel_paths:
        parts = rel.split("/")
        if (
            not rel
            or rel.startswith("/")
            or "\x00" in rel
            or "\\" in rel
            or any(p in ("", ".", "..") for p in parts)
            or "://" in rel
        ):
            raise OutsideTableError(
                f"refusing to delete {rel!r}: not a plain path inside the table"
            )
        if real_root is not None:
            parent = os.path.realpath(os.path.dirname(os.path.join(real_root, rel)))
            if parent != real_root and not parent.startswith(real_root + os.sep):
                raise OutsideTableError(
                    f"refusing to delete {rel!r}: it resolves to {parent}, outside {real_root}"
                )


def settled(outcome: DeleteOutcome) -> list[tuple[str, str, str | None]]:
    """Every path of ``outcome`` as ``(path, outcome, error)``: the outcome one of
    ``deleted``, ``missing``, ``failed``, ``unknown`` (the manifest records' names), the error
    None for the first two. Both engines' outcome records."""
    out: list[tuple[str, str, str | None]] = [(p, "deleted", None) for p in outcome.deleted]
    out += [(p, "missing", None) for p in outcome.missing]
    out += [(p, "failed", e) for p, e in outcome.failed]
    out += [(p, "unknown", e) for p, e in outcome.unknown]
    return out


def delete_files(
    store: TableStore,
    rel_paths: Sequence[str],
    *,
    attempts: int = 5,
    batch_keys: int = S3_BATCH_KEYS,
    stop: StopCheck | None = None,
) -> DeleteOutcome:
    """Deletes ``rel_paths`` (relative to the store's root) and returns every path's outcome.
    See the module docstring for what is checked, batched, retried, stopped and raised."""
    total = DeleteOutcome()
    delete_in_batches(
        store,
        rel_paths,
        lambda _first, batch: total.merge(batch),
        attempts=attempts,
        batch_keys=batch_keys,
        stop=stop,
    )
    return total


def delete_in_batches(
    store: TableStore,
    rel_paths: Sequence[str],
    on_batch: Callable[[int, DeleteOutcome], None],
    *,
    attempts: int = 5,
    batch_keys: int = S3_BATCH_KEYS,
    stop: StopCheck | None = None,
) -> int:
    """:func:`delete_files` that keeps nothing: each batch's outcome is handed to
    ``on_batch(first, outcome)`` as soon as the batch is settled (``first``: the index in
    ``rel_paths`` of the batch's first path; the batch is ``rel_paths[first:first + n]``), one
    call at a time; a batch ``stop`` kept from starting is handed over too, all ``not_sent``.
    Returns the number of delete requests sent. An exception ``on_batch`` raises is not
    caught: the callback owns its failures."""
    if not 1 <= batch_keys <= S3_BATCH_KEYS:
        raise ValueError(f"batch_keys must be 1..{S3_BATCH_KEYS}")
    check_contained(store, rel_paths)
    one_batch_at_a_time = threading.Lock()
    requests = 0

    def run(first: int) -> None:
        nonlocal requests
        batch = rel_paths[first : first + batch_keys]
        try:
            if stop is not None and stop():
                outcome = DeleteOutcome(not_sent=list(batch))
            else:
                outcome = store.delete_batch(batch, attempts, stop)
        except Exception as exc:  # part of the batch may be gone: its outcome is unknown
            why = f"the batch failed part way: {type(exc).__name__}: {exc}"
            outcome = DeleteOutcome(unknown=[(p, why) for p in batch])
        with one_batch_at_a_time:
            requests += outcome.requests
            on_batch(first, outcome)

    with ThreadPoolExecutor(_PARALLEL_BATCHES, thread_name_prefix="delete") as pool:
        list(pool.map(run, range(0, len(rel_paths), batch_keys)))
    return requests
