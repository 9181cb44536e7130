"""Commit one Delta version from Python through a table's own commit protocol.

:func:`commit_next` writes ``_delta_log/<read_version + 1>.json`` holding ``actions`` through a
:class:`LogStore`: one of deltaguard's Python stores, each the Python twin of a JVM LogStore
whose javadoc holds the protocol's safety argument (not restated here):

* S3 with conditional writes: :class:`deltaguard.logstore.s3_conditional.S3ConditionalLogStore`
  (JVM ``io.deltaguard.logstore.S3ConditionalLogStore``);
* S3 with DynamoDB as the commit authority: :class:`deltaguard.logstore.s3_dynamodb.
  S3DynamoDBLogStore` (Delta's ``S3DynamoDBLogStore``, JVM ``io.deltaguard.logstore.
  S3DynamoDBLogStore``);
* the migration between them: :class:`deltaguard.logstore.s3_transition.S3TransitionLogStore`
  (JVM ``io.deltaguard.logstore.S3TransitionLogStore``);
* local disk: :class:`deltaguard.logstore.local_log_store.LocalLogStore` (``link(2)``).

**Contract.** The commit is atomic: either version N = ``read_version + 1`` holds exactly
these actions, or :class:`VersionTakenError` says another writer's commit holds N (nothing of
ours is in the log then, and never will be). Nothing is ever overwritten. Every ambiguous
outcome (a lost response, a throttle) is settled inside the store by its read-back, never by
a blind retry here; when a store cannot settle it, its
:class:`~deltaguard.logstore.errors.CommitOutcomeUnknownError` passes through (the commit may
have landed as N: check ``deltaguard history``, the message says how). Other storage errors
pass through as the store raises them (OSError and subclasses, botocore errors).

**Left to the caller:** reading the snapshot at ``read_version``, checking that the actions are
valid for the table's protocol, and, on :class:`VersionTakenError`, conflict detection against
the commits that won and the decision to re-plan and call again at a newer version (as Delta's
``OptimisticTransaction`` does). :func:`commit_next` does one attempt at one version.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any
from typing import Protocol as TypingProtocol

import orjson

from deltaguard.logstore.commit_names import commit_file_name
from deltaguard.logstore.errors import LogFileExistsError


class LogStore(TypingProtocol):
    """What committing and reading a log needs of a store (every Python store above)."""

    def write(self, uri: str, lines: Iterable[str], overwrite: bool = False) -> None: ...

    def read(self, uri: str) -> Iterator[str]: ...

    def list_from(self, uri: str) -> Iterator[Any]: ...


class VersionTakenError(LogFileExistsError):
    """Another writer's commit holds ``version`` (our actions are not in the log). Re-read the
    log, check for conflicts, and commit again at a newer version, or give up."""

    def __init__(self, uri: str, version: int) -> None:
        super().__init__(f"{uri}: version {version} was committed by another writer first")
        self.version = version


def log_uri(table_uri: str) -> str:
    """``<table>/_delta_log/`` for a table location (path or URI, a trailing ``/`` ignored)."""
    return table_uri.rstrip("/") + "/_delta_log/"


def commit_lines(actions: Sequence[Mapping[str, Any]]) -> list[str]:
    """The commit file's lines: one JSON action per line, in order. The first action must be
    ``commitInfo`` (in-commit timestamps require it first; every writer puts it there); it gets
    a random ``txnId`` if it has none, which makes the bytes unique per transaction (the stores'
    lost-response read-back compares bytes). Raises ValueError otherwise."""
    if not actions or set(actions[0]) != {"commitInfo"}:
        raise ValueError("the first action of a commit must be its commitInfo")
    first = {"commitInfo": {**actions[0]["commitInfo"]}}
    first["commitInfo"].setdefault("txnId", str(uuid.uuid4()))
    return [orjson.dumps(a).decode("utf-8") for a in (first, *actions[1:])]


def commit_next(
    store: LogStore,
    table_uri: str,
    read_version: int,
    actions: Sequence[Mapping[str, Any]],
) -> int:
    """Commits ``actions`` as version ``read_version + 1`` of the table at ``table_uri`` (as
    the store names it: a local path, ``s3://``, or for DynamoDB stores the ``tablePath`` every
    writer uses, ``s3a://`` for Spark) and returns that version. ``read_version`` -1 creates
    the table (version 0). See the module docstring for what is atomic and what is raised:
    :class:`VersionTakenError` when another writer took the version."""
    version = read_version + 1
    uri = log_uri(table_uri) + commit_file_name(version)
    try:
        store.write(uri, commit_lines(actions), overwrite=False)
    except VersionTakenError:
        raise
    except LogFileExistsError:
        raise VersionTakenError(uri, version) from None
    return version
