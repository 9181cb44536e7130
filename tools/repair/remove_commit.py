"""The repair commit for dangling references: which entries it removes, its actions, and
whether deltaguard may write the table.

Which live files of a snapshot a reader cannot read: the dangling references a repair
removes. The audit's own file check (:mod:`deltaguard.tools.deltalog.live_files`, one
definition of each rule): ``exists`` (one listing: missing data or deletion vector files,
data files whose size is not the logged one, deletion vector files too short for their
descriptor) and ``footers`` (also each data file's Parquet footer), and the files outside the
table root checked one by one (one that cannot be checked is left alone).

A storage error while checking a file raises (:class:`StorageError`): a file that could not be
read is never called broken.


The commit (one version, nothing but these actions):

* ``commitInfo`` first: ``operation`` ``FSCK`` (the name Databricks' ``FSCK REPAIR TABLE``
  and delta-rs' ``filesystem_check`` give the same repair, so history tools know it),
  ``operationParameters`` (strings, as Delta's ``CommitInfo`` requires): ``tool``
  (``deltaguard repair``), ``check`` (``exists`` / ``footers``), ``removedFiles`` (a JSON list of
  the raw paths) and ``reasons`` (a JSON object: path -> what was wrong); ``readVersion``,
  ``isolationLevel`` ``Serializable``, ``isBlindAppend`` false, ``engineInfo``, ``txnId``, and
  ``inCommitTimestamp`` when the table has in-commit timestamps on (greater than the previous
  commit's, as the protocol requires).
* one ``remove`` per dangling entry, as Delta's ``AddFile.removeWithTimestamp`` builds it:
  the raw path, ``deletionTimestamp`` now, ``extendedFileMetadata`` true, the add's
  ``partitionValues``, ``size``, ``tags``, ``deletionVector``, ``baseRowId``,
  ``defaultRowCommitVersion`` and ``stats`` carried over, so VACUUM's retention and the row
  tracking and CDF bookkeeping stay right.
* ``dataChange`` true: the rows of these files leave the table. PROTOCOL.md allows
  ``dataChange`` false only when the same records stay in the table through other files
  (compaction), which is not so here. What that means for streaming and CDF readers is in
  docs/guides/repair.md.

Nothing else: protocol, metadata, txn and domain metadata are untouched.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from deltaguard.logstore.jars import VERSION
from deltaguard.tools.deltalog import filetable
from deltaguard.tools.deltalog.check_depth import CheckMode
from deltaguard.tools.deltalog.errors import UnsupportedTableError
from deltaguard.tools.deltalog.features import MAX_WRITER_VERSION, feature
from deltaguard.tools.deltalog.live_files import (
    MISSING_DATA,
    SIZE_MISMATCH,
    check_footers,
    check_listed,
    check_outside,
    listed_sizes,
    parquet_footer_problem,
)
from deltaguard.tools.deltalog.snapshot import Snapshot
from deltaguard.tools.storage import TableStore

ENGINE_INFO = f"deltaguard-repair/{VERSION}"
OPERATION = "FSCK"
#: What Delta carries from an add to its remove besides path and timestamp.
_CARRIED = ("tags", "deletionVector", "baseRowId", "defaultRowCommitVersion", "stats")
#: Writer features whose writers owe each commit more than its log actions (an Iceberg
#: metadata conversion): deltaguard does not do that, so it does not commit to such tables.
_OWED_PER_COMMIT = {
    "icebergCompatV1",
    "icebergCompatV2",
    "icebergCompatV3",
    "icebergWriterCompatV1",
    "icebergWriterCompatV3",
}


def check_writable(snap: Snapshot) -> None:
    """Raises :class:`UnsupportedTableError` (one line, naming why) unless a remove-only
    commit by deltaguard is valid for this table: a writer version up to 7, every writer
    feature known (catalog-managed and coordinator tables are refused by the replay already),
    none that owes each commit an Iceberg conversion, and not ``delta.appendOnly`` (which
    forbids removing data)."""
    where = snap.store.uri
    proto = snap.protocol
    if proto.min_writer_version > MAX_WRITER_VERSION:
        raise UnsupportedTableError(
            f"{where} needs writer version {proto.min_writer_version}; deltaguard writes up to "
            f"{MAX_WRITER_VERSION}: not repaired"
        )
    for name in sorted(proto.writer_features):
        if feature(name) is None:
            raise UnsupportedTableError(
                f"{where} uses writer feature {name}, unknown to deltaguard: not repaired "
                "(a writer must understand every writer feature)"
            )
        if name in _OWED_PER_COMMIT:
            raise UnsupportedTableError(
                f"{where} uses writer feature {name}: each commit must also be converted to "
                "Iceberg metadata, which deltaguard does not do: not repaired"
            )
    if str(snap.configuration.get("delta.appendOnly", "false")).lower() == "true":
        raise UnsupportedTableError(
            f"{where} has delta.appendOnly=true, which forbids removing files: not repaired "
            "(unset it with ALTER TABLE ... SET TBLPROPERTIES first, if losing those rows is "
            "accepted)"
        )


def in_commit_timestamps(snap: Snapshot) -> bool:
    return str(snap.configuration.get("delta.enableInCommitTimestamps", "false")).lower() == (
        "true"
    )


def with_in_commit_timestamp(
    info: dict[str, Any], now_ms: int, ict_after: int | None
) -> dict[str, Any]:
    """``info`` (a ``commitInfo``) led by its ``inCommitTimestamp`` when the table has them on
    (``ict_after``: the previous commit's; None: off): later than the previous one, as the
    protocol requires, and never before ``now_ms``."""
    if ict_after is None:
        return info
    return {"inCommitTimestamp": max(now_ms, ict_after + 1), **info}


def remove_action(add: Mapping[str, Any], now_ms: int) -> dict[str, Any]:
    """The ``remove`` of one raw ``add`` (see the module docstring)."""
    body: dict[str, Any] = {
        "path": add["path"],
        "deletionTimestamp": now_ms,
        "dataChange": True,
        "extendedFileMetadata": True,
        "partitionValues": dict(add.get("partitionValues") or {}),
        "size": add["size"],
    }
    for field in _CARRIED:
        value = add.get(field)
        if value is not None and (field != "stats" or isinstance(value, str)):
            body[field] = value
    return {"remove": body}


def repair_actions(
    read_version: int,
    adds: Sequence[Mapping[str, Any]],
    reasons: Mapping[str, str],
    check: str,
    ict_after: int | None = None,
    now_ms: int | None = None,
) -> list[dict[str, Any]]:
    """The whole repair commit on top of ``read_version`` removing ``adds`` (raw add
    objects); ``reasons``: raw path -> what is wrong. ``ict_after``: the previous commit's
    in-commit timestamp when the table has them on (None: off)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    paths = [str(a["path"]) for a in adds]
    info: dict[str, Any] = {
        "timestamp": now_ms,
        "operation": OPERATION,
        "operationParameters": {
            "tool": "deltaguard repair",
            "check": check,
            "removedFiles": orjson.dumps(paths).decode(),
            "reasons": orjson.dumps({p: reasons.get(p, "") for p in paths}).decode(),
        },
        "readVersion": read_version,
        "isolationLevel": "Serializable",
        "isBlindAppend": False,
        "operationMetrics": {
            "numRemovedFiles": str(len(adds)),
            "numRemovedBytes": str(sum(int(a["size"]) for a in adds)),
        },
        "engineInfo": ENGINE_INFO,
    }
    info = with_in_commit_timestamp(info, now_ms, ict_after)
    return [{"commitInfo": info}, *(remove_action(a, now_ms) for a in adds)]


@dataclass(frozen=True)
class Dangling:
    """A live entry no reader can read: ``key`` is the replay's file key (decoded path and DV
    id), ``path`` the decoded log path, ``reason`` what is wrong, naming the file (the audit
    finding's message), ``code`` the audit finding's code."""

    key: str
    path: str
    reason: str
    code: str = MISSING_DATA


def find_dangling(
    store: TableStore, snap: Snapshot, mode: CheckMode, threads: int = 8
) -> list[Dangling]:
    """The removable entries of :func:`find_damage`."""
    return find_damage(store, snap, mode, threads)[0]


def find_damage(
    store: TableStore, snap: Snapshot, mode: CheckMode, threads: int = 8
) -> tuple[list[Dangling], list[Dangling]]:
    """Every live entry of ``snap`` a reader cannot read (see the module docstring), one per
    entry (its first problem), sorted by path: (to remove, to keep). A data file longer than
    its ``add``'s ``size`` (bytes appended after the commit) is kept: readers locate its
    footer from the logged size and may read every row, so removing it would lose them. It
    is removed only with ``--check footers`` when its footer at the logged size cannot be
    read. A shorter one (a footer past its end) is always removed. Raises
    :class:`StorageError` when the table cannot be listed or a file not read."""
    sizes = listed_sizes(store)
    problems, external = check_listed(store, snap, sizes)
    outside, _seen = check_outside(store, external)
    problems += outside
    if mode is CheckMode.FOOTERS:
        broken = {p.key for p in problems if p.code in (MISSING_DATA, SIZE_MISMATCH)}
        problems += check_footers(store, snap, sizes, broken, threads)
    logged = _logged_sizes(snap, {p.key for p in problems if p.code == SIZE_MISMATCH})
    remove: dict[str, Dangling] = {}
    keep: dict[str, Dangling] = {}
    for p in problems:
        if p.key in remove or p.key in keep:
            continue
        size = logged.get(p.key)
        if p.code == SIZE_MISMATCH and size is not None and sizes.get(p.file, 0) > size:
            if mode is CheckMode.FOOTERS:
                why = parquet_footer_problem(store, p.file, size)
                if why is not None:
                    remove[p.key] = Dangling(
                        p.key, p.path, f"{p.message}; at the logged size {why}", p.code
                    )
                    continue
                keep[p.key] = Dangling(p.key, p.path, f"{p.message}; {_GROWN_READABLE}", p.code)
            else:
                keep[p.key] = Dangling(p.key, p.path, f"{p.message}; {_GROWN_UNCHECKED}", p.code)
            continue
        remove[p.key] = Dangling(p.key, p.path, p.message, p.code)

    def ordered(d: dict[str, Dangling]) -> list[Dangling]:
        return sorted(d.values(), key=lambda x: (x.path, x.key))

    return ordered(remove), ordered(keep)


_GROWN_UNCHECKED = (
    "longer than logged: delta-rs reads it at the logged size, Spark fails on it (it looks "
    "for the footer at the file's end); kept, as removing it would drop rows delta-rs reads. "
    "`repair --check footers` (the default) removes it only if its footer at the logged size "
    "is unreadable; truncate it to the logged size or restore the committed file from a "
    "backup"
)
_GROWN_READABLE = (
    "longer than logged, but its footer at the logged size reads: delta-rs reads it, Spark "
    "fails on it (it looks for the footer at the file's end); kept, as removing it would drop "
    "rows delta-rs reads. Truncate it to the logged size (the committed file) or restore the "
    "committed file from a backup"
)


def _logged_sizes(snap: Snapshot, keys: set[str]) -> dict[str, int]:
    """The ``add`` ``size`` of each entry in ``keys``."""
    if not keys:
        return {}
    table = snap.adds.table
    return {
        k: s
        for k, s in zip(filetable.keys(table).to_pylist(), table["size"].to_pylist(), strict=True)
        if k in keys and s is not None
    }
