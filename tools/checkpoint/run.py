"""What ``deltaguard checkpoint`` does, behind the thin click command in :mod:`deltaguard.tools.cli`.

1. Replay the snapshot of the latest version (or ``--version N``): a table that cannot be
   read, or a version the log no longer holds, is refused (exit 2, nothing written).
2. Refuse a table whose checkpoint this writer cannot make right (:func:`check_checkpointable`:
   exit 2, nothing written): a writer version above 7, a writer feature it does not know,
   ``delta.checkpoint.writeStatsAsStruct`` true (the parsed stats columns are not written).
3. A version that already has a readable checkpoint gets none: exit 0, nothing written. One
   whose checkpoint cannot be read is refused (``repair`` is for that): exit 2.
4. Read the segment's raw actions (:mod:`.state`, checked against the replay) and write the
   checkpoint create-exclusive (:mod:`.store`): never over an existing file.

   * Classic (:mod:`.build`): ``N.checkpoint.parquet`` (:mod:`.parquet`). Another writer that
     created it first wins (exit 0, its file is kept).
   * V2, for a table with ``v2Checkpoint`` and ``delta.checkpointPolicy = v2``
     (:func:`uses_v2_checkpoints`; built by :mod:`.v2`, written by :mod:`.v2_write`): the
     sidecars in ``_delta_log/_sidecars/`` first, then the UUID-named top-level file naming
     them (``--v2-format``: JSON, Delta's default, or parquet). A sidecar no top-level file
     names (the run was interrupted) is harmless: ``log-cleanup`` removes it once older than
     the log retention.
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
from deltaguard.tools.checkpoint.build import (
    check_checkpointable,
    classic_checkpoint,
    uses_v2_checkpoints,
)
from deltaguard.tools.checkpoint.last_checkpoint import last_checkpoint_json
from deltaguard.tools.checkpoint.store import create_exclusive, overwrite
from deltaguard.tools.checkpoint.v2_write import V2Progress, write_v2
from deltaguard.tools.deltalog.checkpoint import LOG_DIR, checkpoint_names
from deltaguard.tools.deltalog.listing import (
    LastCheckpointError,
    list_log,
    read_last_checkpoint,
)
from deltaguard.tools.deltalog.names import SIDECARS_DIR, TopLevelFormat
from deltaguard.tools.deltalog.snapshot import Snapshot, load_snapshot
from deltaguard.tools.exit_codes import ExitCode, Terminated
from deltaguard.tools.output import write_tsv
from deltaguard.tools.storage import S3Options, TableStore, open_table
from deltaguard.tools.storage.errors import DeltaLogError, StorageError

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
    #: ``--v2-format``: the top-level file of a V2 checkpoint
    v2_format: TopLevelFormat = TopLevelFormat.JSON


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
    #: a V2 checkpoint's sidecar files (names in ``_delta_log/_sidecars/``), as written
    sidecars: list[str] | None = None
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
    v2 = uses_v2_checkpoints(snap)
    check_checkpointable(snap, v2=v2)
    name = _existing(snap, snap.version)
    if name is not None:
        rec.checkpoint, rec.outcome = name, "exists"
        _say(req, out, f"version {snap.version} already has a checkpoint ({name}): nothing written")
        return ExitCode.CLEAN
    if v2:
        return _write_v2(req, store, snap, rec, out)
    made = classic_checkpoint(snap, int(time.time() * 1000))
    body = made.body
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
    rec.actions, rec.add_files, rec.tombstones = made.actions, made.add_files, made.tombstones
    rec.size_in_bytes = len(body)
    _say(
        req,
        out,
        f"wrote {LOG_DIR}/{name}: version {snap.version}, {made.add_files} live file(s), "
        f"{made.tombstones} tombstone(s), {made.actions} action(s), {len(body)} bytes",
    )
    hint = last_checkpoint_json(snap.version, made.actions, len(body), made.add_files)
    _say(req, out, _advance_hint(store, req.s3, hint, snap.version, rec))
    return ExitCode.CLEAN


def _write_v2(
    req: CheckpointRequest, store: TableStore, snap: Snapshot, rec: _Record, out: list[str]
) -> int:
    """Step 4, V2 (the module docstring): :func:`.v2_write.write_v2`, then the hint."""
    rec.sidecars = []
    progress = V2Progress(sidecars=rec.sidecars)
    try:
        written = write_v2(store, req.s3, snap, req.v2_format, progress)
    finally:
        rec.checkpoint = progress.top_level
    rec.outcome = "written"
    rec.actions, rec.size_in_bytes = written.actions, written.size_in_bytes
    rec.add_files, rec.tombstones = written.add_files, written.tombstones
    _say(
        req,
        out,
        f"wrote {LOG_DIR}/{written.name} (V2) and {len(written.sidecars)} sidecar(s) in "
        f"{LOG_DIR}/{SIDECARS_DIR}/: version {snap.version}, {written.add_files} live file(s), "
        f"{written.tombstones} tombstone(s), {written.actions} action(s), "
        f"{written.size_in_bytes} bytes",
    )
    _say(req, out, _advance_hint(store, req.s3, written.hint, snap.version, rec))
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
            else f"{len(rec.sidecars)} sidecar(s) were written that no checkpoint names "
            "(log-cleanup removes them once older than the log retention)"
            if rec.sidecars
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
