"""`deltaguard probe`: safe on LocalStack, unsafe on a store ignoring If-None-Match (the proxy
strips it) and on moto with a delay between its check and its store."""

from __future__ import annotations

import json
import subprocess

import boto3
import pytest

from deltaguard.localstack.fault_proxy import FaultRule
from deltaguard.localstack.moto_server import MotoServer

CREDS = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _probe(run_cli, endpoint: str, target: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "probe",
        target,
        "--endpoint",
        endpoint,
        "--path-style",
        "--json",
        "--writers",
        "8",
        "--rounds",
        "10",
        *extra,
        env=CREDS,
        timeout=300,
    )


def _keys(endpoint, bucket: str) -> list[str]:
    return [
        o["Key"] for o in endpoint.s3_client().list_objects_v2(Bucket=bucket).get("Contents", [])
    ]


def test_localstack_is_safe_and_probe_cleans_up(localstack, ls_bucket, run_cli):
    out = _probe(run_cli, localstack.endpoint.url, f"s3://{ls_bucket}/lake")
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["recommended_preset"] == "s3-conditional"
    assert report["race_rounds"] == 10 and report["race_rounds_with_several_winners"] == 0
    assert {c["name"]: c["status"] for c in report["checks"]} == {
        "access": "pass",
        "if-none-match": "pass",
        "atomicity": "pass",
    }
    assert _keys(localstack.endpoint, ls_bucket) == [], "probe keys deleted"


def test_store_ignoring_if_none_match_is_unsafe(ls_proxy, localstack, ls_bucket, run_cli):
    ls_proxy.set_rules([FaultRule("strip_header", method="PUT", header="If-None-Match")])
    out = _probe(run_cli, ls_proxy.endpoint.url, f"s3://{ls_bucket}/lake")
    assert out.returncode == 1, out.stdout + out.stderr
    report = json.loads(out.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["if-none-match"]["status"] == "fail"
    assert "ignores If-None-Match" in checks["if-none-match"]["detail"]
    assert report["recommended_preset"] is None and report["safe"] is False
    assert _keys(localstack.endpoint, ls_bucket) == []


@pytest.mark.slow
def test_moto_with_check_store_delay_is_unsafe(tmp_path, run_cli):
    with MotoServer(tmp_path, check_store_delay_s=0.05) as moto:
        moto.endpoint.s3_client().create_bucket(Bucket="racy")
        out = _probe(run_cli, moto.endpoint.url, "s3://racy/lake")
        assert out.returncode == 1, out.stdout + out.stderr
        report = json.loads(out.stdout)
        checks = {c["name"]: c for c in report["checks"]}
        assert checks["if-none-match"]["status"] == "pass", "single requests look right"
        assert checks["atomicity"]["status"] == "fail"
        assert report["race_rounds_with_several_winners"] >= 1
        assert _keys(moto.endpoint, "racy") == []


def test_dynamodb_table_checks(localstack, ls_bucket, run_cli):
    ddb = boto3.client("dynamodb", **localstack.endpoint.boto3_kwargs())
    ddb.create_table(
        TableName="delta_log_probe",
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[
            {"AttributeName": "tablePath", "KeyType": "HASH"},
            {"AttributeName": "fileName", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "tablePath", "AttributeType": "S"},
            {"AttributeName": "fileName", "AttributeType": "S"},
        ],
    )
    ddb.update_time_to_live(
        TableName="delta_log_probe",
        TimeToLiveSpecification={"Enabled": True, "AttributeName": "expireTime"},
    )
    out = _probe(
        run_cli,
        localstack.endpoint.url,
        f"s3://{ls_bucket}/lake",
        "--dynamodb-table",
        "delta_log_probe",
    )
    report = json.loads(out.stdout)
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses["dynamodb-table"] == statuses["dynamodb-key-schema"] == "pass"
    assert statuses["dynamodb-ttl"] == "pass" and statuses["dynamodb-billing"] == "pass"
    missing = json.loads(
        _probe(
            run_cli,
            localstack.endpoint.url,
            f"s3://{ls_bucket}/lake",
            "--dynamodb-table",
            "no_such_table",
        ).stdout
    )
    assert {c["name"]: c["status"] for c in missing["checks"]}["dynamodb-table"] == "fail"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("s3://no-such-bucket-dg/lake", "does not exist"),
        ("not-a-uri", "not an S3 URI"),
    ],
)
def test_probe_cannot_run_is_exit_2_without_traceback(localstack, target, message, run_cli):
    out = _probe(run_cli, localstack.endpoint.url, target)
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr
