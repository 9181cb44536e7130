"""Whether a checkpoint holds the state its version had: its live files (path + deletion
vector id), protocol and metaData compared with the replay of the commits up to its version
from the previous checkpoint (or version 0). A checkpoint that holds an older state (its
bytes copied from another checkpoint, say) reads without error in every reader, which then
silently return the wrong rows: only this comparison sees it.

The replay is :func:`.snapshot.load_snapshot` twice, once from the checkpoint and once with
that checkpoint (and newer ones) left out of the listing: one definition of replay.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from deltaguard.tools.deltalog import filetable
from deltaguard.tools.deltalog.checkpoint import CheckpointRef
from deltaguard.tools.deltalog.listing import LogListing
from deltaguard.tools.deltalog.snapshot import Snapshot, load_snapshot
from deltaguard.tools.storage import TableStore
from deltaguard.tools.storage.errors import DeltaLogError

#: How many differing paths a difference names at most.
_EXAMPLES = 3


@dataclass(frozen=True)
class Comparison:
    """``differences``: how the checkpoint differs from the replayed commits (empty: it holds
    the same state, or was not compared); ``compared``: what it was compared with, or why it
    could not be (then ``done`` is False)."""

    differences: list[str]
    compared: str
    done: bool = True


def compare_checkpoint(store: TableStore, listing: LogListing, ref: CheckpointRef) -> Comparison:
    """Compares checkpoint ``ref`` (whole ``listing`` of the log) with the replay of the
    commits up to its version that do not depend on it. Never raises for damage: when either
    side cannot be replayed (commits cleaned up, a corrupt line, the checkpoint unreadable)
    the comparison says so in ``compared``."""
    older = dataclasses.replace(
        listing, checkpoints=[c for c in listing.checkpoints if c.version < ref.version]
    )
    only = dataclasses.replace(listing, checkpoints=[ref])
    try:
        from_commits = load_snapshot(store, ref.version, listing=older)
    except DeltaLogError as exc:
        return Comparison(
            [], f"not compared: the commits up to it cannot be replayed ({exc})", False
        )
    try:
        from_checkpoint = load_snapshot(store, ref.version, listing=only)
    except DeltaLogError as exc:
        return Comparison([], f"not compared: unreadable ({exc})", False)
    if from_checkpoint.segment.checkpoint != ref:
        return Comparison([], "not compared: unreadable (see checkpoint-unreadable)", False)
    base = from_commits.segment.checkpoint
    source = f"checkpoint {base.version}" if base is not None else "version 0"
    return Comparison(
        _differences(from_checkpoint, from_commits), f"with the commits from {source}"
    )


def _differences(checkpoint: Snapshot, commits: Snapshot) -> list[str]:
    out: list[str] = []
    held = set(filetable.keys(checkpoint.adds.table).to_pylist())
    replayed = set(filetable.keys(commits.adds.table).to_pylist())
    for keys, what in (
        (held - replayed, "live in the checkpoint, not per the commits"),
        (replayed - held, "live per the commits, not in the checkpoint"),
    ):
        if keys:
            shown = ", ".join(k.replace("\x00", " dv ") for k in sorted(keys)[:_EXAMPLES])
            more = f" and {len(keys) - _EXAMPLES} more" if len(keys) > _EXAMPLES else ""
            out.append(f"{len(keys)} file(s) {what}: {shown}{more}")
    if checkpoint.protocol != commits.protocol:
        out.append(f"protocol {checkpoint.protocol}, the commits give {commits.protocol}")
    a, b = checkpoint.metadata, commits.metadata
    for name in ("id", "schema_string", "partition_columns"):
        if getattr(a, name) != getattr(b, name):
            out.append(f"metaData {name} differs from the commits'")
    if dict(a.configuration) != dict(b.configuration):
        out.append("metaData configuration differs from the commits'")
    return out
