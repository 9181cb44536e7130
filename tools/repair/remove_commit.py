"""The repair commit for dangling references, and whether deltaguard may write the table.

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
from typing import Any

import orjson

from deltaguard.logstore.jars import VERSION
from deltaguard.tools.deltalog.errors import UnsupportedTableError
from deltaguard.tools.deltalog.features import MAX_WRITER_VERSION, feature
from deltaguard.tools.deltalog.snapshot import Snapshot

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
