"""What ``deltaguard checkpoint`` does, behind the thin click command in :mod:`deltaguard.tools.cli`.

1. Replay the snapshot of the latest version (or ``--version N``): a table that cannot be
   read, or a version the log no longer holds, is refused (exit 2, nothing written).
2. Refuse a table whose checkpoint this writer cannot make right (:func:`check_checkpointable`:
   exit 2, nothing written): a writer version above 7, a writer feature it does not know,
   ``v2Checkpoint`` (V2 checkpoints are not written yet), ``delta.checkpoint.writeStatsAsStruct``
   true (the parsed stats columns are not written).
3. A version that already has a readable checkpoint gets none: exit 0, nothing written. One
   whose checkpoint cannot be read is refused (``repair`` is for that): exit 2.
4. Read the segment's raw actions (:mod:`.state`, checked against the replay) and write
   ``N.checkpoint.parquet`` (:mod:`.parquet`) create-exclusive (:mod:`.store`): never over an
   existing file. Another writer that created it first wins (exit 0, its file is kept).
5. Point ``_last_checkpoint`` at it, only forward: a hint already at N or newer is left.

Exit codes (:class:`~deltaguard.tools.exit_codes.ExitCode`): 0 written (or the version had
a checkpoint already); 2 refused or unreadable (one line on stderr, nothing written unless it
says so); 130 / 143 interrupted (the line says what was written).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from botocore.exceptions import BotoCoreError, ClientError

from deltaguard.logstore.errors import LogFileExistsError
from deltaguard.tools.checkpoint.last_checkpoint import last_checkpoint_json
from deltaguard.tools.checkpoint.parquet import checkpoint_rows, parquet_bytes
from deltaguard.tools.checkpoint.state import RawState, raw_state
from deltaguard.tools.checkpoint.store import create_exclusive, overwrite
from deltaguard.tools.deltalog.checkpoint import LOG_DIR, checkpoint_names
from deltaguard.tools.deltalog.errors import UnsupportedTableError
from deltaguard.tools.deltalog.features import feature
from deltaguard.tools.deltalog.listing import (
    LastCheckpointError,
    list_log,
    read_last_checkpoint,
)
from deltaguard.tools.deltalog.snapshot import Snapshot, load_snapshot
from deltaguard.tools.exit_codes import ExitCode, Terminated
from deltaguard.tools.output import write_tsv
from deltaguard.tools.storage import S3Options, TableStore, open_table
from deltaguard.tools.storage.errors import DeltaLogError, StorageError

#: The highest writer version this writer knows.
MAX_WRITER_VERSION = 7
#: Writer features whose checkpoints this writer does not make (each with why).
_NOT_WRITTEN = {
    "v2Checkpoint": "its checkpoints must follow the V2 spec (checkpointMetadata, sidecars), "
    "which deltaguard does not write yet",
    "redirectWriterOnly-preview": "the table is redirected to another location",
}
LAST_CHECKPOINT = "_last_checkpoint"


@dataclass(frozen=True)
class CheckpointRequest:
    """The command line, as plain values."""

    table: str
    version: int | None = None
    s3: S3Options = field(default_factory=S3Options)
    as_json: bool = False
    #: ``--format tsv``: no text lines; one row at the end (:data:`CHECKPOINT_TSV_COLUMNS`)
    tsv: bool = False


@dataclass
class _Record:
    """What the run found and did (the JSON report, schema ``deltaguard.checkpoint/1``)."""

    table: str
    version: int | None = None
    checkpoint: str | None = None
    #: written | exists (the version had a checkpoint) | taken (another writer created it)
    outcome: str | None = None
    actions: int | None = None
    add_files: int | None = None
    tombstones: int | None = None
    size_in_bytes: int | None = None
    #: written | left (already at this version or newer: ``last_checkpoint_version``)
    last_checkpoint: str | None = None
    last_checkpoint_version: int | None = None
    error: str | None = None

    def to_json(self, exit_code: int) -> dict[str, Any]:
        return {"schema": "deltaguard.checkpoint/1", **self.__dict__, "exit_code": exit_code}

    def row(self) -> tuple[object, ...]:
        return tuple(getattr(self, c) for c in CHECKPOINT_TSV_COLUMNS)


#: ``checkpoint --format tsv``'s columns (docs/reference/output.md): one row.
CHECKPOINT_TSV_COLUMNS = (
    "version",
    "checkpoint",
    "outcome",
    "actions",
    "add_files",
    "tombstones",
    "size_in_bytes",
    "last_checkpoint",
    "last_checkpoint_version",
)


class _Refused(Exception):
    """A one-line refusal: exit 2."""


def check_checkpointable(snap: Snapshot) -> None:
    """Raises :class:`UnsupportedTableError` (one line, naming why) unless this writer's
    classic checkpoint is right for ``snap``'s table (see the module docstring, step 2)."""
    where, proto = snap.store.uri, snap.protocol
    if proto.min_writer_version > MAX_WRITER_VERSION:
        raise UnsupportedTableError(
            f"{where} needs writer version {proto.min_writer_version}; deltaguard writes up to "
            f"{MAX_WRITER_VERSION}: no checkpoint written"
        )
    for name in sorted(proto.writer_features):
        if name in _NOT_WRITTEN:
            raise UnsupportedTableError(
                f"{where} uses writer feature {name}: {_NOT_WRITTEN[name]}: no checkpoint written"
            )
        if feature(name) is None:
            raise UnsupportedTableError(
                f"{where} uses writer feature {name}, unknown to deltaguard: no checkpoint "
                "written (a writer must understand every writer feature)"
            )
    conf = snap.configuration
    if conf.get("delta.checkpoint.writeStatsAsStruct", "false").strip().lower() == "true":
        raise UnsupportedTableError(
            f"{where} has delta.checkpoint.writeStatsAsStruct=true, which requires the parsed "
            "stats and partition values deltaguard does not write: no checkpoint written"
        )


def _stats_as_json(snap: Snapshot) -> bool:
    value = snap.configuration.get("delta.checkpoint.writeStatsAsJson", "true")
    return value.strip().lower() != "false"


def _unexpired(snap: Snapshot, state: RawState, now_ms: int) -> list[dict[str, Any]]:
    """The tombstones a checkpoint keeps (:meth:`Snapshot.unexpired_tombstones`' rule)."""
    try:
        cutoff = now_ms - snap.deleted_file_retention_ms()
    except ValueError as exc:
        raise _Refused(f"{snap.store.uri}: delta.deletedFileRetentionDuration: {exc}") from None
    out = []
    for body in state.removes():
        ts = body.get("deletionTimestamp")
        if not isinstance(ts, int) or ts > cutoff:
            out.append(body)
    return out


def _existing(snap: Snapshot, version: int) -> str | None:
    """The name of a readable checkpoint of ``version``; refuses if it has only unreadable
    ones."""
    listed = [c for c in snap.listing.checkpoints if c.version == version]
    base = snap.segment.checkpoint
    covered = snap.listing.complete or (base is not None and base.version <= version)
    if not listed and not covered:  # a partial listing that may start above ``version``
        listed = [c for c in list_log(snap.store).checkpoints if c.version == version]
    if not listed:
        return None
    skipped = {ref.files for ref, _ in snap.segment.skipped}
    readable = [c for c in listed if c.files not in skipped]
    if not readable:
        names = ", ".join(f for c in listed for f in c.files)
        raise _Refused(
            f"version {version} has a checkpoint that cannot be read ({names}): no checkpoint "
            "written over it (audit names the damage)"
        )
    return readable[-1].files[0]


def _advance_hint(store: TableStore, s3: S3Options, body: bytes, version: int, rec: _Record) -> str:
    """Points ``_last_checkpoint`` at ``version`` unless it already names it or a newer one."""
    try:
        hint = read_last_checkpoint(store)
    except (LastCheckpointError, StorageError):
        hint = None  # damaged or unreadable: a correct one replaces it
    if hint is not None and hint.version >= version:
        rec.last_checkpoint, rec.last_checkpoint_version = "left", hint.version
        return f"{LAST_CHECKPOINT} left at version {hint.version}"
    overwrite(store, s3, f"{LOG_DIR}/{LAST_CHECKPOINT}", body)
    rec.last_checkpoint, rec.last_checkpoint_version = "written", version
    return f"{LAST_CHECKPOINT} now names version {version}"


def _checkpoint(req: CheckpointRequest, rec: _Record, out: list[str]) -> int:
    store = open_table(req.table, req.s3)
    snap = load_snapshot(store, req.version)
    rec.version = snap.version
    check_checkpointable(snap)
    name = _existing(snap, snap.version)
    if name is not None:
        rec.checkpoint, rec.outcome = name, "exists"
        _say(req, out, f"version {snap.version} already has a checkpoint ({name}): nothing written")
        return ExitCode.CLEAN
    state = raw_state(snap)
    assert state.protocol is not None and state.metadata is not None  # checked by raw_state
    adds = state.adds()
    removes = _unexpired(snap, state, int(time.time() * 1000))
    table = checkpoint_rows(
        adds,
        removes,
        state.protocol,
        state.metadata,
        state.txns.values(),
        state.domains.values(),
        stats=_stats_as_json(snap),
    )
    body = parquet_bytes(table)
    name = checkpoint_names(snap.version)[0]
    rec.checkpoint = name
    try:
        create_exclusive(store, req.s3, f"{LOG_DIR}/{name}", body)
    except LogFileExistsError:
        rec.outcome = "taken"
        _say(
            req,
            out,
            f"{LOG_DIR}/{name} was created by another writer meanwhile: kept, nothing written",
        )
        return ExitCode.CLEAN
    rec.outcome = "written"
    rec.actions, rec.add_files, rec.tombstones = table.num_rows, len(adds), len(removes)
    rec.size_in_bytes = len(body)
    _say(
        req,
        out,
        f"wrote {LOG_DIR}/{name}: version {snap.version}, {len(adds)} live file(s), "
        f"{len(removes)} tombstone(s), {table.num_rows} action(s), {len(body)} bytes",
    )
    hint = last_checkpoint_json(snap.version, table.num_rows, len(body), len(adds))
    _say(req, out, _advance_hint(store, req.s3, hint, snap.version, rec))
    return ExitCode.CLEAN


def _say(req: CheckpointRequest, out: list[str], text: str) -> None:
    out.append(text)
    if not (req.as_json or req.tsv):
        print(text, flush=True)


def run_checkpoint(req: CheckpointRequest) -> int:
    """Runs the command (see the module docstring) and returns its exit code. Errors are one
    line on stderr, never a traceback."""
    rec = _Record(req.table)
    out: list[str] = []
    try:
        code = _checkpoint(req, rec, out)
    except (DeltaLogError, _Refused, OSError) as exc:
        rec.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if rec.outcome == "written":
            rec.error += f" (the checkpoint {rec.checkpoint} was written)"
        print(f"deltaguard checkpoint: {rec.error}", file=sys.stderr, flush=True)
        code = ExitCode.UNREADABLE
    except (ClientError, BotoCoreError) as exc:
        rec.error = f"AWS request failed: {exc}"
        print(f"deltaguard checkpoint: {rec.error}", file=sys.stderr, flush=True)
        code = ExitCode.UNREADABLE
    except (KeyboardInterrupt, Terminated) as exc:
        done = (
            f"{rec.checkpoint} was written"
            + ("" if rec.last_checkpoint else f", {LAST_CHECKPOINT} may not name it yet")
            if rec.outcome == "written"
            else f"the creation of {rec.checkpoint} was in flight: it is either complete or "
            "absent (run the command again)"
            if rec.checkpoint is not None and rec.outcome is None
            else "no checkpoint was written"
        )
        rec.error = f"interrupted: {done}"
        print(f"deltaguard checkpoint: {rec.error}", file=sys.stderr, flush=True)
        code = ExitCode.SIGTERM if isinstance(exc, Terminated) else ExitCode.SIGINT
    if req.as_json:
        print(orjson.dumps(rec.to_json(int(code)), option=orjson.OPT_INDENT_2).decode())
    elif req.tsv:
        write_tsv(CHECKPOINT_TSV_COLUMNS, [rec.row()])
    return int(code)


@dataclass(frozen=True)
class ClassicCheckpoint:
    """A classic checkpoint file built in memory: its bytes, its rows (actions) and its live
    files (``_last_checkpoint``'s ``size`` and ``numOfAddFiles``)."""

    body: bytes
    actions: int
    add_files: int


def classic_checkpoint(snap: Snapshot, now_ms: int) -> ClassicCheckpoint:
    """The classic checkpoint of ``snap`` this command writes (steps 2 and 4 of the module
    docstring; tombstones expire at ``now_ms``), for ``repair`` to rebuild a broken one.
    Raises :class:`UnsupportedTableError` for a table refused by :func:`check_checkpointable`
    and the replay's errors; writes nothing."""
    check_checkpointable(snap)
    try:
        snap.deleted_file_retention_ms()
    except ValueError as exc:
        raise UnsupportedTableError(
            f"{snap.store.uri}: delta.deletedFileRetentionDuration: {exc}"
        ) from None
    state = raw_state(snap)
    assert state.protocol is not None and state.metadata is not None  # checked by raw_state
    adds = state.adds()
    table = checkpoint_rows(
        adds,
        _unexpired(snap, state, now_ms),
        state.protocol,
        state.metadata,
        state.txns.values(),
        state.domains.values(),
        stats=_stats_as_json(snap),
    )
    return ClassicCheckpoint(parquet_bytes(table), table.num_rows, len(adds))
