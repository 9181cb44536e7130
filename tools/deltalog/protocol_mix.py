"""Which commit protocol wrote each recent commit of a table, from its log and its DynamoDB
commit table: the evidence behind ``deltaguard migrate status`` and audit's
``mixed-commit-protocols`` finding (docs/guides/migration.md).

Each commit is classed by its DynamoDB entry: ``plain-dynamodb`` (an entry without the
transition marker: Delta's store or deltaguard's ``S3DynamoDBLogStore``, or a plain reader that
repaired an entry), ``transition`` (an entry with the marker: ``S3TransitionLogStore``), or
``conditional`` (no entry: a conditional-only writer such as ``S3ConditionalLogStore``, delta-rs
>= 1.6.1 or Trino). Entries expire (DynamoDB TTL on ``expireTime``), so a commit without an
entry only counts as ``conditional`` while its entry could not have expired yet: commits older
than the entries' TTL (estimated from the entries themselves) are left out.

The commit itself has the last word on who wrote it: a commit whose provenance
(:mod:`.provenance`, the one classification) is a conditional-only path (deltaguard's
conditional store by its mark, delta-rs or Trino by ``engineInfo``) is ``conditional`` even
when its version has a DynamoDB entry (the entry is then a DynamoDB writer's that lost the
race for that version; :func:`label_by_content`). The entry stays evidence of its writer:
``entry_kind``.

The unsafe mix: a ``plain-dynamodb`` entry at a version above a ``conditional`` one means a
plain DynamoDB client was still committing after a conditional writer started; its
unconditional copy can overwrite a conditional writer's commit (see the javadoc of
``io.deltaguard.logstore.S3TransitionLogStore``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from deltaguard.logstore.commit_names import commit_version
from deltaguard.logstore.dynamodb_table import TRANSITION_MARKER
from deltaguard.tools.deltalog.listing import LogListing
from deltaguard.tools.deltalog.provenance import CommitPath, conditional_only

#: Default look-back of ``migrate status``: commits older than this are not evidence.
DEFAULT_WINDOW_S = 6 * 3600


class WriterKind(StrEnum):
    PLAIN = "plain-dynamodb"
    TRANSITION = "transition"
    CONDITIONAL = "conditional"


class Phase(StrEnum):
    DYNAMODB = "dynamodb"
    TRANSITION = "transition"
    CONDITIONAL = "conditional"


@dataclass(frozen=True)
class CommitEvidence:
    """One recent commit (or an incomplete entry whose commit file is not there yet)."""

    version: int
    kind: WriterKind
    #: When the commit file was written (or the temp file, for an incomplete entry), epoch ms.
    written_ms: int | None
    #: The DynamoDB entry's ``complete``; None without an entry.
    entry_complete: bool | None = None
    engine_info: str | None = None
    #: What the version's DynamoDB entry says (``plain-dynamodb`` or ``transition``; None
    #: without one): ``kind`` unless the commit's content names another writer.
    entry_kind: WriterKind | None = None

    @property
    def entry_or_kind(self) -> WriterKind:
        return self.entry_kind if self.entry_kind is not None else self.kind

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "kind": str(self.kind),
            "dynamodb_entry": None if self.entry_kind is None else str(self.entry_kind),
            "written_ms": self.written_ms,
            "entry_complete": self.entry_complete,
            "engine_info": self.engine_info,
        }


def label_by_content(
    commit: CommitEvidence, engine_info: str | None, path: CommitPath = CommitPath.UNKNOWN
) -> CommitEvidence:
    """``commit`` with its ``engineInfo``, and relabelled ``conditional`` if its provenance is
    a conditional-only path (``path``: deltaguard's conditional store, delta-rs, Trino; or an
    ``engineInfo`` naming delta-rs or Trino) while its entry said otherwise."""
    from dataclasses import replace

    conditional = conditional_only(engine_info) or path in _CONDITIONAL_ONLY_PATHS
    if conditional and commit.kind is not WriterKind.CONDITIONAL:
        return replace(
            commit, kind=WriterKind.CONDITIONAL, engine_info=engine_info, entry_kind=commit.kind
        )
    return replace(commit, engine_info=engine_info)


_CONDITIONAL_ONLY_PATHS = (CommitPath.DELTAGUARD_CONDITIONAL, CommitPath.CONDITIONAL_PUT)


@dataclass
class ProtocolEvidence:
    """The classified recent commits, oldest first, and what they mean."""

    commits: list[CommitEvidence] = field(default_factory=list)
    window_start_ms: int = 0
    #: The entries' TTL as their expireTime says (seconds), None if no complete entry is seen.
    ttl_estimate_s: int | None = None

    def of_kind(self, kind: WriterKind) -> list[CommitEvidence]:
        return [c for c in self.commits if c.kind is kind]

    def last_of(self, kind: WriterKind) -> CommitEvidence | None:
        found = self.of_kind(kind)
        return found[-1] if found else None

    def unsafe_mix(self) -> tuple[CommitEvidence, CommitEvidence] | None:
        """(the first conditional commit, a plain-DynamoDB entry above it), or None. An entry
        counts even where a conditional writer's commit won its version: a plain DynamoDB
        client was still committing."""
        conditional = self.of_kind(WriterKind.CONDITIONAL)
        if not conditional:
            return None
        first = conditional[0]
        later = [
            c
            for c in self.commits
            if c.entry_or_kind is WriterKind.PLAIN and c.version > first.version
        ]
        return (first, later[-1]) if later else None

    def phase(self) -> Phase:
        """``conditional``: no recent commit has an entry; ``dynamodb``: every recent commit has
        an unmarked entry; ``transition``: anything else (see :meth:`unsafe_mix` first)."""
        kinds = {c.kind for c in self.commits}
        if kinds <= {WriterKind.CONDITIONAL}:
            return Phase.CONDITIONAL
        if kinds == {WriterKind.PLAIN}:
            return Phase.DYNAMODB
        return Phase.TRANSITION

    def to_json(self) -> dict[str, Any]:
        mix = self.unsafe_mix()
        return {
            "phase": str(self.phase()),
            "unsafe_mix": None
            if mix is None
            else {"conditional_version": mix[0].version, "plain_version": mix[1].version},
            "window_start_ms": self.window_start_ms,
            "ttl_estimate_s": self.ttl_estimate_s,
            "commits": [c.to_json() for c in self.commits],
        }


def gather_evidence(
    listing: LogListing,
    entries: Iterable[dict[str, Any]],
    *,
    window_s: float | None = None,
    now_ms: int | None = None,
) -> ProtocolEvidence:
    """Classifies the commits written within ``window_s`` (default: the entries' TTL) of
    ``now_ms``, and never those older than the TTL (their entries may have expired).
    ``entries``: the table's DynamoDB entries (``S3DynamoDBLogStore.entries``, every tablePath
    the writers use). Reads nothing itself."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    by_version: dict[int, dict[str, Any]] = {}
    ttl_estimate: int | None = None
    for entry in entries:
        version = commit_version(entry["fileName"])
        if version is None:
            continue
        by_version[version] = entry
        name = listing.commits.get(version)
        if entry.get("expireTime") is not None and name is not None:
            ttl = int(entry["expireTime"]) - listing.mtime_ms(name) // 1000
            ttl_estimate = ttl if ttl_estimate is None else min(ttl_estimate, ttl)
    horizon_s = window_s if window_s is not None else DEFAULT_WINDOW_S
    if ttl_estimate is not None:
        horizon_s = min(horizon_s, max(ttl_estimate, 0))
    start_ms = now_ms - int(horizon_s * 1000)
    evidence = ProtocolEvidence(window_start_ms=start_ms, ttl_estimate_s=ttl_estimate)
    versions = {v for v, name in listing.commits.items() if listing.mtime_ms(name) >= start_ms}
    if listing.commits:
        versions.add(max(listing.commits))  # the newest commit is always evidence
    versions |= {v for v, e in by_version.items() if not e["complete"] and v not in listing.commits}
    for version in sorted(versions):
        found = by_version.get(version)
        name = listing.commits.get(version)
        written = listing.mtime_ms(name) if name is not None else None
        if found is None:
            if written is not None and written < start_ms:
                continue  # older than the TTL: its entry may have expired
            evidence.commits.append(CommitEvidence(version, WriterKind.CONDITIONAL, written))
            continue
        kind = (
            WriterKind.TRANSITION if found.get("marker") == TRANSITION_MARKER else WriterKind.PLAIN
        )
        evidence.commits.append(CommitEvidence(version, kind, written, bool(found["complete"])))
    return evidence
