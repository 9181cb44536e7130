"""``deltaguard repair --restore-lost``: put lost blind appends back as new versions.

A *lost commit* (:mod:`deltaguard.tools.deltalog.lost_commits`) is an ``N.json`` a concurrent
writer overwrote; bucket versioning kept its bytes. One is restorable when it is a blind
append its files still back:

* only ``add`` actions and ``commitInfo`` (no ``remove``, ``metaData``, ``protocol``, ``txn``,
  ``domainMetadata``, ``cdc``, and every line parses): re-committing it later cannot change
  what any other commit read or decided;
* every added file is present at its logged size, none is live already, none has a
  deletion vector, and its partition values name exactly the table's partition columns;
* the table takes a commit from deltaguard (:func:`.remove_commit.check_writable`) and has
  no row tracking (the lost adds' row ids were allocated at a version another commit holds).

Each restorable one becomes one new version through the table's commit protocol
(:mod:`.committer`, :func:`deltaguard.tools.deltalog.commit.commit_next`): its raw ``add``
objects unchanged, after a ``commitInfo`` (``operation`` ``WRITE``, mode ``Append``, blind
append, ``engineInfo`` ``deltaguard-repair/<v>``, the lost commit's ``userMetadata``) carrying :data:`~deltaguard.tools.deltalog.
lost_commits.RESTORED_KEY` = ``{"version", "versionId", "etag"}`` of the lost object version.
A later run (and ``audit``) reads that marker in the retained commits and leaves it alone.
When another writer takes the version, the log is read again and the commit tried at the
next one (up to ``attempts``): a blind append conflicts with nothing but another restore of
the same lost commit, which the re-read finds.

Exit codes (``deltaguard repair`` maps them): 0 nothing lost, or every lost commit restored (now or before); 1 a dry run with
something to restore, or a lost commit that is not restorable (``not restorable: ...``, what
it held; nothing written for it); 2 the lost commits could not be looked for (a local
table, bucket versioning off or denied), the table was refused, or a commit failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.deltalog.commit import VersionTakenError, commit_next
from deltaguard.tools.deltalog.errors import UnsupportedTableError
from deltaguard.tools.deltalog.listing import list_log
from deltaguard.tools.deltalog.lost_commits import (
    RESTORED_KEY,
    LostCommit,
    restored_marks,
    scan_lost_commits,
)
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.deltalog.snapshot import Snapshot, load_snapshot
from deltaguard.tools.repair.committer import Committer
from deltaguard.tools.repair.remove_commit import (
    ENGINE_INFO,
    check_writable,
    in_commit_timestamps,
    with_in_commit_timestamp,
)
from deltaguard.tools.storage import TableStore, read_many


class LostRefused(Exception):
    """The lost commits cannot be looked for or restored at all (exit 2, nothing written)."""


@dataclass
class LostOutcome:
    """What became of one lost commit: ``state`` is ``restored``, ``already-restored``,
    ``would-restore`` (dry run) or ``not-restorable`` (``why``); ``committed_version``: the
    version that restores it (this run)."""

    version: int
    version_id: str
    state: str
    description: str
    why: str = ""
    committed_version: int | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _retained_marks(store: TableStore) -> set[tuple[int, str]]:
    listing = list_log(store)
    names = [f"{LOG_DIR}/{listing.commits[v]}" for v in sorted(listing.commits)]
    return restored_marks(read_many(store, names))


def _blocker(store: TableStore, snap: Snapshot, lost: LostCommit) -> str | None:
    """Why ``lost`` cannot be restored on ``snap`` (see the module docstring), or None."""
    if lost.others:
        return f"it also holds {', '.join(lost.others)}: not a blind append"
    if not lost.adds:
        return "it adds no file"
    if "rowTracking" in snap.protocol.writer_features:
        return (
            "the table has row tracking: the lost commit's row ids were allocated at a "
            "version another commit holds"
        )
    partition_columns = set(snap.metadata.partition_columns)
    live = {relative_to_root(p, store) for p in snap.adds.paths()}
    for add in lost.adds:
        rel = relative_to_root(add.path, store)
        if rel is None:
            return f"{add.path} is outside the table root"
        if add.deletion_vector is not None:
            return f"{add.path} has a deletion vector"
        if set(add.partition_values) != partition_columns:
            return f"{add.path}'s partition values do not match the table's partition columns"
        if rel in live:
            return f"{add.path} is live in the table already"
        info = store.stat(rel)
        if info is None:
            return f"{add.path} is gone"
        if info.size != add.size:
            return f"{add.path} is {info.size} bytes, its add says {add.size}"
    return None


def _actions(lost: LostCommit, snap: Snapshot, now_ms: int) -> list[dict[str, Any]]:
    """The restoring commit: a ``commitInfo`` naming the lost commit, then its raw adds."""
    raw_adds = [
        line["add"]
        for text in lost.body.splitlines()
        if text.strip()
        for line in [orjson.loads(text)]
        if isinstance(line, dict) and "add" in line
    ]
    info: dict[str, Any] = {
        "timestamp": now_ms,
        "operation": "WRITE",
        "operationParameters": {"mode": "Append", "tool": "deltaguard repair --restore-lost"},
        "readVersion": snap.version,
        "isolationLevel": "Serializable",
        "isBlindAppend": True,
        "operationMetrics": {
            "numFiles": str(len(raw_adds)),
            "numOutputBytes": str(sum(int(a["size"]) for a in raw_adds)),
            **({"numOutputRows": str(lost.rows)} if lost.rows is not None else {}),
        },
        "engineInfo": ENGINE_INFO,
        **(
            {"userMetadata": lost.commit_info["userMetadata"]}
            if lost.commit_info and isinstance(lost.commit_info.get("userMetadata"), str)
            else {}
        ),
        RESTORED_KEY: {"version": lost.version, "versionId": lost.version_id, "etag": lost.etag},
    }
    ict_after = (snap.timestamp_ms or 0) if in_commit_timestamps(snap) else None
    info = with_in_commit_timestamp(info, now_ms, ict_after)
    return [{"commitInfo": info}, *({"add": a} for a in raw_adds)]


def restore_lost(
    store: TableStore,
    yes: bool,
    committer: Callable[[], Committer],
    line: Callable[[str], None],
    attempts: int = 20,
) -> list[LostOutcome]:
    """Finds the lost commits of ``store`` and (``yes``) restores the restorable ones (module
    docstring); ``committer`` opens the table's commit protocol (called once, with ``yes``),
    ``line`` prints one line of the report. Returns the outcomes (the command maps them to
    its exit code: :func:`needs_attention`). Raises
    :class:`LostRefused` when the lost commits cannot be looked for,
    :class:`~deltaguard.tools.deltalog.errors.DeltaLogError` when the table cannot be read
    or is refused."""
    scan = scan_lost_commits(store)
    if scan.note is not None and not scan.lost:
        raise LostRefused(scan.note)
    if scan.versioning is None:
        raise LostRefused(
            f"{store.uri} is not on S3: lost commits are found through bucket versioning"
        )
    if scan.note is not None:
        line(f"note: {scan.note}")
    marks = _retained_marks(store)
    outcomes: list[LostOutcome] = []
    opened: Committer | None = None
    for lost in scan.lost:
        what = lost.describe()
        if (lost.version, lost.etag) in marks:
            outcomes.append(LostOutcome(lost.version, lost.version_id, "already-restored", what))
            line(f"lost commit {what}: already restored")
            continue
        snap = load_snapshot(store)
        check_writable(snap)
        why = _blocker(store, snap, lost)
        if why is not None:
            outcomes.append(LostOutcome(lost.version, lost.version_id, "not-restorable", what, why))
            line(f"not restorable: lost commit {what}: {why}; nothing written")
            continue
        if not yes:
            outcomes.append(LostOutcome(lost.version, lost.version_id, "would-restore", what))
            line(f"lost commit {what}: would be restored as version {snap.version + 1}")
            continue
        opened = opened or committer()
        version = _commit(store, opened, lost, snap, attempts, line)
        if version is None:
            outcomes.append(LostOutcome(lost.version, lost.version_id, "already-restored", what))
            line(f"lost commit {what}: restored meanwhile by another run")
            continue
        marks.add((lost.version, lost.etag))
        outcomes.append(LostOutcome(lost.version, lost.version_id, "restored", what, "", version))
        line(f"lost commit {what}: restored as version {version} ({opened.protocol})")
    if not scan.lost:
        line(f"{store.uri}: no lost commits (bucket versioning {scan.versioning})")
    return outcomes


def needs_attention(outcomes: list[LostOutcome]) -> bool:
    """Whether a lost commit is left: not restorable, or restorable in a dry run (exit 1)."""
    return any(o.state in ("not-restorable", "would-restore") for o in outcomes)


def _commit(
    store: TableStore,
    committer: Committer,
    lost: LostCommit,
    snap: Snapshot,
    attempts: int,
    line: Callable[[str], None],
) -> int | None:
    """Commits the restore of ``lost`` on ``snap`` (re-reading on a taken version); None
    when a commit that won restores it already."""
    for _ in range(attempts):
        actions = _actions(lost, snap, int(time.time() * 1000))
        try:
            return commit_next(committer.store, committer.table_uri, snap.version, actions)
        except VersionTakenError:
            line(f"version {snap.version + 1} was taken by another writer: reading the log again")
            if (lost.version, lost.etag) in _retained_marks(store):
                return None
            snap = load_snapshot(store)
            check_writable(snap)
            why = _blocker(store, snap, lost)
            if why is not None:
                raise UnsupportedTableError(f"lost commit {lost.describe()}: {why}") from None
    raise LostRefused(f"no free version after {attempts} attempts: nothing committed")
