"""Parallel listing of a table's data files, by directory prefix.

The table is walked breadth-first: every directory (a local directory, or an S3 prefix listed
with ``Delimiter='/'``) is one task on a thread pool, and the sub-directories it finds become
new tasks, so partitions are listed concurrently. Hidden directories (see
:func:`~deltaguard.tools.orphans.rules.hidden_name_rule`) are pruned without being listed, as
VACUUM does; hidden files are counted but not returned.

Contract: the result is every visible file below the root at some moment during the walk (a
file created or deleted while listing may or may not appear: cleanup copes by never deleting
files younger than the retention and by re-reading the log before it deletes). Local symlinks
to directories are not followed, so nothing outside the root is ever listed. Listing errors
raise :class:`~deltaguard.tools.deltalog.errors.StorageError` naming the directory; a
directory that vanishes while being listed lists as empty. S3 listing retries are botocore's.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from botocore.exceptions import BotoCoreError, ClientError

from deltaguard.logstore.aws_errors import describe
from deltaguard.tools.deltalog.errors import StorageError
from deltaguard.tools.deltalog.storage import FileInfo, LocalTableStore, S3TableStore, TableStore

#: Default listing concurrency (threads; each task is one directory).
DEFAULT_WORKERS = 8


@dataclass
class ListingProgress:
    """Counters updated while listing (read them from another thread for a progress bar)."""

    files: int = 0
    bytes: int = 0
    dirs_done: int = 0
    dirs_pending: int = 0
    hidden_files: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, files: list[FileInfo], hidden: int, new_dirs: int) -> None:
        with self._lock:
            self.files += len(files)
            self.bytes += sum(f.size for f in files)
            self.hidden_files += hidden
            self.dirs_done += 1
            self.dirs_pending += new_dirs - 1


@dataclass
class TableListing:
    """Every visible file (paths relative to the root, decoded) and how the walk went."""

    files: list[FileInfo]
    dirs: int
    hidden_files: int
    hidden_dirs: list[str]


def _local_children(store: LocalTableStore, rel_dir: str) -> tuple[list[FileInfo], list[str]]:
    base = store.root / rel_dir if rel_dir else store.root
    prefix = f"{rel_dir}/" if rel_dir else ""
    files: list[FileInfo] = []
    dirs: list[str] = []
    try:
        with os.scandir(base) as it:
            for entry in it:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        dirs.append(prefix + entry.name)
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        files.append(
                            FileInfo(prefix + entry.name, st.st_size, st.st_mtime_ns // 1_000_000)
                        )
                except FileNotFoundError:
                    continue  # deleted while listing
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        raise StorageError(f"cannot list {base}: {exc.strerror}", str(base)) from None
    return files, dirs


def _s3_children(store: S3TableStore, rel_dir: str) -> tuple[list[FileInfo], list[str]]:
    root = store.root.key.strip("/")
    root_prefix = f"{root}/" if root else ""
    prefix = root_prefix + (f"{rel_dir}/" if rel_dir else "")
    files: list[FileInfo] = []
    dirs: list[str] = []
    try:
        pages = store.client.get_paginator("list_objects_v2").paginate(
            Bucket=store.root.bucket, Prefix=prefix, Delimiter="/"
        )
        for page in pages:
            for obj in page.get("Contents", ()):
                rel = obj["Key"][len(root_prefix) :]
                if rel and not rel.endswith("/"):
                    files.append(
                        FileInfo(rel, int(obj["Size"]), int(obj["LastModified"].timestamp() * 1000))
                    )
            for common in page.get("CommonPrefixes", ()):
                dirs.append(common["Prefix"][len(root_prefix) :].rstrip("/"))
    except (ClientError, BotoCoreError) as exc:
        where = f"s3://{store.root.bucket}/{prefix}"
        raise StorageError(f"cannot list {where}: {describe(exc)}", where) from None
    return files, dirs


def list_children(store: TableStore, rel_dir: str) -> tuple[list[FileInfo], list[str]]:
    """The files and sub-directories directly in ``rel_dir`` (one directory, not recursive)."""
    if isinstance(store, LocalTableStore):
        return _local_children(store, rel_dir)
    if isinstance(store, S3TableStore):
        return _s3_children(store, rel_dir)
    raise TypeError(f"cannot list {type(store).__name__}: not a local or S3 table store")


def list_table(
    store: TableStore,
    is_hidden: Callable[[str], bool],
    *,
    workers: int = DEFAULT_WORKERS,
    progress: ListingProgress | None = None,
) -> TableListing:
    """Lists every visible file below the table root, ``workers`` directories at a time.
    ``is_hidden`` is applied to each directory and file *name*; hidden directories are not
    entered and are reported in ``hidden_dirs`` (``_delta_log`` among them)."""
    progress = progress if progress is not None else ListingProgress()
    progress.dirs_pending = 1
    files: list[FileInfo] = []
    hidden_dirs: list[str] = []
    hidden_files = 0
    dirs = 0
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="list") as pool:
        pending: set[Future[tuple[list[FileInfo], list[str]]]] = {
            pool.submit(list_children, store, "")
        }
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                found, subdirs = future.result()
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
                        pending.add(pool.submit(list_children, store, sub))
                        entered += 1
                progress.add(visible, hidden, entered)
    return TableListing(files, dirs, hidden_files, sorted(hidden_dirs))
