"""Which writer committed each version and through which commit path: the one classification
``history``, ``audit`` (``unsafe-commit-path``) and ``migrate status`` share
(docs/design/audit.md, "Provenance").

Evidence per commit, all from reads the commands already do (no extra request per commit):

* the provenance mark (:mod:`deltaguard.logstore.commit_mark`) in the user metadata of the
  commit object, from the same GetObject that reads the commit: a deltaguard store, by its
  preset;
* ``commitInfo.engineInfo``: the writer (:class:`Writer`); delta-rs and Trino only commit with
  conditional PUTs;
* for a Spark commit without a mark: Delta's own DynamoDB store leaves its temp commit
  ``_delta_log/.tmp/N.json.<uuid>`` (and a DynamoDB entry, when the caller read the table's
  entries); without either, Delta's default ``S3SingleDriverLogStore`` wrote it.

Local disk has no object metadata: every commit path there is ``unknown`` (said, not guessed).
A commit written by an older deltaguard (before the mark) reads as Delta's own store would.

:func:`unsafe_writers` applies the rule of the ``unsafe-commit-path`` finding: see its
docstring.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from deltaguard.logstore.commit_mark import CommitMark, parse_commit_mark
from deltaguard.logstore.preset_name import PresetName

#: ``engineInfo`` prefixes (lowercase) of writers that commit with conditional creates only,
#: never through DynamoDB (delta-rs writes ``delta-rs:<version>``, Trino ``Trino/<version>``).
CONDITIONAL_ONLY_WRITERS = ("delta-rs", "trino")

_TEMP_COMMIT = re.compile(r"^\.tmp/(\d{20})\.json\.")


class Writer(StrEnum):
    """The engine that wrote a commit, from its ``engineInfo``."""

    SPARK = "spark"
    DELTA_RS = "delta-rs"
    TRINO = "trino"
    #: an ``engineInfo`` naming another engine
    OTHER = "other"
    #: no ``engineInfo`` (or the commit could not be read)
    UNKNOWN = "unknown"


class CommitPath(StrEnum):
    """How a commit was made mutually exclusive (or not)."""

    #: deltaguard's conditional store (mark ``s3-conditional/...``): PUT with If-None-Match
    DELTAGUARD_CONDITIONAL = "deltaguard-conditional"
    #: deltaguard's DynamoDB store (mark ``s3-dynamodb/...``): DynamoDB, then a plain copy
    DELTAGUARD_DYNAMODB = "deltaguard-dynamodb"
    #: deltaguard's transition store (mark ``s3-dynamodb-transition/...``)
    DELTAGUARD_TRANSITION = "deltaguard-transition"
    #: delta-rs or Trino (``engineInfo``): PUT with If-None-Match
    CONDITIONAL_PUT = "conditional-put"
    #: Delta's own S3DynamoDBLogStore: an unmarked Spark commit with a temp commit or an entry
    DELTA_DYNAMODB = "delta-dynamodb"
    #: Delta's default S3SingleDriverLogStore: an unmarked Spark commit with neither
    SINGLE_DRIVER = "single-driver"
    #: nothing to tell by: local disk (no object metadata), an unreadable commit, another engine
    UNKNOWN = "unknown"

    @property
    def put_if_absent(self) -> bool:
        """Whether the commit file was created with a put-if-absent (If-None-Match)."""
        return self in _PUT_IF_ABSENT

    @property
    def dynamodb_protocol(self) -> bool:
        """Whether the path is the plain DynamoDB protocol (a check, then an unconditional
        copy to N.json)."""
        return self in (CommitPath.DELTAGUARD_DYNAMODB, CommitPath.DELTA_DYNAMODB)


_PUT_IF_ABSENT = (
    CommitPath.DELTAGUARD_CONDITIONAL,
    CommitPath.DELTAGUARD_TRANSITION,
    CommitPath.CONDITIONAL_PUT,
)
_PATH_OF_MARK = {
    PresetName.S3_CONDITIONAL: CommitPath.DELTAGUARD_CONDITIONAL,
    PresetName.S3_DYNAMODB: CommitPath.DELTAGUARD_DYNAMODB,
    PresetName.S3_DYNAMODB_TRANSITION: CommitPath.DELTAGUARD_TRANSITION,
}


def writer_of(engine_info: str | None) -> Writer:
    """The writer an ``engineInfo`` names: Spark writes ``Apache-Spark/<v> Delta-Lake/<v>``,
    delta-rs ``delta-rs:<v>``, Trino ``Trino/<v>``."""
    info = (engine_info or "").strip().lower()
    if not info:
        return Writer.UNKNOWN
    if info.startswith("delta-rs"):
        return Writer.DELTA_RS
    if info.startswith("trino"):
        return Writer.TRINO
    if info.startswith("apache-spark") or "delta-lake/" in info:
        return Writer.SPARK
    return Writer.OTHER


def conditional_only(engine_info: str | None) -> bool:
    """Whether ``engineInfo`` names a writer that only commits with conditional creates."""
    return (engine_info or "").strip().lower().startswith(CONDITIONAL_ONLY_WRITERS)


@dataclass(frozen=True)
class Provenance:
    """Who committed a version and how. ``mark`` is the parsed provenance mark, if any."""

    writer: Writer
    path: CommitPath
    mark: CommitMark | None = None

    @property
    def label(self) -> str:
        """The writer as findings name it: ``spark via single-driver``."""
        return f"{self.writer} via {self.path}"


def classify(
    engine_info: str | None,
    metadata: Mapping[str, str] | None,
    *,
    temp_commit: bool = False,
    dynamodb_entry: bool = False,
) -> Provenance:
    """One commit's provenance. ``metadata``: its object's user metadata from the GET that read
    it (None where there is none: local disk, or the read failed); ``temp_commit``: a
    ``_delta_log/.tmp/N.json.<uuid>`` of its version is listed; ``dynamodb_entry``: its version
    has a DynamoDB entry (only when the caller read the entries)."""
    writer = writer_of(engine_info)
    mark = parse_commit_mark(dict(metadata)) if metadata is not None else None
    if mark is not None:
        return Provenance(writer, _PATH_OF_MARK[mark.preset], mark)
    if writer in (Writer.DELTA_RS, Writer.TRINO):
        return Provenance(writer, CommitPath.CONDITIONAL_PUT)
    if metadata is None or writer is not Writer.SPARK:
        return Provenance(writer, CommitPath.UNKNOWN)
    if temp_commit or dynamodb_entry:
        return Provenance(writer, CommitPath.DELTA_DYNAMODB)
    return Provenance(writer, CommitPath.SINGLE_DRIVER)


def temp_commit_versions(temp_files: Iterable[str]) -> set[int]:
    """The versions of the temp commits (``.tmp/N.json.<uuid>``, relative to ``_delta_log``)
    in a listing."""
    found = (_TEMP_COMMIT.match(name) for name in temp_files)
    return {int(m.group(1)) for m in found if m}


@dataclass(frozen=True)
class UnsafeWriter:
    """A writer that committed without a put-if-absent while another writer was committing:
    those versions (oldest first), the other writers seen, and the preset to move it to."""

    writer: Writer
    path: CommitPath
    versions: tuple[int, ...]
    others: tuple[str, ...]
    preset: PresetName

    @property
    def label(self) -> str:
        return f"{self.writer} via {self.path}"


@dataclass(frozen=True)
class SingleDriverHistory:
    """Single-driver commits that are not unsafe: ``alone`` (no other writer) or all older
    than every other writer's commits (a finished move to another store)."""

    versions: tuple[int, ...]
    alone: bool


def _groups(commits: Mapping[int, Provenance]) -> dict[tuple[Writer, CommitPath], list[int]]:
    groups: dict[tuple[Writer, CommitPath], list[int]] = {}
    for version in sorted(commits):
        p = commits[version]
        if p.path is not CommitPath.UNKNOWN:
            groups.setdefault((p.writer, p.path), []).append(version)
    return groups


def _rivals(
    groups: dict[tuple[Writer, CommitPath], list[int]], key: tuple[Writer, CommitPath]
) -> list[int]:
    """The versions of the writers ``key``'s path is unsafe next to."""
    if key[1] is CommitPath.SINGLE_DRIVER:
        return [v for k, vs in groups.items() if k != key for v in vs]
    if key[1].dynamodb_protocol:
        return [
            v
            for k, vs in groups.items()
            if k[1].put_if_absent and k[1] is not CommitPath.DELTAGUARD_TRANSITION
            for v in vs
        ]
    return []


def unsafe_writers(commits: Mapping[int, Provenance]) -> list[UnsafeWriter]:
    """The writers of ``commits`` (version -> provenance; ``unknown`` paths left out) that
    committed without a put-if-absent after a writer they are unsafe next to had started. A
    writer is an engine and a commit path (two Spark drivers on one store are
    indistinguishable). The versions named are those after the other writer's first commit:

    * the single-driver store, next to any other writer (its commit overwrites a concurrent
      one): fix ``s3-conditional``;
    * a plain DynamoDB-protocol writer (Delta's or deltaguard's ``s3-dynamodb``), next to a
      conditional-only writer (its copy to N.json is not atomic against a conditional PUT):
      fix ``s3-dynamodb-transition``. Transition writers are safe next to both, so a
      migration's phases (docs/guides/migration.md) never raise it.

    Commits older than every rival's are history (a finished move), not a finding.
    """
    groups = _groups(commits)
    labels = {key: f"{key[0]} via {key[1]}" for key in groups}
    found: list[UnsafeWriter] = []
    for key, versions in groups.items():
        rivals = _rivals(groups, key)
        late = tuple(v for v in versions if rivals and v > min(rivals))
        if not late:
            continue
        preset = (
            PresetName.S3_CONDITIONAL
            if key[1] is CommitPath.SINGLE_DRIVER
            else PresetName.S3_DYNAMODB_TRANSITION
        )
        others = tuple(labels[k] for k in groups if k != key)
        found.append(UnsafeWriter(key[0], key[1], late, others, preset))
    return found


def single_driver_history(commits: Mapping[int, Provenance]) -> SingleDriverHistory | None:
    """The info case: single-driver commits that :func:`unsafe_writers` does not name, because
    their writer is the only one (``alone``) or they all precede every other writer's."""
    groups = _groups(commits)
    versions = [v for k, vs in groups.items() if k[1] is CommitPath.SINGLE_DRIVER for v in vs]
    if not versions or any(u.path is CommitPath.SINGLE_DRIVER for u in unsafe_writers(commits)):
        return None
    return SingleDriverHistory(tuple(sorted(versions)), alone=len(groups) == 1)


def version_ranges(versions: Iterable[int]) -> str:
    """``3, 5-7, 9``: sorted versions with consecutive runs joined."""
    out: list[str] = []
    run: list[int] = []
    for v in sorted(set(versions)):
        if run and v == run[-1] + 1:
            run.append(v)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [v]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ", ".join(out)
