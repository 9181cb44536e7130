"""The transition commit protocol in Python, on boto3: the JVM
``io.deltaguard.logstore.S3TransitionLogStore`` step for step (its javadoc holds the safety
argument for every pair of writer kinds and every crash point; docs/guides/migration.md the runbook).

It is the DynamoDB protocol of :mod:`deltaguard.logstore.s3_dynamodb` (same table, item schema,
temp file, conditional PutItem, recovery), except that N.json is only ever created with
``If-None-Match: *`` through :meth:`S3ConditionalLogStore.create_settled` (settled by
read-back), and its entries carry :data:`~deltaguard.logstore.dynamodb_table.MARKER_ATTRIBUTE`.
So it is safe next to plain DynamoDB writers (phase 1) and next to conditional-only writers
(phase 2), never next to both.

``write(uri, lines)`` for ``<table>/_delta_log/N.json``:

0. N.json exists: :class:`LogFileExistsError`.
1. N > 0: an incomplete entry for N-1 is repaired; otherwise N-1.json must exist.
2. The temp file T(N), then the marked entry with ``attribute_not_exists(fileName)``
   (:meth:`S3DynamoDBLogStore.claim`): another writer's entry is :class:`LogFileExistsError`,
   unsettled is :class:`CommitOutcomeUnknownError`.
3. Create N.json conditionally. Our bytes there: success (then the entry is marked complete).
   Another writer's: the entry is marked complete, then :class:`LogFileExistsError` (retry at
   N+1). Anything else: :class:`CommitOutcomeUnknownError` (our entry holds N).

Recovery (:meth:`list_from`, and step 1 of the next writer): the same conditional create from
T(N), then the entry is marked complete, whoever's bytes N.json holds.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from deltaguard.logstore.commit_mark import commit_mark
from deltaguard.logstore.commit_metrics import CommitTally
from deltaguard.logstore.commit_names import commit_file_name, commit_version
from deltaguard.logstore.dynamodb_table import TRANSITION_MARKER
from deltaguard.logstore.errors import CommitOutcomeUnknownError, LogFileExistsError
from deltaguard.logstore.preset_name import PresetName
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.logstore.s3_dynamodb import MissingCommitError, S3DynamoDBLogStore
from deltaguard.logstore.s3_location import S3Location

LOG = logging.getLogger(__name__)


class S3TransitionLogStore(S3DynamoDBLogStore):
    """Delta log writes through DynamoDB whose commit files are created conditionally."""

    preset: PresetName = PresetName.S3_DYNAMODB_TRANSITION

    def __init__(
        self,
        s3: Any,
        dynamodb: Any,
        table_name: str = "delta_log",
        ttl_seconds: int = 86400,
        *,
        max_attempts: int = 10,
        verify_conditional_writes: bool = True,
    ) -> None:
        super().__init__(s3, dynamodb, table_name, ttl_seconds, max_attempts)
        self._conditional = S3ConditionalLogStore(
            s3, max_attempts=max_attempts, verify_conditional_writes=verify_conditional_writes
        )

    def write(self, uri: str, lines: Iterable[str], overwrite: bool = False) -> None:
        loc = S3Location.parse(uri)
        version = commit_version(loc.name)
        if overwrite or version is None:
            self._conditional.write(uri, lines, overwrite)
            return
        body = "".join(line + "\n" for line in lines).encode("utf-8")
        if self._conditional.verify_conditional_writes:
            self._conditional.ensure_verified(loc)
        with self.metrics.observe(self.preset.value, uri, version) as tally:
            self._commit_version(uri, loc, body, version, tally)

    def _commit_version(
        self, uri: str, loc: S3Location, body: bytes, version: int, tally: CommitTally
    ) -> None:
        """Steps 0-4 above for version ``version``, reporting to ``tally``."""
        if self._conditional.read_back(loc) is not None:
            raise LogFileExistsError(uri)
        table_uri = uri.rsplit("/_delta_log/", 1)[0]
        self._check_previous(table_uri, loc, version)
        entry: dict[str, Any] = {
            "tablePath": table_uri,
            "fileName": loc.name,
            "tempPath": f".tmp/{loc.name}.{uuid.uuid4()}",
            "complete": False,
            "marker": TRANSITION_MARKER,
        }
        temp = S3Location.parse(f"{table_uri}/_delta_log/{entry['tempPath']}")
        self.s3.put_object(Bucket=temp.bucket, Key=temp.key, Body=body)
        self.claim(entry, self.max_attempts, tally=tally)
        try:
            self._conditional.create_settled(loc, body, mark=commit_mark(self.preset), tally=tally)
        except LogFileExistsError:
            self._mark_complete(entry)
            raise
        except OSError as exc:
            if isinstance(exc, CommitOutcomeUnknownError):
                raise
            raise CommitOutcomeUnknownError(
                uri, f"our DynamoDB entry holds this version, but creating the file failed: {exc}"
            ) from exc
        self._mark_complete(entry)

    def _check_previous(self, table_uri: str, loc: S3Location, version: int) -> None:
        if version == 0:
            entry = self._get(table_uri, loc.name)
            if entry is not None and entry["complete"]:
                raise MissingCommitError(
                    f"Old entries for table {table_uri} still exist in the external log store"
                )
            return
        prev_name = commit_file_name(version - 1)
        prev = self._get(table_uri, prev_name)
        if prev is not None and not prev["complete"]:
            self._repair(table_uri, prev)
        elif (
            self._conditional.read_back(S3Location(loc.bucket, f"{loc.parent_key}/{prev_name}"))
            is None
        ):
            raise MissingCommitError(
                f"previous commit {prev_name} of {table_uri} doesn't exist "
                "on the file system but does in the external log store"
            )

    def _mark_complete(self, entry: dict[str, Any]) -> None:
        try:
            self._put(
                {**entry, "complete": True, "expireTime": int(time.time()) + self.ttl_seconds}, True
            )
        except (ClientError, BotoCoreError, OSError) as exc:  # the commit is decided already
            LOG.info("could not mark %s complete (left to recovery): %s", entry["fileName"], exc)

    def _repair(self, table_uri: str, entry: dict[str, Any]) -> None:
        """Creates N.json from T(N) conditionally, then marks the entry complete (also when
        another writer's N.json is there). OSError if neither T(N) nor N.json exists."""
        dst = S3Location.parse(f"{table_uri}/_delta_log/{entry['fileName']}")
        temp = S3Location.parse(f"{table_uri}/_delta_log/{entry['tempPath']}")
        body = self._conditional.read_back(temp)
        if body is not None:
            try:
                self._conditional.create_settled(dst, body, mark=commit_mark(self.preset))
                LOG.info("repaired %s from %s", dst.uri(), entry["tempPath"])
            except LogFileExistsError:
                LOG.info("%s holds another writer's commit; completing the entry", dst.uri())
        elif self._conditional.read_back(dst) is None:
            raise OSError(
                f"cannot repair {dst.uri()}: neither it nor its temp file {entry['tempPath']} "
                f"exists (DynamoDB {self.table_name})"
            )
        self._put(
            {**entry, "complete": True, "expireTime": int(time.time()) + self.ttl_seconds}, True
        )
