"""Which live files of a snapshot a reader cannot read: the dangling references a repair
removes.

Two modes, like Databricks ``FSCK REPAIR TABLE`` (``METADATA ONLY`` / ``VERIFY FILES``):

``exists`` (:attr:`CheckMode.EXISTS`)
    one listing of the table (the audit's ``missing-data-file`` / ``missing-dv-file`` rule):
    a live data file, or the deletion vector file of a live entry, that is not there. Files
    outside the table root are checked one by one (:mod:`deltaguard.tools.deltalog.external`);
    one that cannot be checked is left alone.
``footers`` (:attr:`CheckMode.FOOTERS`)
    also each data file's size against the log's ``size`` (from the same listing) and its
    Parquet footer (read with pyarrow: a few ranged reads per file on S3), and each deletion
    vector file's size against the descriptor's ``offset + 4 + sizeInBytes + 4`` (PROTOCOL.md,
    "Deletion Vector Format"): a truncated or overwritten file fails every reader as a missing
    one does.

A storage error while checking a file raises (:class:`StorageError`): a file that could not be
read is never called broken.
"""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from deltaguard.tools.deltalog import filetable
from deltaguard.tools.deltalog.actions import DeletionVector
from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.deltalog.external import Presence, check_external
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.deltalog.snapshot import Snapshot
from deltaguard.tools.repair.modes import CheckMode
from deltaguard.tools.storage import LocalTableStore, S3TableStore, TableStore
from deltaguard.tools.storage.errors import FileMissingError, StorageError


@dataclass(frozen=True)
class Dangling:
    """A live entry no reader can read: ``key`` is the replay's file key (decoded path and DV
    id), ``path`` the decoded log path, ``reason`` what is wrong, naming the file."""

    key: str
    path: str
    reason: str


def _dv_min_size(dv: DeletionVector) -> int:
    """The smallest file that holds this DV: at ``offset`` (1 when unset: after the format
    byte) a 4-byte size, the bitmap, and a 4-byte checksum."""
    return (dv.offset if dv.offset is not None else 1) + 4 + dv.size_in_bytes + 4


class _RangeFile(io.RawIOBase):
    """An S3 object as a seekable file for pyarrow's footer read: each read is one ranged
    GET (the footer read is two or three)."""

    def __init__(self, store: S3TableStore, rel: str, size: int) -> None:
        self.store, self.rel, self.size, self.pos = store, rel, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        data = self.store.read_range(self.rel, self.pos, end)
        self.pos += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _footer_problem(store: TableStore, rel: str, size: int) -> str | None:
    """Why the Parquet footer of ``rel`` cannot be read, or None when it can."""
    try:
        if isinstance(store, LocalTableStore):
            source: Any = str(store.root / rel)
        elif isinstance(store, S3TableStore):
            source = _RangeFile(store, rel, size)
        else:
            source = pa.BufferReader(store.read(rel))
        pq.ParquetFile(source).metadata  # noqa: B018
    except FileMissingError:
        return "it disappeared while being checked"
    except (pa.ArrowException, ValueError) as exc:
        return f"its Parquet footer is unreadable ({str(exc).splitlines()[0]})"
    except OSError as exc:
        if isinstance(exc, StorageError):
            raise
        return f"its Parquet footer is unreadable ({exc})"
    return None


def find_dangling(
    store: TableStore, snap: Snapshot, mode: CheckMode, threads: int = 8
) -> list[Dangling]:
    """Every live entry of ``snap`` a reader cannot read (see the module docstring), sorted by
    path. Raises :class:`StorageError` when the table cannot be listed or a file not read."""
    sizes = {
        info.path: info.size for info in store.walk("") if not info.path.startswith(f"{LOG_DIR}/")
    }
    table = snap.adds.table
    keys = filetable.keys(table).to_pylist()
    out: dict[str, Dangling] = {}
    external: list[tuple[str, str, str]] = []  # (key, path, location)
    footers: list[tuple[str, str, str, int]] = []  # (key, path, rel, size)
    for key, add in zip(keys, snap.adds, strict=True):
        rel = relative_to_root(add.path, store)
        if rel is None:
            external.append((key, add.path, add.path))
        elif rel not in sizes:
            out[key] = Dangling(key, add.path, f"data file {rel} does not exist")
        elif mode is CheckMode.FOOTERS and sizes[rel] != add.size:
            out[key] = Dangling(
                key, add.path, f"data file {rel} is {sizes[rel]} bytes, the log says {add.size}"
            )
        elif mode is CheckMode.FOOTERS:
            footers.append((key, add.path, rel, add.size))
        dv = add.deletion_vector
        dv_path = dv.file_path() if dv is not None else None
        if dv is None or dv_path is None or key in out:
            continue
        dv_rel = relative_to_root(dv_path, store)
        if dv_rel is None:
            external.append((key, add.path, dv_path))
        elif dv_rel not in sizes:
            out[key] = Dangling(
                key, add.path, f"deletion vector {dv_rel} of {add.path} does not exist"
            )
        elif mode is CheckMode.FOOTERS and sizes[dv_rel] < _dv_min_size(dv):
            out[key] = Dangling(
                key,
                add.path,
                f"deletion vector {dv_rel} of {add.path} is {sizes[dv_rel]} bytes, too short "
                f"for its descriptor (offset {dv.offset}, {dv.size_in_bytes} bytes)",
            )
    presence = check_external(store, [location for _, _, location in external])
    for (key, path, location), (state, _why) in zip(external, presence, strict=True):
        if state is Presence.MISSING and key not in out:
            what = "data file" if location == path else f"deletion vector of {path}"
            out[key] = Dangling(key, path, f"{what} {location} (outside the table root) is missing")

    def check(f: tuple[str, str, str, int]) -> tuple[str, str, str | None]:
        return f[0], f[1], _footer_problem(store, f[2], f[3])

    workers = max(1, min(threads, store.read_threads, len(footers)))
    with ThreadPoolExecutor(workers) as pool:
        for key, path, problem in pool.map(check, footers):
            if problem is not None and key not in out:
                rel = relative_to_root(path, store)
                out[key] = Dangling(key, path, f"data file {rel}: {problem}")
    return sorted(out.values(), key=lambda d: (d.path, d.key))
