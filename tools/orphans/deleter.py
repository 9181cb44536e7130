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
  fine, the goal is reached) or ``failed`` (with the error). Nothing is raised for a file
  that could not be deleted.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from deltaguard.logstore.aws_errors import describe, error_code, http_status
from deltaguard.tools.deltalog.storage import LocalTableStore, S3TableStore, TableStore

#: S3's DeleteObjects limit.
S3_BATCH_KEYS = 1000
_RETRYABLE_KEY_ERRORS = frozenset({"SlowDown", "InternalError", "ServiceUnavailable", "503"})
_PARALLEL_BATCHES = 4


class OutsideTableError(ValueError):
    """A path to delete is not a plain relative path inside the table root."""


@dataclass
class DeleteOutcome:
    """Per-path result of a deletion run."""

    deleted: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def merge(self, other: DeleteOutcome) -> None:
        with self._lock:
            self.deleted += other.deleted
            self.missing += other.missing
            self.failed += other.failed
            self.requests += other.requests


def check_contained(store: TableStore, rel_paths: Sequence[str]) -> None:
    """Raises :class:`OutsideTableError` naming the first path that is not safely inside the
    table root (see module docstring)."""
    real_root = os.path.realpath(store.root) if isinstance(store, LocalTableStore) else None
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


def _backoff(attempt: int, base_s: float = 0.05, cap_s: float = 5.0) -> None:
    time.sleep(random.uniform(0, min(cap_s, base_s * 2**attempt)))


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, BotoCoreError):
        return True
    status = http_status(exc)
    return status >= 500 or status == 429 or error_code(exc) in _RETRYABLE_KEY_ERRORS


def _delete_local(store: LocalTableStore, rel_paths: Sequence[str]) -> DeleteOutcome:
    out = DeleteOutcome()
    for rel in rel_paths:
        path = Path(store.root) / rel
        try:
            if path.is_dir() and not path.is_symlink():
                out.failed.append((rel, "is a directory"))
                continue
            path.unlink()
            out.deleted.append(rel)
        except FileNotFoundError:
            out.missing.append(rel)
        except OSError as exc:
            out.failed.append((rel, exc.strerror or str(exc)))
        out.requests += 1
    return out


def _delete_s3_batch(store: S3TableStore, rel_paths: Sequence[str], attempts: int) -> DeleteOutcome:
    out = DeleteOutcome()
    prefix = store.root.key.strip("/")
    prefix = f"{prefix}/" if prefix else ""
    todo = list(rel_paths)
    for attempt in range(attempts):
        if not todo:
            break
        if attempt:
            _backoff(attempt)
        out.requests += 1
        try:
            response: dict[str, Any] = store.client.delete_objects(
                Bucket=store.root.bucket,
                Delete={"Objects": [{"Key": prefix + r} for r in todo], "Quiet": True},
            )
        except (ClientError, BotoCoreError) as exc:
            if _retryable(exc) and attempt + 1 < attempts:
                continue
            out.failed += [(r, describe(exc)) for r in todo]
            return out
        errors = {e["Key"][len(prefix) :]: e for e in response.get("Errors", ())}
        out.deleted += [r for r in todo if r not in errors]
        retry = []
        for rel, err in errors.items():
            code = str(err.get("Code", ""))
            if code == "NoSuchKey":
                out.missing.append(rel)
            elif code in _RETRYABLE_KEY_ERRORS and attempt + 1 < attempts:
                retry.append(rel)
            else:
                out.failed.append((rel, f"{code}: {err.get('Message', '')}".strip(": ")))
        todo = retry
    return out


def delete_files(
    store: TableStore,
    rel_paths: Sequence[str],
    *,
    attempts: int = 5,
    batch_keys: int = S3_BATCH_KEYS,
    on_progress: Callable[[int], None] | None = None,
) -> DeleteOutcome:
    """Deletes ``rel_paths`` (relative to the store's root). See the module docstring for
    what is checked, batched, retried and raised. ``on_progress(n)`` is called after each
    batch with the number of paths it settled."""
    if not 1 <= batch_keys <= S3_BATCH_KEYS:
        raise ValueError(f"batch_keys must be 1..{S3_BATCH_KEYS}")
    check_contained(store, rel_paths)
    total = DeleteOutcome()
    batches = [rel_paths[i : i + batch_keys] for i in range(0, len(rel_paths), batch_keys)]

    def run(batch: Sequence[str]) -> None:
        if isinstance(store, S3TableStore):
            result = _delete_s3_batch(store, batch, attempts)
        elif isinstance(store, LocalTableStore):
            result = _delete_local(store, batch)
        else:
            raise TypeError(f"cannot delete from {type(store).__name__}")
        total.merge(result)
        if on_progress is not None:
            on_progress(len(batch))

    with ThreadPoolExecutor(_PARALLEL_BATCHES, thread_name_prefix="delete") as pool:
        list(pool.map(run, batches))
    return total
