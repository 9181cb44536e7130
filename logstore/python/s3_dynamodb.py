"""The DynamoDB commit protocol in Python, on boto3: the same protocol and item schema as
Delta's S3DynamoDBLogStore and deltaguard's JVM ``io.deltaguard.logstore.S3DynamoDBLogStore``,
so Python and Spark writers can commit to one table through one DynamoDB table.

``write(uri, lines, overwrite=False)`` for ``<table>/_delta_log/N.json``:

0. N.json exists: :class:`LogFileExistsError`.
1. N > 0: the entry for N-1 is repaired if incomplete; otherwise N-1.json must exist.
2. Write the temp file T(N) = ``_delta_log/.tmp/N.json.<uuid>``, then PutItem (tablePath,
   N.json, T(N), complete="false") with ``attribute_not_exists(fileName)``: the commit point.
   A failed condition against an entry naming our own T(N) (a lost response) is success;
   against another entry, :class:`LogFileExistsError`.
3. Copy T(N) to N.json, 4. mark the entry complete with ``expireTime = now + ttl``. Errors here
   are logged and left to recovery: the commit already happened.

Recovery: ``list_from`` on a ``_delta_log`` path repairs the table's newest entry when it is
incomplete (copies T(N) to N.json if absent, marks it complete), as the next writer does in
step 1. ``tablePath`` is the table URI exactly as given (scheme included): every writer of a
table must name it the same way (``s3a://`` in Spark), as with Delta's own store.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from deltaguard.logstore.aws_errors import describe, error_code, http_status
from deltaguard.logstore.backoff import sleep_before_retry
from deltaguard.logstore.commit_mark import commit_mark
from deltaguard.logstore.commit_metrics import CommitMetrics, CommitTally
from deltaguard.logstore.commit_names import commit_file_name, commit_version
from deltaguard.logstore.dynamodb_table import MARKER_ATTRIBUTE
from deltaguard.logstore.errors import CommitOutcomeUnknownError, LogFileExistsError
from deltaguard.logstore.preset_name import PresetName
from deltaguard.logstore.s3_conditional import LogFileStatus, S3ConditionalLogStore
from deltaguard.logstore.s3_location import S3Location

LOG = logging.getLogger(__name__)


class CommitTableMissingError(OSError):
    """The DynamoDB table does not exist (it is never created implicitly: a mistyped name would
    silently split writers across two tables)."""


class MissingCommitError(OSError):
    """Step 1 found neither a DynamoDB entry nor the file of the previous commit."""


class S3DynamoDBLogStore:
    """Delta log reads and writes on S3 with DynamoDB as the commit authority."""

    #: The store's commit path, named in the provenance mark of the commits it creates.
    preset: PresetName = PresetName.S3_DYNAMODB

    def __init__(
        self,
        s3: Any,
        dynamodb: Any,
        table_name: str = "delta_log",
        ttl_seconds: int = 86400,
        max_attempts: int = 10,
    ) -> None:
        if ttl_seconds < 0:
            raise ValueError("ttl_seconds must be >= 0")
        self.max_attempts = max_attempts  # PutItems of the commit point (:meth:`claim`)
        self.s3 = s3
        self.ddb = dynamodb
        self.table_name = table_name
        self.ttl_seconds = ttl_seconds
        # listing and reading are plain S3, shared with the conditional store
        self._files = S3ConditionalLogStore(s3, verify_conditional_writes=False)
        #: This store's commit counters (:mod:`~.commit_metrics`).
        self.metrics = CommitMetrics()

    # -- DynamoDB items -------------------------------------------------------------------

    def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        try:
            return dict(getattr(self.ddb, operation)(TableName=self.table_name, **kwargs))
        except ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                raise CommitTableMissingError(
                    f"DynamoDB table {self.table_name} does not exist. Create it with "
                    f"`deltaguard dynamodb create-table {self.table_name}`."
                ) from None
            raise

    def _get(self, table_path: str, file_name: str) -> dict[str, Any] | None:
        item = self._call(
            "get_item",
            ConsistentRead=True,
            Key={"tablePath": {"S": table_path}, "fileName": {"S": file_name}},
        ).get("Item")
        return _entry(item) if item else None

    def _latest(self, table_path: str) -> dict[str, Any] | None:
        items = self._call(
            "query",
            KeyConditionExpression="tablePath = :tp",
            ExpressionAttributeValues={":tp": {"S": table_path}},
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        ).get("Items", [])
        return _entry(items[0]) if items else None

    def entries(self, table_path: str) -> list[dict[str, Any]]:
        """Every entry of one table (``tablePath`` exactly as writers named it), oldest first:
        dicts with tablePath, fileName, tempPath, complete (bool), expireTime and marker (the
        transition store's :data:`~deltaguard.logstore.dynamodb_table.MARKER_ATTRIBUTE`, or
        None)."""
        out: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": "tablePath = :tp",
            "ExpressionAttributeValues": {":tp": {"S": table_path}},
            "ConsistentRead": True,
        }
        while True:
            page = self._call("query", **kwargs)
            out += [_entry(item) for item in page.get("Items", [])]
            if not page.get("LastEvaluatedKey"):
                return out
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _put(self, entry: dict[str, Any], overwrite: bool) -> None:
        item = {
            "tablePath": {"S": entry["tablePath"]},
            "fileName": {"S": entry["fileName"]},
            "tempPath": {"S": entry["tempPath"]},
            "complete": {"S": "true" if entry["complete"] else "false"},
        }
        if entry.get("expireTime") is not None:
            item["expireTime"] = {"N": str(entry["expireTime"])}
        if entry.get("marker") is not None:
            item[MARKER_ATTRIBUTE] = {"S": entry["marker"]}
        kwargs: dict[str, Any] = {"Item": item}
        if not overwrite:
            kwargs["ConditionExpression"] = "attribute_not_exists(fileName)"
        self._call("put_item", **kwargs)

    def claim(
        self,
        entry: dict[str, Any],
        max_attempts: int = 10,
        base_delay_s: float = 0.05,
        tally: CommitTally | None = None,
    ) -> None:
        """The commit point: PutItem of ``entry`` with ``attribute_not_exists(fileName)``,
        settled by a consistent read-back after any failure (the JVM
        ``DynamoDBCommitTable.claim``). Returns iff the stored entry is this attempt's (same
        temp file; a lost response is success). Raises :class:`LogFileExistsError` iff another
        writer's entry holds the file, :class:`CommitOutcomeUnknownError` when ``max_attempts``
        PutItems (5xx, throttling, no answer) do not settle, and
        :class:`CommitTableMissingError` at once. ``tally``: a commit's
        :class:`~.commit_metrics.CommitTally`, told of each PutItem and of a settle."""
        tally = tally if tally is not None else CommitTally()
        uri = f"{entry['tablePath']}/_delta_log/{entry['fileName']}"
        last_error = ""
        for attempt in range(1, max_attempts + 1):
            if attempt > 1:
                sleep_before_retry(attempt - 1, base_delay_s, 5.0)
            try:
                tally.attempts += 1
                self._put(entry, overwrite=False)
                return
            except ClientError as exc:
                last_error = describe(exc)
                if _is_refusal(exc):
                    if attempt == 1:
                        raise  # DynamoDB applied nothing, and nothing of ours is in flight
                    raise CommitOutcomeUnknownError(
                        uri,
                        f"PutItem {attempt}/{max_attempts} in DynamoDB table {self.table_name} "
                        f"(temp file {entry['tempPath']}) was refused after an earlier attempt "
                        f"whose outcome was not settled: {last_error}",
                    ) from exc
            except BotoCoreError as exc:
                last_error = describe(exc)
            try:
                stored = self._get(entry["tablePath"], entry["fileName"])
            except (ClientError, BotoCoreError) as exc:
                last_error += f"; read-back failed: {describe(exc)}"
                continue
            if stored is not None:
                if stored["tempPath"] == entry["tempPath"]:
                    tally.settles += 1
                    return
                raise LogFileExistsError(f"{uri}: DynamoDB entry exists in {self.table_name}")
        raise CommitOutcomeUnknownError(
            uri,
            f"{max_attempts} conditional PutItems in DynamoDB table {self.table_name} (temp file "
            f"{entry['tempPath']}) did not settle; last error: {last_error}",
        )

    def complete(self, entry: dict[str, Any]) -> None:
        """Marks ``entry`` (as :meth:`entries` returns it) complete with ``expireTime`` = now +
        TTL, the last step of a commit and of its recovery: only once its ``N.json`` exists.
        Idempotent; raises the DynamoDB client's errors."""
        self._put(
            {**entry, "complete": True, "expireTime": int(time.time()) + self.ttl_seconds}, True
        )

    # -- files ----------------------------------------------------------------------------

    def _exists(self, loc: S3Location) -> bool:
        try:
            self.s3.head_object(Bucket=loc.bucket, Key=loc.key)
            return True
        except ClientError as exc:
            if http_status(exc) == 404:
                return False
            raise

    def _copy_if_absent(self, table_uri: str, entry: dict[str, Any], dst: S3Location) -> None:
        if self._exists(dst):
            return
        src = S3Location.parse(f"{table_uri}/_delta_log/{entry['tempPath']}")
        body = self.s3.get_object(Bucket=src.bucket, Key=src.key)["Body"].read()
        self.s3.put_object(
            Bucket=dst.bucket, Key=dst.key, Body=body, Metadata=commit_mark(self.preset)
        )

    def _repair(self, table_uri: str, entry: dict[str, Any]) -> None:
        dst = S3Location.parse(f"{table_uri}/_delta_log/{entry['fileName']}")
        last: Exception | None = None
        for _ in range(4):
            try:
                self._copy_if_absent(table_uri, entry, dst)
                self.complete(entry)
                LOG.info("repaired %s: copied its temp file and marked it complete", dst.uri())
                return
            except ClientError as exc:
                last = exc
        raise OSError(f"could not repair incomplete commit {dst.uri()}: {last}")

    # -- LogStore API ---------------------------------------------------------------------

    def write(self, uri: str, lines: Iterable[str], overwrite: bool = False) -> None:
        loc = S3Location.parse(uri)
        body = "".join(line + "\n" for line in lines).encode("utf-8")
        if overwrite:
            self.s3.put_object(Bucket=loc.bucket, Key=loc.key, Body=body)
            return
        version = commit_version(loc.name)
        if version is None:  # not a commit
            self._commit(uri, loc, body, version, CommitTally())
            return
        with self.metrics.observe(self.preset.value, uri, version) as tally:
            self._commit(uri, loc, body, version, tally)

    def _commit(
        self, uri: str, loc: S3Location, body: bytes, version: int | None, tally: CommitTally
    ) -> None:
        """The protocol above, for a file that is not there yet."""
        if self._exists(loc):
            raise LogFileExistsError(uri)
        table_uri = uri.rsplit("/_delta_log/", 1)[0]
        if version is not None and version > 0:
            prev_name = commit_file_name(version - 1)
            prev = self._get(table_uri, prev_name)
            if prev is not None and not prev["complete"]:
                self._repair(table_uri, prev)
            elif not self._exists(S3Location(loc.bucket, f"{loc.parent_key}/{prev_name}")):
                raise MissingCommitError(
                    f"previous commit {prev_name} of {table_uri} doesn't exist "
                    "on the file system but does in the external log store"
                )
        entry = {
            "tablePath": table_uri,
            "fileName": loc.name,
            "tempPath": f".tmp/{loc.name}.{uuid.uuid4()}",
            "complete": False,
        }
        temp = S3Location.parse(f"{table_uri}/_delta_log/{entry['tempPath']}")
        self.s3.put_object(Bucket=temp.bucket, Key=temp.key, Body=body)
        self.claim(entry, self.max_attempts, tally=tally)
        try:
            self._copy_if_absent(table_uri, entry, loc)
            self._put(
                {**entry, "complete": True, "expireTime": int(time.time()) + self.ttl_seconds}, True
            )
        except ClientError as exc:
            LOG.info("ignoring recoverable error after the commit point of %s: %s", uri, exc)

    def read(self, uri: str) -> Iterator[str]:
        return self._files.read(uri)

    def list_from(self, uri: str) -> Iterator[LogFileStatus]:
        if "/_delta_log/" in uri:
            table_uri = uri.rsplit("/_delta_log/", 1)[0]
            latest = self._latest(table_uri)
            if latest is not None and not latest["complete"]:
                self._repair(table_uri, latest)
        return self._files.list_from(uri)


def _entry(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "tablePath": item["tablePath"]["S"],
        "fileName": item["fileName"]["S"],
        "tempPath": item["tempPath"]["S"],
        "complete": item["complete"]["S"] == "true",
        "expireTime": int(item["expireTime"]["N"]) if "expireTime" in item else None,
        "marker": item[MARKER_ATTRIBUTE]["S"] if MARKER_ATTRIBUTE in item else None,
    }


_THROTTLES = frozenset(
    {"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"}
)


def _is_refusal(exc: ClientError) -> bool:
    """An answer saying DynamoDB applied nothing, and no earlier attempt could have: a 4xx
    other than throttling and other than the condition's failure (the JVM
    ``DynamoDBCommitTable.isRefusal``)."""
    return (
        400 <= http_status(exc) < 500
        and error_code(exc) not in _THROTTLES
        and error_code(exc) != "ConditionalCheckFailedException"
    )
