"""The third real S3 server: MinIO, what teams without DynamoDB run Delta on (delta-io/delta
#1336). The same checks as on versitygw (test_versitygw.py), run against MinIO: the probe's
verdict; the Python protocol's fault tests through the fault proxy (409, 503, 500, dropped
responses, resets, imported from test_python_logstore.py and run with this module's fixtures, so
they are the same tests, not copies; not the strip-If-None-Match test: MinIO verifies
signatures, and a proxy that strips a signed header gets 403 SignatureDoesNotMatch, not an
ignoring store); mutual exclusion of Python writers; the staged Spark race through deltaguard's
conditional store, with dropped responses / 409 / 503 on commit PUTs; and the mixed-engine race:
a Spark driver, a delta-rs writer and the Python committer on one table at once. The soak on
MinIO is in test_soak.py (``make soak``).

In this module the fixtures ``localstack``, ``ls_bucket`` and ``ls_proxy`` that the imported
tests ask for are MinIO, a bucket on it and a fault proxy in front of it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_python_logstore import (  # noqa: F401 (collected here, run against MinIO)
    test_access_denied_fails_fast,
    test_budget_exhausted_names_key_and_error,
    test_connection_reset_is_retried,
    test_lost_response_is_success_not_duplicate,
    test_probe_survives_lost_response_and_throttling,
    test_python_writers_never_lose_commits_on_localstack,
    test_transient_errors_are_retried_conditionally,
)
from test_spark_commits import ROWS, _assert_nothing_lost, _run

from deltaguard.localstack.fault_proxy import FaultProxy, FaultRule
from deltaguard.localstack.minio_server import MinIOServer
from deltaguard.localstack.race import DATA_COMMIT_FILE_REGEX, hold_one_commit_put
from deltaguard.logstore.preset_name import PresetName


@pytest.fixture
def localstack(minio: MinIOServer) -> MinIOServer:
    """The server under test (named as the imported tests expect)."""
    return minio


@pytest.fixture
def ls_bucket(minio: MinIOServer) -> str:
    name = f"dg-{uuid.uuid4().hex[:12]}"
    minio.endpoint.s3_client().create_bucket(Bucket=name)
    return name


@pytest.fixture
def ls_proxy(minio: MinIOServer, tmp_path: Path) -> Iterator[FaultProxy]:
    with FaultProxy(minio.endpoint, tmp_path, seed=7) as proxy:
        yield proxy


def test_probe_says_minio_is_safe(minio, ls_bucket, run_cli):
    out = run_cli(
        "probe",
        f"s3://{ls_bucket}/lake",
        "--endpoint",
        minio.endpoint.url,
        "--path-style",
        "--json",
        "--writers",
        "8",
        "--rounds",
        "20",
        env={**minio.endpoint.credentials_env(), "AWS_DEFAULT_REGION": "us-east-1"},
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["recommended_preset"] == "s3-conditional", report
    assert report["race_rounds"] == 20 and report["race_rounds_with_several_winners"] == 0
    assert {c["name"]: c["status"] for c in report["checks"]} == {
        "access": "pass",
        "if-none-match": "pass",
        "atomicity": "pass",
    }
    listed = minio.endpoint.s3_client().list_objects_v2(Bucket=ls_bucket)
    assert listed.get("Contents", []) == [], "probe keys deleted"


def test_second_create_gets_412_and_keeps_the_first_body(minio, ls_bucket):
    """What the protocol relies on, as MinIO answers it: the losing create gets 412
    PreconditionFailed (not 409), and the winner's body stays."""
    from botocore.exceptions import ClientError

    s3 = minio.endpoint.s3_client()
    s3.put_object(Bucket=ls_bucket, Key="k", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket=ls_bucket, Key="k", Body=b"second", IfNoneMatch="*")
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert err.value.response["Error"]["Code"] == "PreconditionFailed"
    assert s3.get_object(Bucket=ls_bucket, Key="k")["Body"].read() == b"first"


@pytest.mark.spark
def test_staged_spark_race_and_commit_faults_on_minio_lose_nothing(
    minio, ls_proxy, ls_bucket, tmp_path
):
    """Two Spark drivers and one Python writer through deltaguard's conditional store; the proxy
    holds one commit PUT until a peer wrote that version (the held PUT must get 412), and drops
    the responses of two commit PUTs that land, answers one 409 and one 503: the read-back
    settles each; exact rows, nothing twice."""
    conditional = {
        "method": "PUT",
        "path_regex": DATA_COMMIT_FILE_REGEX,
        "header_present": "If-None-Match",
    }
    ls_proxy.set_rules(
        [
            hold_one_commit_put(),
            FaultRule("drop_response", times=2, **conditional),
            FaultRule(
                "error", status=409, code="ConditionalRequestConflict", times=1, **conditional
            ),
            FaultRule("error", status=503, code="SlowDown", times=1, **conditional),
        ]
    )
    result = _run(
        minio, ls_proxy, ls_bucket, tmp_path, PresetName.S3_CONDITIONAL, 2, 5, python_writers=1
    )
    assert ls_proxy.fired() == [1, 2, 1, 1], "the race was staged and every fault happened"
    _assert_nothing_lost(result, 15)
    assert result.found_rows == 15 * ROWS


@pytest.mark.spark
def test_spark_deltars_and_python_writers_on_minio_lose_nothing(
    minio, ls_proxy, ls_bucket, tmp_path
):
    """The mixed-engine race: one Spark driver (deltaguard's conditional store), one delta-rs
    writer (its own conditional PUT) and the Python committer append to one table at once, with
    one commit PUT held until a peer took its version."""
    ls_proxy.set_rules([hold_one_commit_put()])
    result = _run(
        minio,
        ls_proxy,
        ls_bucket,
        tmp_path,
        PresetName.S3_CONDITIONAL,
        1,
        4,
        python_writers=1,
        deltars_writers=1,
    )
    assert ls_proxy.fired() == [1], "the race was staged"
    assert {r["engine"] for r in result.reports} == {"spark", "python", "delta-rs"}, result.reports
    _assert_nothing_lost(result, 12)
