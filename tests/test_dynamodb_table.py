"""`deltaguard dynamodb create-table` on LocalStack's DynamoDB."""

from __future__ import annotations

import subprocess

import boto3


def _create(run_cli, localstack, name: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "dynamodb",
        "create-table",
        name,
        "--endpoint",
        localstack.endpoint.url,
        "--region",
        "us-east-1",
        env=localstack.endpoint.credentials_env(),
    )


def test_create_table_is_idempotent_with_ttl_and_on_demand(localstack, run_cli):
    first = _create(run_cli, localstack, "delta_log_a")
    assert first.returncode == 0, first.stderr
    assert "created (PAY_PER_REQUEST); TTL enabled on expireTime" in first.stdout
    again = _create(run_cli, localstack, "delta_log_a")
    assert again.returncode == 0 and "already exists with the right schema" in again.stdout
    ddb = boto3.client("dynamodb", **localstack.endpoint.boto3_kwargs())
    table = ddb.describe_table(TableName="delta_log_a")["Table"]
    assert {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]} == {
        "tablePath": "HASH",
        "fileName": "RANGE",
    }
    ttl = ddb.describe_time_to_live(TableName="delta_log_a")["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expireTime" and ttl["TimeToLiveStatus"] in (
        "ENABLED",
        "ENABLING",
    )


def test_wrong_schema_is_a_clear_error(localstack, run_cli):
    ddb = boto3.client("dynamodb", **localstack.endpoint.boto3_kwargs())
    ddb.create_table(
        TableName="not_a_log",
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
    )
    out = _create(run_cli, localstack, "not_a_log")
    assert out.returncode == 1
    assert (
        "tablePath HASH (S) and fileName RANGE (S)" in out.stderr and "Traceback" not in out.stderr
    )
