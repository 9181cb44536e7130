"""The classic checkpoint of a snapshot, built in memory (nothing written): which tables this
writer may checkpoint (:func:`check_checkpointable`), which form a table's checkpoints take
(:func:`uses_v2_checkpoints`), the actions a checkpoint keeps (the raw actions of :mod:`.state`,
live tombstones by :func:`unexpired_tombstones`) and the parquet bytes (:mod:`.parquet`).
``deltaguard checkpoint`` (:mod:`.run`) and ``repair``'s log step
(:mod:`deltaguard.tools.repair.log_repair`) write what :func:`classic_checkpoint` returns; the
V2 form is :mod:`.v2`'s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltaguard.tools.checkpoint.parquet import checkpoint_rows, parquet_bytes
from deltaguard.tools.checkpoint.state import RawState, raw_state
from deltaguard.tools.deltalog.errors import UnsupportedTableError
from deltaguard.tools.deltalog.features import MAX_WRITER_VERSION, feature
from deltaguard.tools.deltalog.snapshot import Snapshot

#: Writer features whose checkpoints this writer does not make (each with why).
_NOT_WRITTEN = {
    "redirectWriterOnly-preview": "the table is redirected to another location",
}
V2_FEATURE = "v2Checkpoint"
POLICY_KEY = "delta.checkpointPolicy"


def uses_v2_checkpoints(snap: Snapshot) -> bool:
    """Whether ``snap``'s table takes V2 checkpoints: the ``v2Checkpoint`` writer feature and
    ``delta.checkpointPolicy = v2`` (Delta Spark's ``getV2CheckpointFormatOpt``). A table with
    the feature and the ``classic`` policy takes classic (V1 spec) checkpoints, which the
    protocol always allows."""
    policy = snap.configuration.get(POLICY_KEY, "classic").strip().lower()
    return V2_FEATURE in snap.protocol.writer_features and policy == "v2"


def check_checkpointable(snap: Snapshot, *, v2: bool = False) -> None:
    """Raises :class:`UnsupportedTableError` (one line, naming why) unless this writer's
    classic checkpoint (``v2``: its V2 checkpoint, :mod:`.v2`) is right for ``snap``'s table:
    a writer version up to 7, only writer features deltaguard knows, not redirected, no
    ``delta.checkpoint.writeStatsAsStruct``; a table that takes V2 checkpoints
    (:func:`uses_v2_checkpoints`) only with ``v2``."""
    where, proto = snap.store.uri, snap.protocol
    if proto.min_writer_version > MAX_WRITER_VERSION:
        raise UnsupportedTableError(
            f"{where} needs writer version {proto.min_writer_version}; deltaguard writes up to "
            f"{MAX_WRITER_VERSION}: no checkpoint written"
        )
    if uses_v2_checkpoints(snap) and not v2:
        raise UnsupportedTableError(
            f"{where} uses writer feature {V2_FEATURE} with {POLICY_KEY}=v2: its checkpoints "
            "must follow the V2 spec (checkpointMetadata, sidecars), not a classic one: no "
            "checkpoint written"
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


def stats_as_json(snap: Snapshot) -> bool:
    value = snap.configuration.get("delta.checkpoint.writeStatsAsJson", "true")
    return value.strip().lower() != "false"


def unexpired_tombstones(snap: Snapshot, state: RawState, now_ms: int) -> list[dict[str, Any]]:
    """The tombstones a checkpoint keeps (:meth:`Snapshot.unexpired_tombstones`' rule).
    Raises :class:`UnsupportedTableError` for a retention property that does not parse."""
    try:
        cutoff = now_ms - snap.deleted_file_retention_ms()
    except ValueError as exc:
        raise UnsupportedTableError(
            f"{snap.store.uri}: delta.deletedFileRetentionDuration: {exc}"
        ) from None
    out = []
    for body in state.removes():
        ts = body.get("deletionTimestamp")
        if not isinstance(ts, int) or ts > cutoff:
            out.append(body)
    return out


@dataclass(frozen=True)
class ClassicCheckpoint:
    """A classic checkpoint file built in memory: its bytes, its rows (actions) and its live
    files (``_last_checkpoint``'s ``size`` and ``numOfAddFiles``)."""

    body: bytes
    actions: int
    add_files: int
    #: the tombstones (``remove`` actions) it keeps
    tombstones: int


def classic_checkpoint(snap: Snapshot, now_ms: int) -> ClassicCheckpoint:
    """The classic checkpoint of ``snap`` (tombstones expire at ``now_ms``): what
    ``deltaguard checkpoint`` writes, and what ``repair`` rebuilds a broken one with.
    Raises :class:`UnsupportedTableError` for a table refused by :func:`check_checkpointable`
    and the replay's errors; writes nothing."""
    check_checkpointable(snap)
    state = raw_state(snap)
    assert state.protocol is not None and state.metadata is not None  # checked by raw_state
    adds = state.adds()
    removes = unexpired_tombstones(snap, state, now_ms)
    table = checkpoint_rows(
        adds,
        removes,
        state.protocol,
        state.metadata,
        state.txns.values(),
        state.domains.values(),
        stats=stats_as_json(snap),
    )
    return ClassicCheckpoint(parquet_bytes(table), table.num_rows, len(adds), len(removes))
