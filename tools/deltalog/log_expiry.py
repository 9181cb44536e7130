"""Which files of ``_delta_log`` a log cleanup may remove, from one listing: Delta's own
metadata cleanup rule (Spark's ``MetadataCleanup``) plus the leftovers no Delta writer ever
removes. The one rule ``log-cleanup`` plans with (:mod:`deltaguard.tools.orphans.log_cleanup`
adds what needs reads: checkpoint reliability, sidecars) and ``audit`` estimates with.

**Delta's rule** (``MetadataCleanup.cleanUpExpiredLogs``):

* The cut-off is ``now - delta.logRetentionDuration`` (default 30 days) **truncated to the UTC
  day** (``truncateDate(..., DAY)``): files are kept until the next calendar day.
* Time is the files' **modification time** (the listing's), never ``commitInfo.timestamp``,
  made monotonic as Delta's ``BufferingLogDeletionIterator`` makes it: over the commit,
  checksum and checkpoint files in name order, a file of a higher version whose time is not
  above the previous file's gets that time + 1 ms.
* Only files **below a checkpoint** are removed, as that iterator removes them: it meets the
  checkpoints in name order, and at each (a complete, non-empty one whose time is above the
  previous file's: one whose time it adjusts is passed over) removes every file before
  it when the last file before it (the newest file of the previous version) is at or before
  the cut-off and below the checkpoint ``_last_checkpoint`` names. The truncation checkpoint
  is the newest checkpoint where it would, every earlier one having done so too, that the
  caller finds reliable (``reliable``: it reads it; an unreliable one is passed over for an
  older one). Every version from it on stays readable (the checkpoint plus the commits after
  it); every version below it is removed whole (its commit, checksum and checkpoint files),
  and compactions that end below it (older than the cut-off) go with them. Without a readable
  ``_last_checkpoint`` Delta removes nothing; deltaguard takes the newest complete checkpoint
  as the one it would name.
* ``delta.enableExpiredLogCleanup = false`` turns it off: no version is removed.
* ``checkpointProtection`` (writer feature): no checkpoint before
  ``delta.requireCheckpointProtectionBeforeVersion`` may be removed unless everything before
  it goes in one go; we remove versions only when the truncation checkpoint is at or above it.
* Coordinated commits' ``_commits/N.<uuid>.json`` once backfilled (``N.json`` exists) and older
  than the cut-off.

**What Delta never removes** (older than the cut-off): DynamoDB temp commits the log protocol
no longer needs (:func:`~deltaguard.tools.deltalog.temp_commits.judge_temp`: ``N.json`` exists
and the DynamoDB entry is complete or expired; without the DynamoDB table such a file is kept,
a pending or stranded one always is), other log stores' temp files, and the parts of
incomplete multi-part checkpoints. ``_staged_commits/`` belong to the catalog: never touched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from deltaguard.tools.deltalog.checkpoint import CheckpointRef
from deltaguard.tools.deltalog.listing import LogListing
from deltaguard.tools.deltalog.names import LogFileKind, hadoop_checksum_owner
from deltaguard.tools.deltalog.temp_commits import (
    TEMP_DIR,
    EntryState,
    TempState,
    TempVerdict,
    judge_temp,
)
from deltaguard.tools.storage import FileInfo

DAY_MS = 86_400_000
CLEANUP_ENABLED_KEY = "delta.enableExpiredLogCleanup"
PROTECTION_FEATURE = "checkpointProtection"
PROTECTION_KEY = "delta.requireCheckpointProtectionBeforeVersion"
COMMITS_DIR = "_commits"

#: The kinds of ``_delta_log`` objects the audit's cost table counts, in its order.
COST_KINDS = (
    "commits",
    "checksums",
    "checkpoints",
    "sidecars",
    "temp_commits",
    "compactions",
    "other",
)


def day_cutoff_ms(now_ms: int, retention_ms: int) -> int:
    """Delta's cut-off: ``now - retention`` truncated down to the UTC midnight."""
    at = now_ms - retention_ms
    day = datetime.fromtimestamp(at / 1000, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return int(day.timestamp() * 1000)


@dataclass(frozen=True)
class Expired:
    """One removable file: ``name`` relative to ``_delta_log``, its kind (``commit``,
    ``checksum``, ``checkpoint``, ``compaction``, ``backfilled-commit``, ``temp-commit``,
    ``temp-file``, ``checkpoint-part``), size, modification time and why."""

    name: str
    kind: str
    size: int
    mtime_ms: int
    reason: str


@dataclass
class LogExpiry:
    """What a log cleanup may remove: ``files`` (oldest versions first), the checkpoint every
    retained version starts from (``truncation_version``, None: no version is removed), the
    DynamoDB temp commits kept with their verdicts, and notes saying why versions are kept."""

    cutoff_ms: int
    truncation_version: int | None
    files: list[Expired] = field(default_factory=list)
    kept_temp: list[tuple[str, TempVerdict]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def stranded(self) -> list[tuple[str, TempVerdict]]:
        """The kept temp commits that are damage (``N.json`` of a retained version missing)."""
        return [(n, v) for n, v in self.kept_temp if v.state is TempState.STRANDED]


def _delta_listing(listing: LogListing) -> list[tuple[str, int, int | None, bool]]:
    """The files Delta's cleanup lists (commits, checksums, checkpoint files), in name order:
    (name, version, parts of a multi-part checkpoint, whether it is a checkpoint file)."""
    files: list[tuple[str, int, int | None, bool]] = []
    files += [(n, v, None, False) for v, n in listing.commits.items()]
    files += [(n, v, None, False) for v, n in listing.checksums.items()]
    for ref in [*listing.checkpoints, *listing.incomplete_checkpoints]:
        multipart = ref.kind is LogFileKind.MULTIPART_CHECKPOINT
        for name in ref.files:
            parts = int(name.split(".")[-2]) if multipart else None
            files.append((name, ref.version, parts, True))
    return sorted(files)


def delta_flushes(listing: LogListing, cutoff_ms: int, max_version: int) -> dict[int, bool]:
    """Delta's ``BufferingLogDeletionIterator`` over ``listing`` (the module docstring):
    for each checkpoint version it meets after the first file, whether it removes every file
    before that checkpoint (the first checkpoint file met at a version decides)."""
    out: dict[int, bool] = {}
    last: tuple[int, int] | None = None  # the previous file: version, adjusted time
    buffered: tuple[int, int] | None = None  # the last file buffered for deletion
    parts_seen: dict[tuple[int, int], int] = {}
    for name, version, parts, is_checkpoint in _delta_listing(listing):
        info = listing.files[name]
        at = info.mtime_ms
        if last is None:
            last = buffered = (version, at)
            continue
        if last[0] < version and last[1] >= at:
            at = last[1] + 1
            buffered = (version, at)
        elif is_checkpoint and info.size > 0:
            if parts is not None:
                key = (version, parts)
                parts_seen[key] = parts_seen.get(key, 0) + 1
            if parts is None or parts_seen[(version, parts)] == parts:
                flush = buffered is not None and buffered[1] <= cutoff_ms
                out.setdefault(
                    version, flush and buffered is not None and buffered[0] <= max_version
                )
                buffered = (version, at)
        else:
            buffered = (version, at)
        last = (version, at)
    return out


def truncation_checkpoint(
    listing: LogListing,
    cutoff_ms: int,
    reliable: Callable[[CheckpointRef], bool],
    last_checkpoint_version: int | None,
) -> int | None:
    """The truncation checkpoint's version (the module docstring), or None if there is none.
    Without ``last_checkpoint_version`` the newest complete checkpoint stands for it."""
    ceiling = last_checkpoint_version
    if ceiling is None:
        ceiling = max((r.version for r in listing.checkpoints), default=None)
    if ceiling is None:
        return None
    flushes = delta_flushes(listing, cutoff_ms, ceiling - 1)
    removable: list[int] = []
    for version in sorted(flushes):
        if not flushes[version]:
            break
        removable.append(version)
    for version in reversed(removable):
        same = [r for r in listing.checkpoints if r.version == version]
        if version <= ceiling and any(reliable(r) for r in same):
            return version
    return None


def _version_blocked(
    configuration: Mapping[str, str], writer_features: frozenset[str], truncation: int
) -> str | None:
    """Why no version may be removed (a table property or checkpoint protection), or None."""
    if configuration.get(CLEANUP_ENABLED_KEY, "true").strip().lower() == "false":
        return f"{CLEANUP_ENABLED_KEY} is false: the table keeps every version (Delta's rule)"
    if PROTECTION_FEATURE in writer_features:
        raw = configuration.get(PROTECTION_KEY, "0")
        try:
            protected = int(raw)
        except ValueError:
            return f"{PROTECTION_KEY} = {raw!r} is not a version: every version is kept"
        if truncation < protected:
            return (
                f"checkpointProtection: versions before {protected} may only be removed in one "
                f"go, and the newest expired checkpoint is at version {truncation}: every "
                "version is kept"
            )
    return None


def staged_version(name: str) -> int | None:
    """The version of a ``_commits/N.<uuid>.json`` name, or None for any other name."""
    folder, _, base = name.partition("/")
    head = base.split(".", 1)[0]
    if folder != COMMITS_DIR or not base.endswith(".json") or not head.isdigit():
        return None
    return int(head)


def plan_expiry(
    listing: LogListing,
    configuration: Mapping[str, str],
    writer_features: frozenset[str],
    cutoff_ms: int,
    entries: Mapping[str, EntryState] | None,
    *,
    reliable: Callable[[CheckpointRef], bool] = lambda _ref: True,
    last_checkpoint_version: int | None = None,
) -> LogExpiry:
    """The module docstring's rule over one complete listing of ``_delta_log``."""
    out = LogExpiry(cutoff_ms, None)
    found = truncation_checkpoint(listing, cutoff_ms, reliable, last_checkpoint_version)
    if found is None:
        out.notes.append(
            "no readable complete checkpoint whose previous version is older than the cut-off: "
            "every version is kept (only files below such a checkpoint are removed, so every "
            "retained version stays readable)"
        )
    elif (blocked := _version_blocked(configuration, writer_features, found)) is not None:
        out.notes.append(blocked)
    else:
        out.truncation_version = found
    t = out.truncation_version

    def add(name: str, kind: str, reason: str) -> None:
        info = listing.files.get(name) or listing.temp_infos.get(name)
        info = info or listing.staged_infos.get(name)
        if info is not None:
            out.files.append(Expired(name, kind, info.size, info.mtime_ms, reason))

    if t is not None:
        below = f"below the checkpoint at version {t}, older than the cut-off"
        by_version: dict[int, list[tuple[str, str]]] = {}
        for v, name in listing.commits.items():
            by_version.setdefault(v, []).append((name, "commit"))
        for v, name in listing.checksums.items():
            by_version.setdefault(v, []).append((name, "checksum"))
        for ref in listing.checkpoints:
            for name in ref.files:
                by_version.setdefault(ref.version, []).append((name, "checkpoint"))
        for v in sorted(by_version):
            if v >= t:
                break
            for name, kind in by_version[v]:
                add(name, kind, f"version {v}: {below}")
        for c in sorted(listing.compactions, key=lambda c: c.version):
            if c.end_version is not None and c.end_version < t:
                if listing.files[c.name].mtime_ms <= cutoff_ms:
                    add(c.name, "compaction", f"versions {c.version}-{c.end_version}: {below}")
    for name in listing.staged_commits:
        staged = staged_version(name)
        info = listing.staged_infos.get(name)
        if staged is None or info is None or staged not in listing.commits:
            continue
        if info.mtime_ms > cutoff_ms:
            continue
        v = staged
        add(
            name, "backfilled-commit", f"backfilled to {listing.commits[v]}, older than the cut-off"
        )
    for name in listing.temp_files:
        info = listing.files.get(name) or listing.temp_infos.get(name)
        verdict = judge_temp(name, listing, entries, retained_from=t)
        if verdict is not None and verdict.state is not TempState.GARBAGE:
            out.kept_temp.append((name, verdict))
        elif info is not None and info.mtime_ms < cutoff_ms:
            kind = "temp-commit" if verdict is not None else "temp-file"
            add(name, kind, verdict.reason if verdict else "log store temp file")
    for ref in listing.incomplete_checkpoints:
        for name in ref.files:
            if listing.files[name].mtime_ms < cutoff_ms:
                add(name, "checkpoint-part", "part of an incomplete multi-part checkpoint")
    return out


def log_cost(
    listing: LogListing, sidecars: Sequence[FileInfo] | None = None
) -> dict[str, dict[str, int] | None]:
    """Objects and bytes in ``_delta_log`` by :data:`COST_KINDS` from one listing (``_commits/``
    and ``_staged_commits/`` count as other) and the listing of ``_delta_log/_sidecars/``
    (``sidecars``; its Hadoop ``.crc`` files count as other); without it ``sidecars`` is None
    (not listed, not counted)."""
    out: dict[str, dict[str, int] | None] = {k: {"objects": 0, "bytes": 0} for k in COST_KINDS}
    if sidecars is None:
        out["sidecars"] = None
    else:
        for info in sidecars:
            hadoop = hadoop_checksum_owner(info.path.rpartition("/")[2]) is not None
            bucket = out["other" if hadoop else "sidecars"]
            assert bucket is not None
            bucket["objects"] += 1
            bucket["bytes"] += info.size
    commits = {n: "commits" for n in listing.commits.values()}
    commits.update({n: "checksums" for n in listing.checksums.values()})
    commits.update({c.name: "compactions" for c in listing.compactions})
    for r in [*listing.checkpoints, *listing.incomplete_checkpoints]:
        commits.update({f: "checkpoints" for f in r.files})
    infos = [*listing.files.items(), *listing.temp_infos.items(), *listing.staged_infos.items()]
    for name, info in infos:
        if name.startswith(TEMP_DIR + "/"):
            kind = "temp_commits"
        else:
            kind = commits.get(name, "other")
        bucket = out[kind]
        assert bucket is not None
        bucket["objects"] += 1
        bucket["bytes"] += info.size
    return out
