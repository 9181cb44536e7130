"""Writing a V2 checkpoint (:mod:`.v2` builds it): the one writer ``deltaguard checkpoint``
(:mod:`.run`) and ``repair``'s log step (:mod:`deltaguard.tools.repair.log_repair`) call.

The steps, each create-exclusive (:func:`.store.create_exclusive`: never over an existing
file; every name is new, a UUID): the sidecars in ``_delta_log/_sidecars/``, then the
UUID-named top-level file naming them (with each sidecar's size and modification time as
stored). ``_last_checkpoint`` is not written here: the caller decides whether to point it at
the new checkpoint and writes :attr:`WrittenV2.hint`. Interrupted, what was written is in the
caller's :class:`V2Progress`: sidecars that no top-level file names are harmless
(``log-cleanup`` removes them once older than the log retention).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from deltaguard.tools.checkpoint.store import create_exclusive
from deltaguard.tools.checkpoint.v2 import (
    StoredFile,
    v2_last_checkpoint,
    v2_sidecars,
    v2_top_level,
)
from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.deltalog.names import SIDECARS_DIR, TopLevelFormat
from deltaguard.tools.deltalog.snapshot import Snapshot
from deltaguard.tools.storage import S3Options, TableStore


@dataclass
class V2Progress:
    """What a run has written so far (read after an interruption): the sidecar names (in
    ``_delta_log/_sidecars/``), and the top-level file's name once its creation starts."""

    sidecars: list[str] = field(default_factory=list)
    top_level: str | None = None


@dataclass(frozen=True)
class WrittenV2:
    """A V2 checkpoint as written: the top-level file's name (in ``_delta_log``), its sidecars,
    the counts, every byte (top-level file and sidecars) and ``_last_checkpoint``'s content for
    it (:func:`.v2.v2_last_checkpoint`)."""

    name: str
    sidecars: list[str]
    actions: int
    add_files: int
    tombstones: int
    size_in_bytes: int
    hint: bytes


def _stored(store: TableStore, rel: str, name: str, size: int) -> StoredFile:
    """A file just written, with its modification time as the store gives it (now if the
    store cannot say)."""
    info = store.stat(rel)
    return StoredFile(name, size, info.mtime_ms if info else int(time.time() * 1000))


def write_v2(
    store: TableStore,
    s3: S3Options,
    snap: Snapshot,
    fmt: TopLevelFormat = TopLevelFormat.JSON,
    progress: V2Progress | None = None,
) -> WrittenV2:
    """Writes the V2 checkpoint of ``snap`` (the module docstring's steps; tombstones expire
    now). Raises :class:`~deltaguard.tools.deltalog.errors.UnsupportedTableError` for a table
    that does not take V2 checkpoints (:func:`.v2.v2_sidecars`), and the stores' errors."""
    progress = progress if progress is not None else V2Progress()
    parts = v2_sidecars(snap, int(time.time() * 1000))
    stored: list[StoredFile] = []
    for sidecar in parts.sidecars:
        rel = f"{LOG_DIR}/{SIDECARS_DIR}/{sidecar.name}"
        create_exclusive(store, s3, rel, sidecar.body)  # a new UUID name: never taken
        progress.sidecars.append(sidecar.name)
        stored.append(_stored(store, rel, sidecar.name, len(sidecar.body)))
    top = v2_top_level(parts, stored, fmt)
    progress.top_level = top.name
    create_exclusive(store, s3, f"{LOG_DIR}/{top.name}", top.body)
    top_stored = _stored(store, f"{LOG_DIR}/{top.name}", top.name, len(top.body))
    return WrittenV2(
        name=top.name,
        sidecars=[s.name for s in stored],
        actions=parts.file_actions + top.actions,
        add_files=parts.add_files,
        tombstones=parts.tombstones,
        size_in_bytes=top_stored.size + sum(s.size for s in stored),
        hint=v2_last_checkpoint(parts, top, top_stored),
    )
