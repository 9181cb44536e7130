"""The commit protocol of a Delta table on local disk: create-exclusive by ``link(2)``.

``write(path, lines, overwrite=False)`` writes the lines to a fresh temp file beside the target
(``_delta_log/.<name>.<uuid>.tmp``, flushed and fsynced), then hard-links it to the target name
and removes the temp file. ``link`` fails with ``EEXIST`` when the target exists, atomically:
exactly one of several writers racing for ``N.json`` succeeds, the others get
:class:`LogFileExistsError`, and a reader never sees a partly written commit. This is Delta's
local/HDFS guarantee (``HDFSLogStore``: rename without overwrite; ``LocalLogStore`` on Spark
serializes in one JVM only), made safe across processes. Needs a POSIX filesystem with hard
links (ext4, xfs, APFS; not every network filesystem).

Locations are local paths or ``file:`` URIs.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from deltaguard.logstore.errors import LogFileExistsError
from deltaguard.logstore.s3_conditional import LogFileStatus
from deltaguard.logstore.s3_location import file_uri_path, scheme_of


def _path(location: str) -> Path:
    """A local path (literal) or a ``file:`` URI (decoded): :mod:`.s3_location`'s rule."""
    if scheme_of(location) == "file":
        return Path(file_uri_path(location))
    return Path(location)


class LocalLogStore:
    """Delta log reads and create-exclusive writes on a local filesystem. Thread-safe."""

    def write(self, uri: str, lines: Iterable[str], overwrite: bool = False) -> None:
        """Writes the lines (each followed by ``\\n``) to ``uri``. With ``overwrite=False``,
        only if it does not exist: :class:`LogFileExistsError` otherwise (nothing written).
        Raises OSError for other filesystem errors (the target is then not created)."""
        self.create(uri, "".join(line + "\n" for line in lines).encode("utf-8"), overwrite)

    def create(self, uri: str, body: bytes, overwrite: bool = False) -> None:
        """:meth:`write` of exact bytes."""
        target = _path(uri)
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.{uuid.uuid4()}.tmp")
        with open(temp, "xb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        try:
            if overwrite:
                os.replace(temp, target)
                return
            try:
                os.link(temp, target)
            except FileExistsError:
                raise LogFileExistsError(f"{target}: another writer created it first") from None
        finally:
            temp.unlink(missing_ok=True)

    def read(self, uri: str) -> Iterator[str]:
        """The file's lines without line breaks. Raises FileNotFoundError if absent."""
        with open(_path(uri), encoding="utf-8") as f:
            for line in f:
                yield line.rstrip("\n")

    def list_from(self, uri: str) -> Iterator[LogFileStatus]:
        """Files of ``uri``'s directory whose names sort at or after its name, in order.
        Raises FileNotFoundError if the directory does not exist."""
        path = _path(uri)
        names = sorted(entry.name for entry in os.scandir(path.parent) if entry.is_file())
        for name in names:
            if name < path.name:
                continue
            try:
                st = (path.parent / name).stat()
            except FileNotFoundError:
                continue
            yield LogFileStatus(
                str(path.parent / name),
                name,
                st.st_size,
                datetime.fromtimestamp(st.st_mtime, UTC),
            )
