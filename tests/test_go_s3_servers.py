"""The second and third real S3 servers, the Go ones: versitygw (the Versity S3 Gateway), which
users run on-premises, and MinIO, what teams without DynamoDB run Delta on (delta-io/delta
#1336); both independent of LocalStack.

The store-side assumption (If-None-Match: * is honoured atomically) is checked on each, by the
same tests: the probe's verdict; the Python protocol's fault tests through the fault proxy
(409, 503, 500, dropped responses, resets, imported from test_python_logstore.py and run with
this module's fixtures, so they are the same tests, not copies; not the strip-If-None-Match
test: both servers verify signatures, and a proxy that strips a signed header gets 403
SignatureDoesNotMatch, not an ignoring store); mutual exclusion of Python writers. Each shared
test runs once per server (ids ``[versitygw]``, ``[minio]``).

With test_spark_commits.py's machinery (endpoint swapped), on both the staged Spark race
through deltaguard's conditional store, on MinIO with dropped responses / 409 / 503 on commit
PUTs too (STAGED_RACE_FAULTS). MinIO only: the losing create's 412, and the mixed-engine race:
a Spark driver, a delta-rs writer and the Python committer on one table at once. The soaks on
both are in test_soak.py (``make soak``).

In this module the fixtures ``localstack``, ``ls_bucket`` and ``ls_proxy`` that the imported
tests ask for are the server under test (the session's ``versitygw`` or ``minio`` fixture, so
each server starts once), a bucket on it and a fault proxy in front of it; a per-server test
picks its server with ``@on("minio")``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_python_logstore import (  # noqa: F401 (collected here, run against both servers)
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
from deltaguard.localstack.go_s3_server import GoS3Server
from deltaguard.localstack.race import DATA_COMMIT_FILE_REGEX, hold_one_commit_put
from deltaguard.logstore.preset_name import PresetName

#: The session fixtures (tests/conftest.py) of the servers under test.
SERVERS = ("versitygw", "minio")


def on(server: str) -> pytest.MarkDecorator:
    """Runs a test on ``server`` only (one of SERVERS)."""
    assert server in SERVERS, server
    return pytest.mark.parametrize("localstack", [server], indirect=True, scope="module")


@pytest.fixture(scope="module", params=SERVERS)
def localstack(request: pytest.FixtureRequest) -> GoS3Server:
    """The server under test (named as the imported tests expect). Module-scoped, so pytest runs
    the module server by server (all of versitygw's tests, then MinIO's), not alternating."""
    server: GoS3Server = request.getfixturevalue(request.param)
    return server


@pytest.fixture
def ls_bucket(localstack: GoS3Server) -> str:
    name = f"dg-{uuid.uuid4().hex[:12]}"
    localstack.endpoint.s3_client().create_bucket(Bucket=name)
    return name


@pytest.fixture
def ls_proxy(localstack: GoS3Server, tmp_path: Path) -> Iterator[FaultProxy]:
    with FaultProxy(localstack.endpoint, tmp_path, seed=7) as proxy:
        yield proxy


def test_probe_says_the_server_is_safe(localstack, ls_bucket, run_cli):
    out = run_cli(
        "probe",
        f"s3://{ls_bucket}/lake",
        "--endpoint",
        localstack.endpoint.url,
        "--path-style",
        "--json",
        "--writers",
        "8",
        "--rounds",
        "20",
        env={**localstack.endpoint.credentials_env(), "AWS_DEFAULT_REGION": "us-east-1"},
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
    listed = localstack.endpoint.s3_client().list_objects_v2(Bucket=ls_bucket)
    assert listed.get("Contents", []) == [], "probe keys deleted"


@on("minio")
def test_second_create_gets_412_and_keeps_the_first_body(localstack, ls_bucket):
    """What the protocol relies on, as MinIO answers it: the losing create gets 412
    PreconditionFailed (not 409), and the winner's body stays."""
    from botocore.exceptions import ClientError

    s3 = localstack.endpoint.s3_client()
    s3.put_object(Bucket=ls_bucket, Key="k", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket=ls_bucket, Key="k", Body=b"second", IfNoneMatch="*")
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert err.value.response["Error"]["Code"] == "PreconditionFailed"
    assert s3.get_object(Bucket=ls_bucket, Key="k")["Body"].read() == b"first"


def _commit_faults() -> list[FaultRule]:
    """MinIO's staged race also drops the responses of two commit PUTs that land, answers one
    409 and one 503 (fired: 2, 1, 1)."""
    conditional = {
        "method": "PUT",
        "path_regex": DATA_COMMIT_FILE_REGEX,
        "header_present": "If-None-Match",
    }
    return [
        FaultRule("drop_response", times=2, **conditional),
        FaultRule("error", status=409, code="ConditionalRequestConflict", times=1, **conditional),
        FaultRule("error", status=503, code="SlowDown", times=1, **conditional),
    ]


#: Per server: the commit faults of the staged Spark race besides the held PUT, and how often
#: each rule (the held PUT first) fires.
STAGED_RACE_FAULTS = {
    "versitygw": (lambda: [], [1]),
    "minio": (_commit_faults, [1, 2, 1, 1]),
}


@pytest.mark.spark
def test_staged_spark_race_and_commit_faults_lose_nothing(
    localstack, ls_proxy, ls_bucket, tmp_path
):
    """Two Spark drivers and one Python writer through deltaguard's conditional store; the proxy
    holds one commit PUT until a peer wrote that version (the held PUT must get 412), and on
    MinIO drops the responses of two commit PUTs that land, answers one 409 and one 503: the
    read-back settles each; exact rows, nothing twice."""
    faults, fired = STAGED_RACE_FAULTS[localstack.binary_name]
    ls_proxy.set_rules([hold_one_commit_put(), *faults()])
    result = _run(
        localstack, ls_proxy, ls_bucket, tmp_path, PresetName.S3_CONDITIONAL, 2, 5, python_writers=1
    )
    assert ls_proxy.fired() == fired, "the race was staged and every fault happened"
    _assert_nothing_lost(result, 15)
    assert result.found_rows == 15 * ROWS
    # Issue 50 part 4 on these servers: each Spark driver's ``deltaguard`` source counted the
    # commits it made (version 0 by writer 0), every fault settled or retried, none failed
    drivers = [r for r in result.reports if r["engine"] == "spark"]
    assert len(drivers) == 2, result.reports
    for report in drivers:
        c = report["deltaguard_metrics"]
        assert c is not None, "the source is registered in every driver"
        assert c["commits"] == len(report["committed"]) + (report["writer"] == 0), c
        assert c["failures"] == c["outcomes_unknown"] == 0, c
        assert c["commit_latency"] == c["commits"] + c["conflicts"], c


@pytest.mark.spark
@on("minio")
def test_spark_deltars_and_python_writers_on_minio_lose_nothing(
    localstack, ls_proxy, ls_bucket, tmp_path
):
    """The mixed-engine race: one Spark driver (deltaguard's conditional store), one delta-rs
    writer (its own conditional PUT) and the Python committer append to one table at once, with
    one commit PUT held until a peer took its version."""
    ls_proxy.set_rules([hold_one_commit_put()])
    result = _run(
        localstack,
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
