"""Which live files of a snapshot a reader cannot read: the one file check ``audit`` and
``repair`` apply (their finding codes and messages are made here).

Two depths, like Databricks ``FSCK REPAIR TABLE`` (``METADATA ONLY`` / ``VERIFY FILES``), the
commands' ``--check exists|footers`` (:class:`.check_depth.CheckMode`):

``exists`` (:func:`check_listed`)
    one listing of the table, and nothing else: every live data file and every deletion
    vector file of a live entry must be there (``missing-data-file``, ``missing-dv-file``);
    a data file's listed size must be the ``add``'s ``size`` (``size-mismatch``: truncated,
    grown, emptied or replaced: a shorter one fails every reader, a longer one fails Spark,
    which looks for the footer at the file's end); a deletion vector file must be long enough for its
    descriptor (``short-dv-file``): at ``offset`` a 4-byte size, ``sizeInBytes`` of bitmap and
    a 4-byte CRC-32 (PROTOCOL.md, "Deletion Vector File Storage Format"; ``offset`` is 1,
    after the format-version byte, when the descriptor has none). No file is read.
``footers`` (also :func:`check_footers`)
    also reads each remaining live data file's Parquet footer (:func:`parquet_footer_problem`:
    magic bytes, footer length, footer parse; a few ranged reads per file on S3):
    ``unreadable-data-file``; and each deletion vector (:func:`dv_problem`: its size field,
    magic number and CRC-32; one ranged read each): ``unreadable-dv-file``.

Files outside the table root (absolute paths) are returned for a presence check one by one
(:mod:`.external`); the listing does not hold them.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltaguard.tools.deltalog import filetable
from deltaguard.tools.deltalog.actions import DeletionVector
from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.deltalog.external import Presence, check_external
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.deltalog.snapshot import Snapshot
from deltaguard.tools.storage import LocalTableStore, S3TableStore, TableStore
from deltaguard.tools.storage.errors import FileMissingError, StorageError

MISSING_DATA = "missing-data-file"
SIZE_MISMATCH = "size-mismatch"
UNREADABLE_DATA = "unreadable-data-file"
MISSING_DV = "missing-dv-file"
SHORT_DV = "short-dv-file"
UNREADABLE_DV = "unreadable-dv-file"
#: Every code a file check gives, in the order they are looked for per entry.
FILE_CODES = (MISSING_DATA, SIZE_MISMATCH, UNREADABLE_DATA, MISSING_DV, SHORT_DV, UNREADABLE_DV)

#: The first four bytes (little endian) of a serialized deletion vector bitmap: PROTOCOL.md,
#: "Deletion Vector Format".
DV_MAGIC = 1681511377


@dataclass(frozen=True)
class FileProblem:
    """A live entry no reader can read: ``code`` (:data:`FILE_CODES`), ``key`` the replay's
    file key (decoded path and DV id), ``path`` the entry's decoded log path, ``file`` the
    file at fault (relative to the root, or its location outside it), ``message`` what is
    wrong, naming the file."""

    code: str
    key: str
    path: str
    file: str
    message: str
    #: ``file`` is a location outside the table root
    outside: bool = False


@dataclass(frozen=True)
class External:
    """A live file (``owner`` None) or deletion vector file (``owner``: its data file's path)
    outside the table root, at ``location``; ``key`` is the entry's key."""

    location: str
    owner: str | None
    key: str


def missing_data(key: str, path: str, rel: str) -> FileProblem:
    """A live data file ``rel`` (of entry ``path``) that is not there."""
    return FileProblem(MISSING_DATA, key, path, rel, f"live file {rel} does not exist")


def missing_dv(key: str, path: str, dv_rel: str) -> FileProblem:
    """The deletion vector file ``dv_rel`` of entry ``path`` is not there."""
    return FileProblem(
        MISSING_DV, key, path, dv_rel, f"deletion vector {dv_rel} of {path} does not exist"
    )


def size_mismatch(key: str, path: str, rel: str, listed: int, logged: int) -> FileProblem:
    """A live data file whose listed size is not its ``add``'s ``size``."""
    return FileProblem(
        SIZE_MISMATCH,
        key,
        path,
        rel,
        f"live file {rel} is {listed} bytes, the log's add says {logged}",
    )


def dv_min_size(dv: DeletionVector) -> int:
    """The smallest file that holds this DV (module docstring)."""
    return (dv.offset if dv.offset is not None else 1) + 4 + dv.size_in_bytes + 4


def short_dv(key: str, path: str, dv_rel: str, listed: int, dv: DeletionVector) -> FileProblem:
    """A deletion vector file shorter than :func:`dv_min_size` of its descriptor."""
    return FileProblem(
        SHORT_DV,
        key,
        path,
        dv_rel,
        f"deletion vector {dv_rel} of {path} is {listed} bytes, too short for its descriptor "
        f"(offset {dv.offset}, {dv.size_in_bytes} bytes: needs {dv_min_size(dv)})",
    )


def listed_sizes(store: TableStore) -> dict[str, int]:
    """Every file outside ``_delta_log`` with its size, from one listing of the table."""
    return {
        info.path: info.size for info in store.walk("") if not info.path.startswith(f"{LOG_DIR}/")
    }


def check_listed(
    store: TableStore, snap: Snapshot, sizes: dict[str, int]
) -> tuple[list[FileProblem], list[External]]:
    """The ``exists`` problems of ``snap``'s live entries against ``sizes``
    (:func:`listed_sizes`), sorted by (path, key, code), and the files outside the root. An
    entry whose data file has a problem is not checked further; its DV file still is."""
    table = snap.adds.table
    keys = filetable.keys(table).to_pylist()
    problems: list[FileProblem] = []
    external: list[External] = []
    for key, path, size in zip(
        keys, table["path"].to_pylist(), table["size"].to_pylist(), strict=True
    ):
        rel = relative_to_root(path, store)
        if rel is None:
            external.append(External(path, None, key))
        elif rel not in sizes:
            problems.append(missing_data(key, path, rel))
        elif size is not None and sizes[rel] != size:
            problems.append(size_mismatch(key, path, rel, sizes[rel], size))
    with_dv = table.filter(pc.is_valid(table["dv_storage_type"]))
    for key, (path, dv) in zip(
        filetable.keys(with_dv).to_pylist(), snap.adds.deletion_vectors(), strict=True
    ):
        dv_path = dv.file_path()
        if dv_path is None:
            continue  # inline
        dv_rel = relative_to_root(dv_path, store)
        if dv_rel is None:
            external.append(External(dv_path, path, key))
        elif dv_rel not in sizes:
            problems.append(missing_dv(key, path, dv_rel))
        elif sizes[dv_rel] < dv_min_size(dv):
            problems.append(short_dv(key, path, dv_rel, sizes[dv_rel], dv))
    problems.sort(key=lambda p: (p.path, p.key, FILE_CODES.index(p.code)))
    external.sort(key=lambda e: (e.location, e.owner or ""))
    return problems, external


def check_outside(
    store: TableStore, external: list[External]
) -> tuple[list[FileProblem], list[tuple[External, str]]]:
    """The files outside the root, checked one by one (:func:`.external.check_external`):
    the missing ones as problems, the others with what was found (``exists``, or ``not
    checked: why``): a file that could not be checked is never called missing."""
    problems: list[FileProblem] = []
    seen: list[tuple[External, str]] = []
    results = check_external(store, [e.location for e in external])
    for e, (presence, why) in zip(external, results, strict=True):
        if presence is Presence.MISSING:
            if e.owner is None:
                problems.append(
                    FileProblem(
                        MISSING_DATA,
                        e.key,
                        e.location,
                        e.location,
                        f"live file {e.location} (outside the table root) does not exist",
                        outside=True,
                    )
                )
            else:
                problems.append(
                    FileProblem(
                        MISSING_DV,
                        e.key,
                        e.owner,
                        e.location,
                        f"deletion vector {e.location} of {e.owner} (outside the table root) "
                        "does not exist",
                        outside=True,
                    )
                )
        else:
            seen.append((e, "exists" if presence is Presence.PRESENT else f"not checked: {why}"))
    return problems, seen


def check_footers(
    store: TableStore,
    snap: Snapshot,
    sizes: dict[str, int],
    skip: set[str],
    threads: int = 8,
) -> list[FileProblem]:
    """The ``footers`` depth's extra problems: each live data file inside the root whose
    entry key is not in ``skip`` (those with a problem already), its footer read at its
    listed size, and each deletion vector in a file inside the root long enough for it
    (:func:`dv_problem`). Raises :class:`StorageError` when a file cannot be read (never a
    finding)."""
    todo: list[tuple[str, str, str, DeletionVector | None]] = []  # (key, path, rel, dv)
    table = snap.adds.table
    for key, path in zip(filetable.keys(table).to_pylist(), table["path"].to_pylist(), strict=True):
        rel = relative_to_root(path, store)
        if key not in skip and rel is not None and rel in sizes:
            todo.append((key, path, rel, None))
    with_dv = table.filter(pc.is_valid(table["dv_storage_type"]))
    for key, (path, dv) in zip(
        filetable.keys(with_dv).to_pylist(), snap.adds.deletion_vectors(), strict=True
    ):
        dv_file = dv.file_path()
        dv_rel = relative_to_root(dv_file, store) if dv_file is not None else None
        if dv_rel is not None and sizes.get(dv_rel, -1) >= dv_min_size(dv):
            todo.append((key, path, dv_rel, dv))

    def one(item: tuple[str, str, str, DeletionVector | None]) -> FileProblem | None:
        key, path, rel, dv = item
        if dv is not None:
            problem = dv_problem(store, rel, dv)
            if problem is None:
                return None
            return FileProblem(
                UNREADABLE_DV, key, path, rel, f"deletion vector {rel} of {path}: {problem}"
            )
        problem = parquet_footer_problem(store, rel, sizes[rel])
        if problem is None:
            return None
        return FileProblem(UNREADABLE_DATA, key, path, rel, f"live file {rel}: {problem}")

    workers = max(1, min(threads, store.read_threads, len(todo)))
    with ThreadPoolExecutor(workers) as pool:
        found = [p for p in pool.map(one, todo) if p is not None]
    return sorted(found, key=lambda p: (p.path, p.key, FILE_CODES.index(p.code)))


def dv_problem(store: TableStore, rel: str, dv: DeletionVector) -> str | None:
    """Why the deletion vector ``dv`` in file ``rel`` cannot be read, or None: at ``offset``
    (1 when unset) a 4-byte big-endian size that must be ``sizeInBytes``, the bitmap (starting
    with :data:`DV_MAGIC`, little endian) and the big-endian CRC-32 of the bitmap (PROTOCOL.md,
    "Deletion Vector File Storage Format"). One ranged read on S3. Raises
    :class:`StorageError` when the file cannot be read."""
    start = dv.offset if dv.offset is not None else 1
    end = start + 4 + dv.size_in_bytes + 4
    try:
        if isinstance(store, S3TableStore):
            data = store.read_range(rel, start, end)
        else:
            data = store.read(rel)[start:end]
    except FileMissingError:
        return "it disappeared while being checked"
    if len(data) < end - start:
        return f"it ends before byte {end}"
    stored = int.from_bytes(data[:4], "big")
    if stored != dv.size_in_bytes:
        return f"its size field at offset {start} says {stored}, the descriptor {dv.size_in_bytes}"
    bitmap = data[4 : 4 + dv.size_in_bytes]
    if int.from_bytes(data[4 + dv.size_in_bytes :], "big") != zlib.crc32(bitmap):
        return "its CRC-32 does not match its bytes"
    if int.from_bytes(bitmap[:4], "little") != DV_MAGIC:
        return "it does not start with the deletion vector magic number"
    return None


class _RangeFile(io.RawIOBase):
    """The first ``size`` bytes of a file as a seekable file for pyarrow's footer read, each
    read one call of ``read_range(start, end)`` (on S3 a ranged GET; pyarrow reads the last
    64 KiB at once, and again only for a longer footer: one GET per file, as a rule)."""

    def __init__(self, read_range: Callable[[int, int], bytes], size: int) -> None:
        self.read_range, self.size, self.pos = read_range, size, 0

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
        data = self.read_range(self.pos, end)
        self.pos += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _local_range(path: Path, start: int, end: int) -> bytes:
    with path.open("rb") as f:
        f.seek(start)
        return f.read(end - start)


def read_parquet_footer(store: TableStore, rel: str, size: int) -> pq.FileMetaData:
    """The Parquet footer of ``rel`` read as a file of ``size`` bytes (as listed, or as
    logged: the footer a reader that trusts the log's size finds, in a file grown since):
    magic bytes, footer length, footer parse. Raises pyarrow's errors (``ArrowException``,
    ``OSError``, ``ValueError``) for a damaged file and :class:`StorageError` when it cannot
    be read."""
    if isinstance(store, LocalTableStore):
        path = store.root / rel
        source: Any = str(path)
        if path.stat().st_size != size:
            source = _RangeFile(lambda start, end: _local_range(path, start, end), size)
    elif isinstance(store, S3TableStore):
        source = _RangeFile(lambda start, end: store.read_range(rel, start, end), size)
    else:
        source = pa.BufferReader(store.read(rel)[:size])
    return pq.ParquetFile(source).metadata


def parquet_footer_problem(store: TableStore, rel: str, size: int) -> str | None:
    """Why the Parquet footer of ``rel`` cannot be read (:func:`read_parquet_footer`), or
    None when it can. The one footer check of data files, checkpoints and sidecars. Raises
    :class:`StorageError` when the file cannot be read (a file that vanished meanwhile is a
    problem, not an error)."""
    try:
        read_parquet_footer(store, rel, size)
    except FileMissingError:
        return "it disappeared while being checked"
    except (pa.ArrowException, ValueError) as exc:
        return f"its Parquet footer is unreadable ({str(exc).splitlines()[0]})"
    except OSError as exc:
        if isinstance(exc, StorageError):
            raise
        return f"its Parquet footer is unreadable ({exc})"
    return None
