"""The DynamoDB table of the DynamoDB LogStore: Delta's S3DynamoDBLogStore schema.

Items (one per commit attempt): ``tablePath`` (S, HASH key), ``fileName`` (S, RANGE key),
``tempPath`` (S), ``complete`` (S, "true"/"false"), ``expireTime`` (N, epoch seconds, set
when complete; DynamoDB's TTL removes completed entries after it). The transition store
(:mod:`deltaguard.logstore.s3_transition`) adds :data:`MARKER_ATTRIBUTE` =
:data:`TRANSITION_MARKER` to its entries; Delta's store ignores the attribute.

:func:`create_table` is idempotent: an existing table with this key schema is accepted (and
TTL on ``expireTime`` enabled if it is not); one with another key schema is an error that
names the difference. New tables use on-demand billing (PAY_PER_REQUEST).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from deltaguard.logstore.aws_errors import describe, error_code

KEY_SCHEMA = [
    {"AttributeName": "tablePath", "KeyType": "HASH"},
    {"AttributeName": "fileName", "KeyType": "RANGE"},
]
ATTRIBUTES = [
    {"AttributeName": "tablePath", "AttributeType": "S"},
    {"AttributeName": "fileName", "AttributeType": "S"},
]
TTL_ATTRIBUTE = "expireTime"
#: The transition store's marker attribute (S) and value; the JVM mirror is CommitEntry.
MARKER_ATTRIBUTE = "deltaguardProtocol"
TRANSITION_MARKER = "transition"


class CommitTableError(RuntimeError):
    """The table cannot serve as the LogStore's table; the message says why."""


class CommitTableAccessError(CommitTableError):
    """The DynamoDB API could not be used (endpoint, credentials, access): nothing is known
    about the table."""


@dataclass(frozen=True)
class CreateResult:
    table: str
    created: bool
    ttl_enabled_now: bool
    billing_mode: str


def schema_problem(described: dict[str, Any]) -> str | None:
    keys = {k["AttributeName"]: k["KeyType"] for k in described.get("KeySchema", [])}
    types = {
        a["AttributeName"]: a["AttributeType"] for a in described.get("AttributeDefinitions", [])
    }
    want = {k["AttributeName"]: k["KeyType"] for k in KEY_SCHEMA}
    if keys != want or types.get("tablePath") != "S" or types.get("fileName") != "S":
        return (
            f"key schema {keys} with attribute types {types}; the DynamoDB LogStore needs "
            "tablePath HASH (S) and fileName RANGE (S)"
        )
    return None


def create_table(ddb: Any, name: str, wait_s: float = 60.0) -> CreateResult:
    """Creates (or accepts) the LogStore table and enables TTL on expireTime.

    Raises CommitTableError for a table with the wrong key schema or an API failure."""
    created = False
    try:
        ddb.create_table(
            TableName=name,
            KeySchema=KEY_SCHEMA,
            AttributeDefinitions=ATTRIBUTES,
            BillingMode="PAY_PER_REQUEST",
        )
        created = True
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException":
            raise CommitTableAccessError(
                f"cannot create DynamoDB table {name}: {describe(exc)}"
            ) from None
    except BotoCoreError as exc:
        raise CommitTableAccessError(
            f"cannot reach DynamoDB to create {name}: {describe(exc)}"
        ) from None
    deadline = time.monotonic() + wait_s
    while True:
        described = ddb.describe_table(TableName=name)["Table"]
        if described.get("TableStatus") == "ACTIVE":
            break
        if time.monotonic() > deadline:
            raise CommitTableError(
                f"table {name} is still {described.get('TableStatus')} after {wait_s:.0f} s"
            )
        time.sleep(0.5)
    problem = schema_problem(described)
    if problem:
        raise CommitTableError(f"table {name} exists with {problem}")
    ttl = ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    ttl_enabled_now = False
    if ttl.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
        ddb.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
        )
        ttl_enabled_now = True
    elif ttl.get("AttributeName") != TTL_ATTRIBUTE:
        raise CommitTableError(
            f"table {name} has TTL on {ttl.get('AttributeName')}, not {TTL_ATTRIBUTE}"
        )
    mode = (described.get("BillingModeSummary") or {}).get("BillingMode", "PROVISIONED")
    return CreateResult(name, created, ttl_enabled_now, mode)
