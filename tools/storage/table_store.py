"""The storage seam's types: the :class:`TableStore` protocol every caller programs against,
what it returns (:class:`FileInfo`, :data:`Children`, :class:`DeleteOutcome`), how to reach S3
(:class:`S3Options`), and the key-range and containment helpers both stores share.

A leaf of :mod:`deltaguard.tools.storage`: no store, no client, no I/O here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class FileInfo:
    """A listed file: ``path`` relative to the table root, size in bytes, modification time in
    epoch milliseconds."""

    path: str
    size: int
    mtime_ms: int


#: What listing one directory returns: files (not in the caller's ``skip`` set), the
#: sub-directories, and how many files were skipped because ``skip`` named them.
Children = tuple[list[FileInfo], list[str], int]


def in_key_range(name: str, is_dir: bool, after: str | None, up_to: str | None) -> bool:
    """Whether the entry ``name`` of a directory (a sub-directory compared with its ``/``, as
    S3 sorts its common prefix) is in the key range ``(after, up_to]`` (None: unbounded), in
    S3's key order (UTF-8 bytes). The cuts of a directory's ranges are names without a ``/``;
    why its ranges then hold every entry exactly once: the javadoc of
    ``io.deltaguard.logstore.S3KeyRangeListing``, which applies the same rule on the JVM."""
    key = (name + "/" if is_dir else name).encode("utf-8", "surrogatepass")
    return (after is None or key > after.encode("utf-8", "surrogatepass")) and (
        up_to is None or key <= up_to.encode("utf-8", "surrogatepass")
    )


#: ``delete_batch``'s stop check: True once no further delete may be sent.
StopCheck = Callable[[], bool]


@dataclass
class DeleteOutcome:
    """Per-path result of deleting files: every path ends in exactly one of ``deleted``,
    ``missing`` (already gone), ``failed`` (not deleted, with the error), ``unknown`` (the
    request failed in a way that may still have deleted it: no response, a 5xx other than
    503, an exception part way through a batch; with the error) or ``not_sent`` (a stop was
    asked for before any request naming it was sent: still there)."""

    deleted: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    unknown: list[tuple[str, str]] = field(default_factory=list)
    not_sent: list[str] = field(default_factory=list)
    requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def merge(self, other: DeleteOutcome) -> None:
        with self._lock:
            self.deleted += other.deleted
            self.missing += other.missing
            self.failed += other.failed
            self.unknown += other.unknown
            self.not_sent += other.not_sent
            self.requests += other.requests


def below(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` (both without leading ``/``), or None if not below it."""
    if not root:
        return path or None
    if path.startswith(root + "/") and len(path) > len(root) + 1:
        return path[len(root) + 1 :]
    return None


@dataclass(frozen=True)
class S3Options:
    """How to reach S3: the same options as ``deltaguard probe``. None means boto3's default
    (environment, profile, instance role)."""

    endpoint: str | None = None
    region: str | None = None
    path_style: bool = False


@runtime_checkable
class BatchContainer(Protocol):
    """A set that answers for many items at once (e.g.
    :class:`deltaguard.tools.orphans.pathset.PathSet`)."""

    def contains_all(self, items: Sequence[str]) -> Sequence[bool]: ...


def in_skip(paths: Sequence[str], skip: Container[str]) -> Sequence[bool]:
    """Whether each of ``paths`` is in ``skip``: one batch question when ``skip`` can answer
    one (:class:`BatchContainer`), else one ``in`` per path."""
    if isinstance(skip, BatchContainer):
        return skip.contains_all(paths)
    return [p in skip for p in paths]


class TableStore(Protocol):
    """Access below one table root: read access for everything, deletion for orphan cleanup."""

    #: The table root as given (normalized: no trailing slash).
    uri: str
    #: Directories worth listing at once (a local listing is CPU work under the GIL, where
    #: more threads only contend; S3 listings wait on the network).
    listing_workers: int
    #: Whole-file reads worth running at once (1: sequential).
    read_threads: int

    def list_dir(self, rel_dir: str, start_after: str | None = None) -> list[FileInfo]:
        """Files directly in ``rel_dir`` (not recursive), sorted by name, names after
        ``start_after`` only. A missing directory lists as empty."""
        ...

    def walk(self, rel_dir: str = "") -> Iterator[FileInfo]:
        """Every file below ``rel_dir``, recursively (order unspecified)."""
        ...

    def read(self, rel_path: str) -> bytes:
        """The whole file. Raises :class:`FileMissingError` or :class:`StorageError`."""
        ...

    def read_with_metadata(self, rel_path: str) -> tuple[bytes, dict[str, str] | None]:
        """The whole file and its user metadata from the same read (S3: the GetObject
        response's ``x-amz-meta-*`` names without the prefix, ``{}`` when it has none); None
        where files have no such metadata (local disk). Raises as :meth:`read`."""
        ...

    def exists(self) -> bool:
        """Whether anything is at the root: a local directory, at least one S3 object under
        the prefix. Raises :class:`StorageError`."""
        ...

    def read_lines(self, rel_path: str) -> Iterator[bytes]:
        """The file's lines (each with its ``\\n``): on local disk read as they are consumed,
        so a large commit is never held whole (S3: one GET, then split). Raises as
        :meth:`read`, from the first ``next()``."""
        ...

    def stat(self, rel_path: str) -> FileInfo | None:
        """The file's info, or None if it does not exist."""
        ...

    def location(self, rel_path: str) -> str:
        """The absolute location of a relative path (filesystem path or s3:// URI)."""
        ...

    def children(
        self,
        rel_dir: str,
        skip: Container[str] = frozenset(),
        after: str | None = None,
        up_to: str | None = None,
    ) -> Children:
        """The files and sub-directories directly in ``rel_dir`` (not recursive) whose names
        are in the key range ``(after, up_to]`` (:func:`in_key_range`; None: unbounded; on S3
        only that range is requested). Files named in ``skip`` (relative paths) are only
        counted: not stat'ed, not returned. A missing directory lists as empty; other failures
        raise :class:`StorageError` naming it."""
        ...

    def relative_of(self, scheme: str, netloc: str, path: str) -> str | None:
        """An absolute location (``scheme://netloc/path``; scheme ``""`` or ``file`` for a
        local path) as a path relative to this root, or None if it is not below the root of
        this store (another bucket, another filesystem)."""
        ...

    def real_root(self) -> str | None:
        """The root with symlinks resolved, where a path could escape the root through a
        symlinked directory (local disk); None where it cannot (S3 keys)."""
        ...

    def delete_batch(
        self, rel_paths: Sequence[str], attempts: int, stop: StopCheck | None = None
    ) -> DeleteOutcome:
        """Deletes up to 1,000 files (S3's DeleteObjects limit), retrying throttling, 5xx and
        connection errors and retryable per-key errors with full-jitter backoff up to
        ``attempts`` times. Never raises for a file it could not delete: see
        :class:`DeleteOutcome`. Callers check containment first. ``stop``: once it returns
        True no further delete is sent (no retry either, the S3 client's own included): the
        paths no request named are ``not_sent``, those of a request that failed are settled
        as after its last attempt (``failed``, or ``unknown`` if it may have applied)."""
        ...
