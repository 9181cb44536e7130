"""DynamoDB temp commits to put back: a version whose ``N.json`` is missing while a temp
commit ``_delta_log/.tmp/N.json.<uuid>`` of it exists (the protocol and when a temp file is
needed: :mod:`deltaguard.tools.deltalog.temp_commits`).

A temp file is provably commit N only when the DynamoDB entry for ``N.json`` names it: the
entry is the protocol's commit point, and writers that lost the race for it leave temp files
no entry names. So, for each version with a temp commit and no ``N.json``:

* the entry names one of its temp files: **restore** it (copy its bytes to ``N.json`` with a
  create-exclusive write, never an overwrite), then mark the entry complete;
* no ``--dynamodb-table``: **refused** for a version inside the retained log (damage that
  only the entry can prove: say what to check); a newer version is left to the protocol (its
  writer may still be between its temp write and its commit point) while its temp commits
  are younger than a writer takes (:data:`~deltaguard.tools.deltalog.temp_commits.WRITER_WINDOW_MS`);
  an older one is **unproven**: it may be a stranded commit, reported (exit 1) with what to
  give to check it;
* the entry names a temp file that is not there, or no entry at all while the version is
  inside the retained log: **refused**, nothing is copied (a temp commit no entry names may
  be a loser's);
* an entry that is still incomplete while ``N.json`` exists: **completed** (the last step of
  the protocol's recovery).

Versions inside the retained log with neither ``N.json`` nor a temp commit are **gaps**: no
source, reported, never filled.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from deltaguard.logstore.clients import commit_client
from deltaguard.logstore.commit_names import commit_file_name, commit_version
from deltaguard.logstore.errors import LogFileExistsError
from deltaguard.logstore.local_log_store import LocalLogStore
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore
from deltaguard.logstore.s3_location import S3Location
from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.deltalog.listing import LogListing
from deltaguard.tools.deltalog.temp_commits import (
    DynamoDBCheck,
    is_unclaimed,
    pending_note,
    temp_target,
)
from deltaguard.tools.storage import LocalTableStore, S3Options, S3TableStore, TableStore


@dataclass(frozen=True)
class Restore:
    """Copy ``_delta_log/<temp>`` to ``_delta_log/<N>.json``, then complete ``entry``."""

    version: int
    temp: str
    entry: dict[str, Any]


@dataclass
class StrandedPlan:
    restore: list[Restore] = field(default_factory=list)
    complete: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    gaps: list[int] = field(default_factory=list)
    #: temp commits of versions newer than the latest, older than a writer takes, that only
    #: the DynamoDB entry could prove (no ``--dynamodb-table``): one line each
    unproven: list[str] = field(default_factory=list)


def _entries(check: DynamoDBCheck) -> dict[str, dict[str, Any]]:
    """Every entry of the table under each table path, by file name (the first path wins)."""
    ddb = S3DynamoDBLogStore(None, check.client, check.table_name)
    out: dict[str, dict[str, Any]] = {}
    for path in check.table_paths:
        for entry in ddb.entries(path):
            out.setdefault(entry["fileName"], entry)
    return out


def plan_stranded(
    listing: LogListing, check: DynamoDBCheck | None, now_ms: int | None = None
) -> StrandedPlan:
    """What to do about temp commits and gaps in ``listing`` (a full listing), by the rules of
    the module docstring (ages against ``now_ms``, default now). Raises the DynamoDB client's
    errors."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    plan = StrandedPlan()
    temps: dict[int, list[str]] = {}
    for name in listing.temp_files:
        target = temp_target(name)
        version = commit_version(target) if target else None
        if version is not None and version not in listing.commits:
            temps.setdefault(version, []).append(name)
    latest = listing.latest_version
    oldest = min(listing.commits, default=None)
    entries = _entries(check) if check is not None else None
    for version, names in sorted(temps.items()):
        inside = oldest is not None and latest is not None and oldest <= version <= latest
        target = commit_file_name(version)
        if entries is None:
            if inside:
                plan.refused.append(
                    f"version {version}: {target} is missing and temp commit(s) "
                    f"{', '.join(f'{LOG_DIR}/{n}' for n in sorted(names))} may hold it; only "
                    "the DynamoDB entry can prove which: give --dynamodb-table (and "
                    "--dynamodb-table-path if the writers name the table otherwise)"
                )
            else:
                plan.unproven += [
                    f"temp commit {LOG_DIR}/{n} of version {version} (no {target}), "
                    f"{pending_note(n, None)}"
                    for n in sorted(names)
                    if is_unclaimed(n, listing, now_ms)
                ]
            continue
        entry = entries.get(target)
        if entry is None:
            if inside:
                plan.refused.append(
                    f"version {version}: {target} is missing, and no DynamoDB entry in "
                    f"{check.table_name if check else ''} names a temp commit for it (expired, "
                    f"or never committed): {', '.join(sorted(names))} not restored"
                )
            continue
        if entry["tempPath"] in names:
            plan.restore.append(Restore(version, entry["tempPath"], entry))
        else:
            plan.refused.append(
                f"version {version}: the DynamoDB entry for {target} names {entry['tempPath']}, "
                f"which does not exist; the temp commit(s) here ({', '.join(sorted(names))}) are "
                "not provably version "
                f"{version}: not restored"
            )
    if entries is not None:
        for name, entry in sorted(entries.items()):
            version = commit_version(name)
            if not entry["complete"] and version is not None and version in listing.commits:
                plan.complete.append(entry)
    if oldest is not None and latest is not None:
        compacted = {
            v
            for c in listing.compactions
            for v in range(c.version, (c.end_version or c.version) + 1)
        }
        plan.gaps = [
            v
            for v in range(oldest, latest + 1)
            if v not in listing.commits and v not in temps and v not in compacted
        ]
    return plan


def create_exclusive(store: TableStore, s3: S3Options, rel: str, body: bytes) -> bool:
    """Creates ``rel`` (under the table root) holding ``body`` only if it does not exist: True
    if this call created it, False if it already held these bytes (an earlier or concurrent
    restore). Raises :class:`LogFileExistsError` if it holds other bytes, and the stores'
    errors (a bucket that ignores ``If-None-Match`` is refused)."""
    if isinstance(store, LocalTableStore):
        try:
            LocalLogStore().create(str(store.root / rel), body)
            return True
        except LogFileExistsError:
            if (store.root / rel).read_bytes() == body:
                return False
            raise
    assert isinstance(store, S3TableStore)
    conditional = S3ConditionalLogStore(commit_client(s3.endpoint, s3.region, s3.path_style))
    loc = S3Location(store.root.bucket, store.key(rel))
    conditional.ensure_verified(loc)
    if conditional.read_back(loc) == body:
        return False
    conditional.create_settled(loc, body)
    return True


def complete_entry(check: DynamoDBCheck, entry: dict[str, Any]) -> None:
    """Marks a DynamoDB entry complete (its ``N.json`` exists)."""
    S3DynamoDBLogStore(None, check.client, check.table_name).complete(entry)
