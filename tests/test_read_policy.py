"""Read-only jobs use the *read* client policy (botocore retries) and the probe's create checks
the commit protocol's settled create: injected 503 SlowDown answers (the fault proxy in front of
LocalStack) are retried, never reported as damage or as an unsafe store."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deltaguard.localstack.fault_proxy import FaultRule
from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.localstack.table_copies import upload_table
from deltaguard.logstore.clients import ClientPolicy, s3_client
from deltaguard.tools.orphans import read_manifest

DELTAGUARD = str(Path(sys.executable).with_name("deltaguard"))
CREDS = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_DEFAULT_REGION": "us-east-1",
}
DAY = 86_400_000


def _slowdown(method: str, rate: float, times: int | None = None) -> FaultRule:
    return FaultRule("error", method=method, rate=rate, times=times, status=503, code="SlowDown")


def _probe(
    run_cli, proxy, bucket: str, writers: int, rounds: int
) -> subprocess.CompletedProcess[str]:
    endpoint = ["--endpoint", proxy.endpoint.url, "--path-style", "--json"]
    sizes = ["--writers", str(writers), "--rounds", str(rounds)]
    return run_cli("probe", f"s3://{bucket}/lake", *endpoint, *sizes, env=CREDS)


def _synthetic(root: Path) -> SyntheticTable:
    """12 commits with a checkpoint at 8, 20 live files, 4 removed ones, 6 orphans."""
    now = int(time.time() * 1000)
    t = SyntheticTable(root)
    t.create(now - 10 * DAY)
    for i in range(10):
        rels = [f"p={i % 3}/f{i}-{j}.parquet" for j in (0, 1)]
        sizes = [t.write_parquet(r, now - 9 * DAY, [i]) for r in rels]
        adds = [t.add_action(r, now - 9 * DAY, size=n) for r, n in zip(rels, sizes, strict=True)]
        t.commit([{"add": a} for a in adds], now - 9 * DAY + i)
        if i == 7:
            t.checkpoint()
    gone = [k for k in list(t.live)[:4]]
    t.commit([{"remove": t.remove_action(k, now - 8 * DAY)} for k in gone], now - 8 * DAY)
    for j in range(6):
        t.write_file(f"p={j % 3}/orphan-{j}.parquet", now - 8 * DAY)
    return t


def test_policies_are_named_and_differ():
    commit = s3_client(policy=ClientPolicy.COMMIT, region="us-east-1")
    read = s3_client(policy=ClientPolicy.READ, region="us-east-1")
    assert commit.meta.config.retries["total_max_attempts"] == 1
    assert read.meta.config.retries["mode"] == "standard"
    assert 1 < read.meta.config.retries["total_max_attempts"] <= 10  # bounded, but retried


@pytest.mark.slow
def test_audit_under_10_percent_slowdown_is_healthy(
    run_cli, ls_proxy, localstack, ls_bucket, tmp_path
):
    _synthetic(tmp_path / "t")
    for f in (tmp_path / "t").rglob("orphan-*"):
        f.unlink()  # audit does not care about orphans; keep the table healthy
    uri = upload_table(tmp_path / "t", localstack.endpoint.s3_client(), ls_bucket, "t")
    clean = run_cli(
        "audit", uri, "--endpoint", localstack.endpoint.url, "--path-style", "--json", env=CREDS
    )
    assert clean.returncode == 0, clean.stdout + clean.stderr
    ls_proxy.set_rules([_slowdown("GET", 0.10), _slowdown("HEAD", 0.10)])
    for _ in range(3):  # several runs: many more GETs and LISTs than one audit makes
        out = run_cli(
            "audit", uri, "--endpoint", ls_proxy.endpoint.url, "--path-style", "--json", env=CREDS
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert out.stderr == "", "retried throttles are not even worth a warning"
        doc = json.loads(out.stdout)
        assert doc["healthy"] is True and doc["findings"] == []
        assert doc["summary"]["live_files"] == json.loads(clean.stdout)["summary"]["live_files"]
        history = run_cli(
            "history", uri, "--endpoint", ls_proxy.endpoint.url, "--path-style", env=CREDS
        )
        assert history.returncode == 0, history.stderr
    fired = ls_proxy.fired()[0]
    assert fired >= 3, f"only {fired} faults were injected: the test proves nothing"


def test_probe_with_503_on_first_attempts_is_safe(run_cli, ls_proxy, ls_bucket):
    ls_proxy.set_rules(
        [
            _slowdown("PUT", 0.5, times=8),  # creates: the if-none-match check and the race
            _slowdown("GET", 0.5, times=3),  # read-backs
            _slowdown("HEAD", 1.0, times=1),  # HeadBucket
        ]
    )
    out = _probe(run_cli, ls_proxy, ls_bucket, writers=4, rounds=5)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr == ""
    report = json.loads(out.stdout)
    assert report["recommended_preset"] == "s3-conditional" and report["decided"] is True
    assert {c["name"]: c["status"] for c in report["checks"]} == {
        "access": "pass",
        "if-none-match": "pass",
        "atomicity": "pass",
    }
    assert ls_proxy.fired()[0] >= 4 and ls_proxy.fired()[2] == 1


@pytest.mark.slow
def test_probe_that_cannot_settle_says_undecided_not_unsafe(run_cli, ls_proxy, ls_bucket):
    ls_proxy.set_rules([_slowdown("PUT", 1.0)])  # every create fails: nothing can be decided
    out = _probe(run_cli, ls_proxy, ls_bucket, writers=2, rounds=1)
    assert out.returncode == 2, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["decided"] is False and report["safe"] is False
    assert "could not decide" in report["verdict"]
    assert {c["name"]: c["status"] for c in report["checks"]}["if-none-match"] == "undecided"


def test_probe_of_a_store_that_does_not_implement_conditional_puts_says_unsafe(
    run_cli, ls_proxy, ls_bucket
):
    """501 NotImplemented is the store's definite answer, not a transient error: the probe
    says unsafe (exit 1) at once instead of retrying into "could not decide"."""
    ls_proxy.set_rules(
        [FaultRule("error", method="PUT", rate=1.0, status=501, code="NotImplemented")]
    )
    out = _probe(run_cli, ls_proxy, ls_bucket, writers=2, rounds=1)
    assert out.returncode == 1, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["decided"] is True and report["safe"] is False
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["if-none-match"]["status"] == "fail"
    assert "NotImplemented" in checks["if-none-match"]["detail"]
    # One PUT for the create check and one per racing writer: no retry loop on a 501.
    assert ls_proxy.fired()[0] == 1 + 2


def _remaining(localstack, bucket: str, prefix: str) -> set[str]:
    s3 = localstack.endpoint.s3_client()
    keys: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        keys |= {o["Key"][len(prefix) + 1 :] for o in page.get("Contents", [])}
    return keys


@pytest.mark.slow  # 5-10 s: make test-fast stays under 3 minutes
def test_cleanup_under_503_deletes_the_same_set(run_cli, ls_proxy, localstack, ls_bucket, tmp_path):
    _synthetic(tmp_path / "t")
    (tmp_path / "t" / "_delta_log" / ".00000000000000000003.json.0c1d.tmp").write_text("x")
    s3 = localstack.endpoint.s3_client()
    upload_table(tmp_path / "t", s3, ls_bucket, "calm")
    upload_table(tmp_path / "t", s3, ls_bucket, "stormy")
    time.sleep(1.1)  # S3 mtimes have second precision: every upload is before the cut-off
    args = ["--retention", "0", "--unsafe-retention", "--delete", "--yes", "--json"]
    calm = run_cli(
        "orphans",
        f"s3://{ls_bucket}/calm",
        "--endpoint",
        localstack.endpoint.url,
        "--path-style",
        "--manifest",
        str(tmp_path / "calm"),
        *args,
        env=CREDS,
    )
    assert calm.returncode == 0, calm.stdout + calm.stderr
    ls_proxy.set_rules(
        [_slowdown("GET", 0.10), _slowdown("HEAD", 0.10), _slowdown("POST", 0.3, times=2)]
    )
    stormy = run_cli(
        "orphans",
        f"s3://{ls_bucket}/stormy",
        "--endpoint",
        ls_proxy.endpoint.url,
        "--path-style",
        "--manifest",
        str(tmp_path / "stormy"),
        *args,
        env=CREDS,
    )
    assert stormy.returncode == 0, stormy.stdout + stormy.stderr
    assert sum(ls_proxy.fired()) >= 2, ls_proxy.stats()
    deleted = {name: read_manifest(tmp_path / name).paths("deleted") for name in ("calm", "stormy")}
    assert len(deleted["calm"]) == 7  # 6 orphans + the log temp file
    assert deleted["stormy"] == deleted["calm"]
    assert _remaining(localstack, ls_bucket, "stormy") == _remaining(localstack, ls_bucket, "calm")
