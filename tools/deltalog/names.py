"""Names of the files in ``_delta_log``: what kind of file a name is, and for which version.

Versions are zero-padded to 20 digits, multi-part numbers to 10 (PROTOCOL.md, "Delta Log
Entries", "Checkpoints", "Log Compaction Files", "Version Checksum File"). Spark's own regexes
(``FileNames.scala``) are the reference. A name that matches none of them is ``None``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from deltaguard.logstore.commit_names import COMMIT_FILE


class LogFileKind(StrEnum):
    COMMIT = "commit"
    CHECKPOINT = "checkpoint"  # classic: N.checkpoint.parquet
    MULTIPART_CHECKPOINT = "multipart-checkpoint"  # N.checkpoint.o.p.parquet
    V2_CHECKPOINT = "v2-checkpoint"  # N.checkpoint.<uuid>.json|parquet
    COMPACTION = "compaction"  # x.y.compacted.json
    CHECKSUM = "checksum"  # N.crc
    LAST_CHECKPOINT = "last-checkpoint"


_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTIPART = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_V2 = re.compile(r"^(\d{20})\.checkpoint\.([^.]+)\.(json|parquet)$")
_COMPACTION = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
_CHECKSUM = re.compile(r"^(\d{20})\.crc$")
#: Files writers legitimately keep in ``_delta_log`` besides the log itself.
AUXILIARY_FILES = frozenset({"_last_checkpoint", "_last_vacuum_info"})

LAST_CHECKPOINT = "_last_checkpoint"
SIDECARS_DIR = "_sidecars"


class TopLevelFormat(StrEnum):
    """The format of a V2 checkpoint's top-level file (``N.checkpoint.<uuid>.json`` or
    ``.parquet``)."""

    JSON = "json"
    PARQUET = "parquet"


#: Subdirectories of ``_delta_log`` that hold commits a catalog or commit coordinator has not
#: ratified or backfilled yet: ``_staged_commits/<version>.<uuid>.json`` (Delta 4.4,
#: catalogManaged tables) and its former name ``_commits/`` (coordinated commits). Clients
#: must not interpret them; they are neither stray files nor leftovers.
STAGED_COMMIT_DIRS = ("_staged_commits", "_commits")


@dataclass(frozen=True, slots=True)
class LogFileName:
    """A parsed ``_delta_log`` file name. ``end_version`` is set for compactions (the range is
    [version, end_version]); ``part``/``parts`` for multi-part checkpoints; ``uuid`` for V2
    checkpoints; ``fmt`` is ``json`` or ``parquet`` for checkpoints."""

    name: str
    kind: LogFileKind
    version: int
    end_version: int | None = None
    part: int | None = None
    parts: int | None = None
    uuid: str | None = None
    fmt: str | None = None


def parse_log_name(name: str) -> LogFileName | None:
    """The kind and version of a file directly in ``_delta_log``, or None for any other name."""
    if name == LAST_CHECKPOINT:
        return LogFileName(name, LogFileKind.LAST_CHECKPOINT, -1)
    if m := COMMIT_FILE.match(name):
        return LogFileName(name, LogFileKind.COMMIT, int(m[1]))
    if m := _CHECKPOINT.match(name):
        return LogFileName(name, LogFileKind.CHECKPOINT, int(m[1]), fmt="parquet")
    if m := _MULTIPART.match(name):
        return LogFileName(
            name,
            LogFileKind.MULTIPART_CHECKPOINT,
            int(m[1]),
            part=int(m[2]),
            parts=int(m[3]),
            fmt="parquet",
        )
    if m := _V2.match(name):
        return LogFileName(name, LogFileKind.V2_CHECKPOINT, int(m[1]), uuid=m[2], fmt=m[3])
    if m := _COMPACTION.match(name):
        start, end = int(m[1]), int(m[2])
        return (
            LogFileName(name, LogFileKind.COMPACTION, start, end_version=end)
            if end > start
            else None
        )
    if m := _CHECKSUM.match(name):
        return LogFileName(name, LogFileKind.CHECKSUM, int(m[1]))
    return None


def is_temp_name(name: str) -> bool:
    """Temp files log stores leave behind: ``.<name>.<uuid>.tmp`` (Hadoop log stores),
    ``*.tmp``, and anything under ``.tmp/`` (the DynamoDB store's temp commits)."""
    return name.endswith(".tmp") or name.startswith(".tmp/") or "/.tmp/" in name


def is_hadoop_checksum(name: str) -> bool:
    """Hadoop's ChecksumFileSystem (the local filesystem of Spark and Hadoop) writes
    ``.<file>.crc`` next to every file it writes: a checksum of ``<file>``, not a Delta file."""
    return name.startswith(".") and name.endswith(".crc") and len(name) > len("..crc")


def hadoop_checksum_owner(name: str) -> str | None:
    """The file a Hadoop checksum file name belongs to (``.x.json.crc`` -> ``x.json``), or
    None if ``name`` is not one. Works on bare names, not paths."""
    return name[1 : -len(".crc")] if is_hadoop_checksum(name) else None
