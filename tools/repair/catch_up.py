"""After another writer took the version a repair meant to commit: read only the commits that
won (as Delta's ``OptimisticTransaction`` checks the winning commits for conflicts), not the
whole snapshot again, so the next attempt comes quickly enough to win next to busy writers.

A winning commit that adds or removes one of the planned entries takes it out of the plan (its
writer decided about it); one that changes the protocol or metadata asks for a full re-plan
(the table's writability and in-commit timestamps may have changed); a version whose commit
file is not visible yet (a DynamoDB writer between its commit point and its copy) is read
again shortly, and asks for a full re-plan if it stays missing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from deltaguard.logstore.commit_names import commit_file_name
from deltaguard.tools.deltalog import filetable
from deltaguard.tools.deltalog.actions import (
    AddFile,
    CommitInfo,
    Metadata,
    Protocol,
    RemoveFile,
    parse_json_actions,
)
from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.deltalog.errors import CorruptLogError
from deltaguard.tools.deltalog.listing import list_log
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.storage import TableStore


@dataclass
class CatchUp:
    """What the commits after ``read_version`` changed: the newest version, the planned keys
    they touched, whether to re-plan from a full snapshot, and the newest commit's timestamp
    (its in-commit timestamp when present)."""

    version: int
    touched: set[str] = field(default_factory=set)
    replan: bool = False
    timestamp_ms: int | None = None


def catch_up(store: TableStore, read_version: int, planned: set[str], waits: int = 5) -> CatchUp:
    """Reads the commits newer than ``read_version`` (see the module docstring). Raises
    :class:`CorruptLogError` for a winning commit that cannot be parsed, and the store's
    errors."""
    for wait in range(waits + 1):
        listing = list_log(store, after_version=read_version)
        newer = sorted(v for v in listing.commits if v > read_version)
        if newer and newer == list(range(read_version + 1, newer[-1] + 1)):
            break
        time.sleep(0.05 * (wait + 1))
    else:
        return CatchUp(read_version, replan=True)
    out = CatchUp(newer[-1])
    for version in newer:
        rel = f"{LOG_DIR}/{commit_file_name(version)}"
        parsed = parse_json_actions(store.read(rel))
        if parsed.errors:
            err = parsed.errors[0]
            raise CorruptLogError(f"{store.location(rel)}:{err.line}: {err.message}", rel, err.line)
        for action in parsed.actions:
            if isinstance(action, AddFile | RemoveFile):
                path = relative_to_root(action.path, store) or action.path
                dv = action.deletion_vector
                key = filetable.key_string(path, dv.unique_id if dv else None)
                if key in planned:
                    out.touched.add(key)
            elif isinstance(action, Protocol | Metadata):
                out.replan = True
            elif isinstance(action, CommitInfo) and version == newer[-1]:
                out.timestamp_ms = action.timestamp
    return out
