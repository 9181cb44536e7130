"""The DynamoDB LogStore's temp files (``_delta_log/.tmp/<file>.<uuid>``) and what the log
protocol may still need them for: the one rule ``audit`` and both ``orphans`` engines apply.

**The protocol** (Delta's ``BaseExternalLogStore``/``S3DynamoDBLogStore``; ours:
:mod:`deltaguard.logstore.s3_dynamodb` and the JVM ``S3DynamoDBLogStore``). To create
``N.json`` a writer writes the temp file T(N) = ``.tmp/N.json.<uuid>``, then puts the DynamoDB
entry (tablePath, fileName ``N.json``, tempPath T(N), complete ``false``) on the condition
that none exists: **the commit point**. Only then does it copy T(N) to ``N.json`` and mark the
entry complete, with ``expireTime`` = now + TTL (a day by default; DynamoDB's TTL then removes
the entry). A writer that dies between the commit point and the copy leaves commit N in T(N)
alone; the next reader's listing (the table's newest entry) or the next writer (the entry of
N-1) copies T(N) to ``N.json``. The copy is skipped when ``N.json`` exists. Writers that lose
the race for the entry leave their T(N) behind, named by no entry.

**The rule**, for a temp file of target ``F`` (``N.json``, or another log file a writer
created exclusively, such as ``N.crc``):

* ``F`` is the commit of a version newer than the latest: :attr:`TempState.PENDING`. It may be
  the only copy of commit N until a reader or writer copies it. Never deleted, whatever its
  age: deleting it loses commit N, and every later listing fails because the repair has no
  source. (Whether an entry names it does not matter: a writer between its temp write and its
  commit point looks the same, and an entry only ever makes it more needed.) Once it is
  older than :data:`WRITER_WINDOW_MS` (:func:`is_unclaimed`) no writer is still committing
  it: it is stranded if the DynamoDB entry of ``N.json`` names it (``repair
  --dynamodb-table`` restores it), a loser's or an unfinished writer's if no entry does; only
  the DynamoDB table can tell which (:func:`pending_note` says so).
* ``F`` is the commit of a version inside the retained log (from the oldest retained commit to
  the latest version) and ``N.json`` is missing: :attr:`TempState.STRANDED`, damage. The file
  may hold the missing commit; it is reported and never deleted.
* Otherwise (``F`` exists, or is a commit older than every retained commit, whose version the
  checkpoint holds) the protocol no longer needs the file once its DynamoDB entry is
  **complete** (the copy happened) **or expired** (DynamoDB's TTL removed it, which it does
  only to complete entries). While the entry is incomplete (no ``expireTime``: it never
  expires) a repair may still be under way: :attr:`TempState.IN_USE`. Without the DynamoDB
  table to ask (:class:`DynamoDBCheck`), the entry's state is unknown and the file is kept
  (:attr:`TempState.IN_USE`, the reason says so).
* A finished temp commit of a version that stays retained is still the one evidence that
  Delta's own DynamoDB store wrote that unmarked commit (its entry expires after a day): without
  it ``history`` and ``audit`` would take the commit for a single-driver one
  (:mod:`deltaguard.tools.deltalog.provenance`). It is kept as long as its version is retained:
  :attr:`TempState.EVIDENCE`; it goes with its version (``log-cleanup`` removes it with the
  expired commits). Only a finished temp commit of a version no longer retained is
  :attr:`TempState.GARBAGE`.

Temp files of other log stores (``.<name>.<uuid>.tmp``, ``*.tmp``) are not this protocol's and
are not judged here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from deltaguard.logstore.commit_names import commit_version
from deltaguard.tools.deltalog.listing import LogListing
from deltaguard.tools.storage.errors import StorageError

TEMP_DIR = ".tmp"

#: How long a DynamoDB writer may take from writing its temp commit ``.tmp/N.json.<uuid>`` to
#: copying it to ``N.json`` (a PUT, a DynamoDB put, a copy: seconds; a writer stalled by a
#: long GC pause or a network outage for minutes still fits). A temp commit of a version
#: newer than the latest that is older than this was left by a writer that stopped: the one
#: age rule of ``audit`` and ``repair``.
WRITER_WINDOW_MS = 15 * 60 * 1000


@dataclass(frozen=True)
class DynamoDBCheck:
    """The DynamoDB LogStore's table to ask about this table's entries: ``client`` is a boto3
    DynamoDB client, ``table_paths`` the ``tablePath`` values writers use (Spark:
    ``s3a://...``)."""

    client: Any
    table_name: str
    table_paths: tuple[str, ...]


@dataclass(frozen=True)
class EntryState:
    """What the DynamoDB table says about one log file: ``complete`` and the temp file the
    entry names (several entries for one file, under different table paths, merge to the
    least complete)."""

    complete: bool
    temp_path: str


class TempState(StrEnum):
    PENDING = "pending"
    STRANDED = "stranded"
    IN_USE = "in-use"
    EVIDENCE = "evidence"
    GARBAGE = "garbage"


@dataclass(frozen=True)
class TempVerdict:
    state: TempState
    reason: str


def temp_target(name: str) -> str | None:
    """The log file a DynamoDB temp file stands for (``.tmp/N.json.<uuid>`` -> ``N.json``),
    or None if ``name`` (relative to ``_delta_log``) is not one."""
    if not name.startswith(TEMP_DIR + "/"):
        return None
    target, dot, suffix = name[len(TEMP_DIR) + 1 :].rpartition(".")
    return target if dot and target and suffix and "/" not in target else None


def read_entries(check: DynamoDBCheck) -> dict[str, EntryState]:
    """Every DynamoDB entry of the table under each of ``check.table_paths``, by file name.
    Raises :class:`~deltaguard.tools.storage.errors.StorageError` naming the DynamoDB table
    when it cannot be read (missing table, credentials, endpoint)."""
    from botocore.exceptions import BotoCoreError, ClientError

    from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore

    store = S3DynamoDBLogStore(None, check.client, check.table_name)
    out: dict[str, EntryState] = {}
    for table_path in check.table_paths:
        try:
            entries = store.entries(table_path)
        except (OSError, ClientError, BotoCoreError) as exc:
            raise StorageError(
                f"cannot read DynamoDB table {check.table_name} (--dynamodb-table): {exc}"
            ) from None
        for e in entries:
            seen = out.get(e["fileName"])
            if seen is None or seen.complete:
                out[e["fileName"]] = EntryState(bool(e["complete"]), str(e["tempPath"]))
    return out


def is_unclaimed(name: str, listing: LogListing, now_ms: int) -> bool:
    """Whether temp file ``name`` (under ``.tmp/``) is older than :data:`WRITER_WINDOW_MS` by
    its listed modification time (False when the listing did not see it)."""
    info = listing.temp_infos.get(name)
    return info is not None and now_ms - info.mtime_ms > WRITER_WINDOW_MS


def pending_note(name: str, entries: Mapping[str, EntryState] | None) -> str:
    """What an unclaimed temp commit of a version newer than the latest is (module
    docstring): ``entries`` is :func:`read_entries`' answer, or None without the table."""
    target = temp_target(name) or name
    window = f"{WRITER_WINDOW_MS // 60_000} minutes"
    if entries is None:
        return (
            f"older than a writer takes to commit ({window}): may be a stranded commit: give "
            "`--dynamodb-table` to check"
        )
    entry = entries.get(target)
    if entry is not None and entry.temp_path == name:
        return (
            f"older than a writer takes to commit ({window}) and the DynamoDB entry of {target} "
            "names it: a stranded commit; `deltaguard repair --dynamodb-table` restores it"
        )
    return (
        f"older than a writer takes to commit ({window}) and no DynamoDB entry names it: a "
        "writer that lost the race or never reached its commit point; not a commit"
    )


def judge_temp(
    name: str,
    listing: LogListing,
    entries: Mapping[str, EntryState] | None,
    now_ms: int | None = None,
    retained_from: int | None = None,
) -> TempVerdict | None:
    """The state of DynamoDB temp file ``name`` (relative to ``_delta_log``) by the rule of
    the module docstring, or None if it is not one. ``entries`` is :func:`read_entries`'s
    answer, or None when the DynamoDB table was not given; with ``now_ms``, a pending temp
    commit older than :data:`WRITER_WINDOW_MS` says what it may be (:func:`pending_note`).
    ``retained_from``: the oldest version that stays retained (default: the oldest listed
    commit; ``log-cleanup`` gives the version it truncates to)."""
    target = temp_target(name)
    if target is None:
        return None
    version = commit_version(target)
    latest = listing.latest_version
    if version is not None and (latest is None or version > latest):
        if now_ms is not None and is_unclaimed(name, listing, now_ms):
            return TempVerdict(
                TempState.PENDING,
                f"temp commit of version {version}, newer than the latest version {latest}, "
                f"{pending_note(name, entries)}; never deleted",
            )
        return TempVerdict(
            TempState.PENDING,
            f"temp commit of version {version}, newer than the latest version {latest}: a "
            f"DynamoDB writer's commit may be pending in it (its only copy until a reader or "
            f"writer copies it to {target}); never deleted",
        )
    oldest = min(listing.commits, default=None)
    exists = target in listing.files
    if version is not None and not exists and oldest is not None and version >= oldest:
        return TempVerdict(
            TempState.STRANDED,
            f"damage: version {version} is inside the retained log (versions {oldest}-"
            f"{latest}) but {target} is missing; this temp file may be its only copy. Never "
            f"deleted: check it and copy it to _delta_log/{target}",
        )
    where = (
        f"{target} exists" if exists else f"version {version} is older than every retained commit"
    )
    if version is None and not exists:
        where = f"{target} does not exist"
    if entries is None:
        return TempVerdict(
            TempState.IN_USE,
            f"DynamoDB temp file: {where}, but without --dynamodb-table whether its DynamoDB "
            "entry is complete is unknown: kept (give --dynamodb-table to clean it)",
        )
    entry = entries.get(target)
    if entry is not None and not entry.complete:
        return TempVerdict(
            TempState.IN_USE,
            f"DynamoDB temp file: {where}, but the DynamoDB entry of {target} is incomplete "
            f"(names {entry.temp_path}): a repair may still read it; kept until the entry is "
            "complete",
        )
    state = "complete" if entry is not None else "expired (no entry left)"
    retained = oldest if retained_from is None else retained_from
    if version is not None and exists and retained is not None and version >= retained:
        return TempVerdict(
            TempState.EVIDENCE,
            f"DynamoDB temp commit of retained version {version} (its entry is {state}): kept "
            f"while version {version} is retained, the evidence that Delta's DynamoDB store "
            "wrote it (history, audit); it goes with its version",
        )
    return TempVerdict(
        TempState.GARBAGE,
        f"DynamoDB temp file: {where} and its DynamoDB entry is {state}: no longer needed",
    )
