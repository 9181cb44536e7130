"""A table on the local filesystem: :class:`LocalTableStore`."""

from __future__ import annotations

import os
import os.path
from collections.abc import Container, Iterator, Sequence
from pathlib import Path

from deltaguard.tools.storage.errors import FileMissingError, StorageError
from deltaguard.tools.storage.table_store import (
    Children,
    DeleteOutcome,
    FileInfo,
    StopCheck,
    below,
    in_key_range,
    in_skip,
)


def _not_found(path: Path) -> StorageError:
    """Opening ``path`` found no file: :class:`FileMissingError`, unless ``path`` is a symbolic
    link whose target is missing (something is there, and it cannot be read)."""
    if path.is_symlink():
        return StorageError(
            f"cannot read {path}: a symbolic link to {os.readlink(path)}, which does not exist",
            str(path),
        )
    return FileMissingError(f"{path} does not exist", str(path))


class LocalTableStore:
    """A table on the local filesystem."""

    listing_workers = (
        2  # measured on 200,000 files: 0.47 s with 1 thread, 0.52 s with 2, 1.06 s with 8
    )
    read_threads = 1

    def __init__(self, root: Path) -> None:
        self.root = root
        self.uri = str(root)

    def _abs(self, rel_path: str) -> Path:
        return self.root / rel_path if rel_path else self.root

    def exists(self) -> bool:
        return self.root.is_dir()

    def list_dir(self, rel_dir: str, start_after: str | None = None) -> list[FileInfo]:
        base = self._abs(rel_dir)
        prefix = f"{rel_dir}/" if rel_dir else ""
        out = []
        try:
            entries = list(os.scandir(base))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot list {base}: {exc.strerror}", str(base)) from None
        for entry in entries:
            if start_after is not None and entry.name <= start_after:
                continue
            try:
                if not entry.is_file():
                    continue
                st = entry.stat()
            except OSError:
                continue  # vanished or unreadable between listing and stat
            out.append(FileInfo(prefix + entry.name, st.st_size, st.st_mtime_ns // 1_000_000))
        out.sort(key=lambda f: f.path)
        return out

    def walk(self, rel_dir: str = "") -> Iterator[FileInfo]:
        base = self._abs(rel_dir)
        for dirpath, _dirs, files in os.walk(base):
            rel = os.path.relpath(dirpath, self.root)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for name in files:
                try:
                    st = os.stat(os.path.join(dirpath, name))
                except OSError:
                    continue
                yield FileInfo(prefix + name, st.st_size, st.st_mtime_ns // 1_000_000)

    def read_with_metadata(self, rel_path: str) -> tuple[bytes, dict[str, str] | None]:
        """:meth:`read`; a local file has no user metadata (None)."""
        return self.read(rel_path), None

    def read(self, rel_path: str) -> bytes:
        """The file's bytes. Raises :class:`FileMissingError` when nothing is at the path, and
        :class:`StorageError` for what is there but cannot be read (a directory, a symbolic
        link to a missing file, no permission)."""
        path = self._abs(rel_path)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise _not_found(path) from None
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {exc.strerror}", str(path)) from None

    def read_lines(self, rel_path: str) -> Iterator[bytes]:
        """The file's lines (each with its ``\\n``), read as they are consumed: a large
        commit is never held whole. Raises as :meth:`read`, from the first ``next()``."""
        path = self._abs(rel_path)
        try:
            with path.open("rb") as f:
                yield from f
        except FileNotFoundError:
            raise _not_found(path) from None
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {exc.strerror}", str(path)) from None

    def stat(self, rel_path: str) -> FileInfo | None:
        try:
            st = self._abs(rel_path).stat()
        except OSError:
            return None
        return FileInfo(rel_path, st.st_size, st.st_mtime_ns // 1_000_000)

    def location(self, rel_path: str) -> str:
        return f"{self.uri}/{rel_path}" if rel_path else self.uri

    def children(
        self,
        rel_dir: str,
        skip: Container[str] = frozenset(),
        after: str | None = None,
        up_to: str | None = None,
    ) -> Children:
        base = self._abs(rel_dir)
        ranged = after is not None or up_to is not None
        prefix = f"{rel_dir}/" if rel_dir else ""
        files: list[FileInfo] = []
        dirs: list[str] = []
        entries: list[os.DirEntry[str]] = []
        try:
            with os.scandir(base) as it:
                for entry in it:
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                        if ranged and not in_key_range(entry.name, is_dir, after, up_to):
                            continue
                        if is_dir:
                            dirs.append(prefix + entry.name)
                        else:
                            entries.append(entry)
                    except FileNotFoundError:
                        continue  # deleted while listing
        except FileNotFoundError:
            return [], [], 0
        except OSError as exc:
            raise StorageError(f"cannot list {base}: {exc.strerror}", str(base)) from None
        names = [prefix + entry.name for entry in entries]
        skipped = in_skip(names, skip)
        for entry, name, known in zip(entries, names, skipped, strict=True):
            if known:
                continue  # no stat: a skipped file is never a candidate
            try:
                if entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    files.append(FileInfo(name, st.st_size, st.st_mtime_ns // 1_000_000))
            except FileNotFoundError:
                continue  # deleted while listing
        return files, dirs, int(sum(skipped))

    def relative_of(self, scheme: str, netloc: str, path: str) -> str | None:
        if scheme not in ("", "file"):
            return None
        return below(os.path.normpath(path).lstrip("/"), str(self.root).lstrip("/"))

    def real_root(self) -> str | None:
        return os.path.realpath(self.root)

    def delete_batch(
        self, rel_paths: Sequence[str], attempts: int, stop: StopCheck | None = None
    ) -> DeleteOutcome:
        out = DeleteOutcome()
        for k, rel in enumerate(rel_paths):
            if stop is not None and stop():  # one unlink is one delete: none after a stop
                out.not_sent += rel_paths[k:]
                break
            path = self.root / rel
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
