"""The table's own commit protocol, as a store :func:`deltaguard.tools.deltalog.commit.
commit_next` writes through.

A local table commits by ``link(2)`` (:class:`~deltaguard.logstore.local_log_store.
LocalLogStore`). An S3 table commits the way its writers do, which the files cannot tell, so
``--commit-protocol`` says it (docs/guides/repair.md):

``conditional``
    ``If-None-Match: *`` creates (:class:`~deltaguard.logstore.s3_conditional.
    S3ConditionalLogStore`), checked once per bucket: a store that ignores the condition is
    refused.
``dynamodb``
    the DynamoDB LogStore (:class:`~deltaguard.logstore.s3_dynamodb.S3DynamoDBLogStore`), under
    the ``tablePath`` its writers use (the one of ``--dynamodb-table-path`` / TABLE as s3a://
    and s3:// that already has entries; else the first).
``transition``
    the migration store (:class:`~deltaguard.logstore.s3_transition.S3TransitionLogStore`).
"""

from __future__ import annotations

from dataclasses import dataclass

from deltaguard.logstore.clients import commit_client
from deltaguard.logstore.local_log_store import LocalLogStore
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore
from deltaguard.logstore.s3_transition import S3TransitionLogStore
from deltaguard.tools.deltalog.commit import LogStore
from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
from deltaguard.tools.repair.modes import CommitProtocol
from deltaguard.tools.storage import LocalTableStore, S3Options, TableStore


class CommitSettingError(ValueError):
    """The commit options do not fit the table (exit 2, nothing written)."""


@dataclass(frozen=True)
class Committer:
    """A store and the table's location as that store names it."""

    store: LogStore
    table_uri: str
    protocol: str


def dynamodb_table_path(check: DynamoDBCheck) -> str:
    """The ``tablePath`` the DynamoDB writers use: the first of ``check.table_paths`` with an
    entry in the table, else the first."""
    ddb = S3DynamoDBLogStore(None, check.client, check.table_name)
    for path in check.table_paths:
        if ddb.entries(path):
            return path
    return check.table_paths[0]


def open_committer(
    table: TableStore,
    protocol: CommitProtocol | None,
    s3: S3Options,
    dynamodb: DynamoDBCheck | None,
) -> Committer:
    """The committer for ``table`` (see the module docstring). Raises
    :class:`CommitSettingError` for a protocol that does not fit: one for a local table, or a
    DynamoDB one without ``--dynamodb-table``."""
    if isinstance(table, LocalTableStore):
        if protocol not in (None, CommitProtocol.CONDITIONAL):
            raise CommitSettingError(
                f"--commit-protocol {protocol} is for S3 tables; a local table commits by "
                "create-exclusive (link)"
            )
        return Committer(LocalLogStore(), str(table.root), "local create-exclusive")
    protocol = protocol or CommitProtocol.CONDITIONAL
    client = commit_client(s3.endpoint, s3.region, s3.path_style)
    if protocol is CommitProtocol.CONDITIONAL:
        return Committer(S3ConditionalLogStore(client), table.uri, protocol.value)
    if dynamodb is None:
        raise CommitSettingError(
            f"--commit-protocol {protocol} needs --dynamodb-table (the writers' DynamoDB table)"
        )
    cls = S3DynamoDBLogStore if protocol is CommitProtocol.DYNAMODB else S3TransitionLogStore
    store = cls(client, dynamodb.client, dynamodb.table_name)
    return Committer(store, dynamodb_table_path(dynamodb), protocol.value)
