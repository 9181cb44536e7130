"""The cleanup manifest: a JSON record of what was planned, spared, deleted and failed.

It is written twice, each time atomically (a temp file in the same directory, then
``os.replace``): once with ``"status": "deleting"`` and the planned files before the first
delete, and once with the outcome. A crash in between leaves a manifest naming every file that
may be gone. Schema (``schema`` = :data:`MANIFEST_SCHEMA`)::

    {
      "schema": "deltaguard.orphans.manifest/1",
      "status": "deleting" | "done" | "interrupted",   # interrupted: see "error"
      "table": str, "version_scanned": int, "version_rechecked": int | null,
      "retention_ms": int, "cutoff_ms": int, "classes": [CLASS],
      "started_at": ISO-8601, "finished_at": ISO-8601 | null,
      "planned": int,
      "deleted": [{"path", "class", "size", "mtime_ms"}],
      "missing": [str],                          # already gone when deleted
      "spared": [{"path", "class", "why"}],      # dropped by the re-read of the log
      "failed": [{"path", "error"}],             # not deleted
      "unknown": [{"path", "error"}],            # may or may not be deleted
      "error": str | null,                       # a failure after deleting began
      "requests": int                            # delete requests sent
    }

``deleted`` is the intent while ``status`` is ``deleting`` and the outcome once ``done``. A
failure after deleting began never loses what is known: ``done`` with ``error`` (the final
write failed; the file on disk then still says ``deleting``; the command's output has the
outcome), or ``interrupted`` (the Spark engine's delete job failed: ``deleted`` lists what
is known deleted, ``unknown`` the rest).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

MANIFEST_SCHEMA = "deltaguard.orphans.manifest/1"


def write_manifest(path: Path, document: dict[str, Any]) -> None:
    """Writes ``document`` to ``path`` atomically (readers see the old or the new file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(
                orjson.dumps({"schema": MANIFEST_SCHEMA, **document}, option=orjson.OPT_INDENT_2)
            )
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
