"""Parallel listing of a table's data files, by directory prefix.

The table is walked breadth-first: every directory (a local directory, or an S3 prefix listed
with ``Delimiter='/'``) is one task on a thread pool, and the sub-directories it finds become
new tasks, so partitions are listed concurrently. A directory given cuts
(:mod:`~deltaguard.tools.orphans.key_ranges`) is one task per key range instead, so one large
S3 directory is listed by several threads at once. Hidden directories (see
:func:`~deltaguard.tools.orphans.rules.hidden_name_rule`) are pruned without being listed, as
VACUUM does; hidden files are counted but not returned.

Contract: the result is every visible file below the root at some moment during the walk (a
file created or deleted while listing may or may not appear: cleanup copes by never deleting
files younger than the retention and by re-reading the log before it deletes). Local symlinks
to directories are not followed, so nothing outside the root is ever listed. Listing errors
raise :class:`~deltaguard.tools.storage.errors.StorageError` naming the directory; a
directory that vanishes while being listed lists as empty. S3 listing retries are botocore's.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Container, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from deltaguard.tools.storage import Children, FileInfo, TableStore


def default_workers(store: TableStore) -> int:
    """The store's own listing concurrency (:attr:`TableStore.listing_workers`)."""
    return store.listing_workers


@dataclass
class ListingProgress:
    """Counters updated while listing (read them from another thread for a progress bar)."""

    files: int = 0
    bytes: int = 0  # of the files not already known as referenced
    dirs_done: int = 0
    dirs_pending: int = 0
    hidden_files: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, files: list[FileInfo], hidden: int, new_dirs: int, referenced: int = 0) -> None:
        with self._lock:
            self.files += len(files) + referenced
            self.bytes += sum(f.size for f in files)
            self.hidden_files += hidden
            self.dirs_done += 1
            self.dirs_pending += new_dirs - 1


@dataclass
class TableListing:
    """Every visible file the caller did not already know as referenced (paths relative to
    the root, decoded), and how the walk went. ``referenced_files`` counts the files skipped
    because they were in ``referenced``."""

    files: list[FileInfo]
    dirs: int
    hidden_files: int
    hidden_dirs: list[str]
    referenced_files: int = 0

    @property
    def listed(self) -> int:
        """Every visible file found, referenced or not."""
        return len(self.files) + self.referenced_files


def list_children(
    store: TableStore,
    rel_dir: str,
    referenced: Container[str] = frozenset(),
    after: str | None = None,
    up_to: str | None = None,
) -> Children:
    """The files and sub-directories directly in ``rel_dir`` (one directory, not recursive),
    those in the key range ``(after, up_to]`` only (None: unbounded). Files named in
    ``referenced`` (relative paths) are only counted: not stat'ed, not returned."""
    return store.children(rel_dir, referenced, after, up_to)


def _ranges(cuts: Sequence[str] | None) -> list[tuple[str | None, str | None]]:
    """The key ranges ``(after, up_to]`` the cuts of one directory make (one, unbounded,
    without cuts)."""
    edges: list[str | None] = [None, *(cuts or ()), None]
    return list(itertools.pairwise(edges))


def list_table(
    store: TableStore,
    is_hidden: Callable[[str], bool],
    *,
    referenced: Container[str] = frozenset(),
    workers: int | None = None,
    progress: ListingProgress | None = None,
    cuts: Mapping[str, Sequence[str]] | None = None,
) -> TableListing:
    """Lists every visible file below the table root, ``workers`` directories at a time.
    ``is_hidden`` is applied to each directory and file *name*; hidden directories are not
    entered and are reported in ``hidden_dirs`` (``_delta_log`` among them). Files in
    ``referenced`` are counted in ``referenced_files`` only (on local disk they are not even
    stat'ed, which is most of a local listing's cost). ``workers`` defaults to
    :func:`default_workers`. ``cuts``: the directories (relative path, ``""`` for the root)
    listed in key ranges, each range a task."""
    workers = workers if workers is not None else default_workers(store)
    progress = progress if progress is not None else ListingProgress()
    cuts = cuts or {}
    files: list[FileInfo] = []
    hidden_dirs: list[str] = []
    hidden_files = 0
    known = 0
    dirs = 0
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="list") as pool:
        pending: set[Future[Children]] = set()
        extra_ranges = 0  # tasks beyond one per directory

        def submit(rel_dir: str) -> int:
            nonlocal extra_ranges
            ranges = _ranges(cuts.get(rel_dir))
            extra_ranges += len(ranges) - 1
            for after, up_to in ranges:
                pending.add(pool.submit(list_children, store, rel_dir, referenced, after, up_to))
            return len(ranges)

        progress.dirs_pending = submit("")
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                found, subdirs, skipped = future.result()
                known += skipped
                dirs += 1
                visible = [f for f in found if not is_hidden(f.path.rpartition("/")[2])]
                hidden = len(found) - len(visible)
                hidden_files += hidden
                files += visible
                entered = 0
                for sub in subdirs:
                    if is_hidden(sub.rpartition("/")[2]):
                        hidden_dirs.append(sub)
                    else:
                        entered += submit(sub)
                progress.add(visible, hidden, entered, skipped)
    return TableListing(files, dirs - extra_ranges, hidden_files, sorted(hidden_dirs), known)
