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
    """A writer that committed without a put-if-absent next to another writer: its versions
    (oldest first), the other writers seen, and the preset to move it to."""

    writer: Writer
    path: CommitPath
    versions: tuple[int, ...]
    others: tuple[str, ...]
    preset: PresetName

    @property
    def label(self) -> str:
        return f"{self.writer} via {self.path}"


@dataclass(frozen=True)
class LoneSingleDriver:
    """Every classified commit is one Spark writer's through the single-driver store."""

    versions: tuple[int, ...]


def _group(commits: Mapping[int, Provenance]) -> dict[tuple[Writer, CommitPath], list[int]]:
    groups: dict[tuple[Writer, CommitPath], list[int]] = {}
    for version in sorted(commits):
        p = commits[version]
        if p.path is not CommitPath.UNKNOWN:
            groups.setdefault((p.writer, p.path), []).append(version)
    return groups


def unsafe_writers(commits: Mapping[int, Provenance]) -> list[UnsafeWriter]:
    """The writers of ``commits`` (version -> provenance; ``unknown`` paths left out) that
    committed without a put-if-absent next to another writer. A writer is an engine and a
    commit path (two Spark drivers on one store are indistinguishable). The rule:

    * the single-driver store next to any other writer (its overwrite-on-race is unsafe with
      anything else): every single-driver version is named;
    * a plain DynamoDB-protocol writer (Delta's or deltaguard's ``s3-dynamodb``) next to a
      put-if-absent writer, when a DynamoDB-protocol commit is newer than the first
      put-if-absent one (older ones are a finished migration: phase 1 ended before
      conditional writers started, docs/guides/migration.md). Transition writers are safe with
      both, so a migration's transition phases never raise it.
    """
    groups = _group(commits)
    found: list[UnsafeWriter] = []
    labels = {key: f"{key[0]} via {key[1]}" for key in groups}
    for key, versions in groups.items():
        writer, path = key
        others = tuple(labels[k] for k in groups if k != key)
        if path is CommitPath.SINGLE_DRIVER and others:
            found.append(
                UnsafeWriter(writer, path, tuple(versions), others, PresetName.S3_CONDITIONAL)
            )
        elif path.dynamodb_protocol:
            conditional = [
                v for k, vs in groups.items() if k[1].put_if_absent and k[1] is not
                CommitPath.DELTAGUARD_TRANSITION for v in vs
            ]  # fmt: skip
            if conditional and versions[-1] > min(conditional):
                found.append(
                    UnsafeWriter(
                        writer,
                        path,
                        tuple(versions),
                        others,
                        PresetName.S3_DYNAMODB_TRANSITION,
                    )
                )
    return found


def lone_single_driver(commits: Mapping[int, Provenance]) -> LoneSingleDriver | None:
    """The info case: every commit with a known path is one writer's through the single-driver
    store (safe only while that writer stays alone)."""
    groups = _group(commits)
    if len(groups) == 1:
        ((_writer, path), versions) = next(iter(groups.items()))
        if path is CommitPath.SINGLE_DRIVER:
            return LoneSingleDriver(tuple(versions))
    return None


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
