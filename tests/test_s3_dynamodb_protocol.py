"""The DynamoDB commit protocol's commit point, pinned down in memory (ScriptedS3 and a scripted
DynamoDB client, no server): the Python twin of the JUnit DynamoDBPiecesTest's commit-point
tests. Mutual exclusion, lost responses and recovery run against LocalStack in
test_dynamodb_logstore.py."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError
from scripted_s3 import Fault, ScriptedS3, client_error

from deltaguard.logstore.errors import CommitOutcomeUnknownError, LogFileExistsError
from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore

TABLE = "s3a://bucket/t"
URI = f"{TABLE}/_delta_log/00000000000000000000.json"
KEY = ("bucket", "t/_delta_log/00000000000000000000.json")


@dataclass
class ScriptedDynamoDB:
    """``put_item``/``get_item`` on a dict, evaluating ``attribute_not_exists(fileName)``
    atomically; ``put_script`` / ``get_script`` hold faults for the next requests (ERROR_503:
    a 500, ERROR_403: AccessDeniedException, RESET_BEFORE: no answer, DROP_RESPONSE: applied,
    then no answer)."""

    items: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    put_script: deque[Fault] = field(default_factory=deque)
    get_script: deque[Fault] = field(default_factory=deque)
    gets: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def _before(fault: Fault, operation: str) -> None:
        if fault is Fault.ERROR_503:
            raise client_error(500, "InternalServerError", operation)
        if fault is Fault.ERROR_403:
            raise client_error(400, "AccessDeniedException", operation)
        if fault is Fault.RESET_BEFORE:
            raise EndpointConnectionError(endpoint_url="http://scripted-dynamodb.invalid")

    def put_item(self, *, TableName: str, Item: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            fault = self.put_script.popleft() if self.put_script else Fault.NONE
            self._before(fault, "PutItem")
            key = (Item["tablePath"]["S"], Item["fileName"]["S"])
            if kwargs.get("ConditionExpression") and key in self.items:
                raise client_error(400, "ConditionalCheckFailedException", "PutItem")
            self.items[key] = dict(Item)
            if fault is Fault.DROP_RESPONSE:
                raise EndpointConnectionError(endpoint_url="http://scripted-dynamodb.invalid")
            return {}

    def get_item(self, *, TableName: str, Key: dict[str, Any], **_: Any) -> dict[str, Any]:
        with self._lock:
            self.gets += 1
            fault = self.get_script.popleft() if self.get_script else Fault.NONE
            self._before(fault, "GetItem")
            item = self.items.get((Key["tablePath"]["S"], Key["fileName"]["S"]))
            return {"Item": item} if item else {}


ATTEMPTS = 3  # PutItems of the commit point in these tests


def _write(ddb: ScriptedDynamoDB) -> ScriptedS3:
    s3 = ScriptedS3()
    S3DynamoDBLogStore(s3, ddb, max_attempts=ATTEMPTS).write(URI, ['{"commitInfo":{}}'])
    return s3


def test_lost_put_item_response_is_our_commit():
    ddb = ScriptedDynamoDB()
    ddb.put_script.append(Fault.DROP_RESPONSE)
    s3 = _write(ddb)
    assert s3.objects[KEY] == b'{"commitInfo":{}}\n'
    assert ddb.items[(TABLE, "00000000000000000000.json")]["complete"] == {"S": "true"}


def test_another_writers_entry_is_log_file_exists():
    ddb = ScriptedDynamoDB()
    ddb.items[(TABLE, "00000000000000000000.json")] = {
        "tablePath": {"S": TABLE},
        "fileName": {"S": "00000000000000000000.json"},
        "tempPath": {"S": ".tmp/00000000000000000000.json.theirs"},
        "complete": {"S": "false"},
    }
    ddb.put_script.append(Fault.ERROR_503)
    with pytest.raises(LogFileExistsError):
        _write(ddb)


def test_failure_then_success_is_our_commit():
    ddb = ScriptedDynamoDB()
    ddb.put_script.append(Fault.ERROR_503)
    s3 = _write(ddb)
    assert s3.objects[KEY] == b'{"commitInfo":{}}\n'


def test_failure_with_no_entry_yet_is_outcome_unknown():
    ddb = ScriptedDynamoDB()
    ddb.put_script.extend([Fault.ERROR_503] * ATTEMPTS)
    with pytest.raises(CommitOutcomeUnknownError) as err:
        _write(ddb)
    message = str(err.value)
    assert err.value.location == URI
    assert "InternalServerError" in message and "`deltaguard history s3a://bucket/t`" in message
    assert ".tmp/00000000000000000000.json." in message, "names the temp file a late entry uses"


def test_read_back_that_keeps_failing_is_outcome_unknown():
    ddb = ScriptedDynamoDB()
    ddb.put_script.append(Fault.DROP_RESPONSE)
    ddb.get_script.extend([Fault.RESET_BEFORE] * ATTEMPTS)
    with pytest.raises(CommitOutcomeUnknownError, match="read-back failed"):
        _write(ddb)
    assert (TABLE, "00000000000000000000.json") in ddb.items, "it did land"


def test_refusal_is_re_raised_without_read_back():
    ddb = ScriptedDynamoDB()
    ddb.put_script.append(Fault.ERROR_403)
    with pytest.raises(Exception) as err:
        _write(ddb)
    assert not isinstance(err.value, CommitOutcomeUnknownError)
    assert "AccessDeniedException" in str(err.value)
    assert not ddb.items and ddb.gets == 0


def test_refusal_after_an_unsettled_attempt_is_outcome_unknown():
    ddb = ScriptedDynamoDB()
    ddb.put_script.extend([Fault.ERROR_503, Fault.ERROR_403])
    with pytest.raises(CommitOutcomeUnknownError, match="AccessDeniedException"):
        _write(ddb)
