"""The second real S3 server: versitygw (the Versity S3 Gateway), independent of LocalStack.

The store-side assumption (If-None-Match: * is honoured atomically) is checked here on a server
users run on-premises: the probe's verdict, the Python protocol's fault tests through the fault
proxy (imported from test_python_logstore.py and run with this module's fixtures, so they are
the same tests, not copies; the strip-If-None-Match test is not among them: versitygw verifies
signatures, and a proxy that strips a signed header gets 403 SignatureDoesNotMatch, not an
ignoring store), mutual exclusion of Python writers, and the staged Spark race
through deltaguard's conditional store (test_spark_commits.py's machinery, endpoint swapped).
The soak on versitygw is in test_soak.py.

In this module the fixtures ``localstack``, ``ls_bucket`` and ``ls_proxy`` that the imported
tests ask for are versitygw, a bucket on it and a fault proxy in front of it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_python_logstore import (  # noqa: F401 (collected here, run against versitygw)
    test_access_denied_fails_fast,
    test_budget_exhausted_names_key_and_error,
    test_connection_reset_is_retried,
    test_lost_response_is_success_not_duplicate,
    test_probe_survives_lost_response_and_throttling,
    test_python_writers_never_lose_commits_on_localstack,
    test_transient_errors_are_retried_conditionally,
)
from test_spark_commits import ROWS, _assert_nothing_lost, _run

from deltaguard.localstack.fault_proxy import FaultProxy
from deltaguard.localstack.race import hold_one_commit_put
from deltaguard.localstack.versitygw_server import VersityGWServer
from deltaguard.logstore.preset_name import PresetName


@pytest.fixture
def localstack(versitygw: VersityGWServer) -> VersityGWServer:
    """The server under test (named as the imported tests expect)."""
    return versitygw


@pytest.fixture
def ls_bucket(versitygw: VersityGWServer) -> str:
    name = f"dg-{uuid.uuid4().hex[:12]}"
    versitygw.endpoint.s3_client().create_bucket(Bucket=name)
    return name


@pytest.fixture
def ls_proxy(versitygw: VersityGWServer, tmp_path: Path) -> Iterator[FaultProxy]:
    with FaultProxy(versitygw.endpoint, tmp_path, seed=7) as proxy:
        yield proxy


def test_probe_says_versitygw_is_safe(versitygw, ls_bucket, run_cli):
    out = run_cli(
        "probe",
        f"s3://{ls_bucket}/lake",
        "--endpoint",
        versitygw.endpoint.url,
        "--path-style",
        "--json",
        "--writers",
        "8",
        "--rounds",
        "20",
        env={**versitygw.endpoint.credentials_env(), "AWS_DEFAULT_REGION": "us-east-1"},
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
    listed = versitygw.endpoint.s3_client().list_objects_v2(Bucket=ls_bucket)
    assert listed.get("Contents", []) == [], "probe keys deleted"


@pytest.mark.spark
def test_staged_spark_race_on_versitygw_loses_nothing(versitygw, ls_proxy, ls_bucket, tmp_path):
    """Two Spark drivers and one Python writer through deltaguard's conditional store; the proxy
    holds one commit PUT until a peer wrote that version: the held PUT must get 412."""
    ls_proxy.set_rules([hold_one_commit_put()])
    result = _run(
        versitygw,
        ls_proxy,
        ls_bucket,
        tmp_path,
        PresetName.S3_CONDITIONAL,
        2,
        5,
        python_writers=1,
    )
    assert ls_proxy.fired() == [1], "the race was staged"
    _assert_nothing_lost(result, 15)
    assert result.found_rows == 15 * ROWS
