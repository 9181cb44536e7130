"""``deltaguard repair --yes`` stopped by a real signal while its commit is in flight, on
LocalStack behind the fault proxy: the signal is sent when the proxy reports that it holds the
repair's commit PUT (never forwarded: nothing lands) or the read-back of a commit whose PUT
landed and whose answer was lost. The output (lines, ``--json``, exit code) must be a true
record: it never says "committed" for a commit the log does not hold, and when the commit
landed it says a commit of that version was in flight and may have landed. The log, read raw
(the S3 listing and the commit's own bytes) and by delta-rs, is the oracle."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from typing import Any

import pytest
from child_signals import default_sigint
from conftest import DELTAGUARD
from deltalake import DeltaTable
from s3_appends import rows, s3_put

from deltaguard.localstack.append_job import arrow_schema
from deltaguard.localstack.delta_append import BlindAppender, create_table
from deltaguard.localstack.fault_proxy import FaultProxy, FaultRule
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.logstore.s3_location import S3Location

COMMIT = r"/_delta_log/\d{20}\.json$"
#: The version the repair commits: the table is versions 0-2 (create, two appends).
REPAIR_VERSION = 3


def _damaged_table(endpoint: Any, uri: str) -> str:
    """Versions 0-2 (create, two appends), one live file deleted; returns its path."""
    store = S3ConditionalLogStore(endpoint.s3_client())
    create_table(store, uri, arrow_schema())
    for tag in ("a", "b"):
        BlindAppender(store, s3_put(endpoint), uri).append(rows(tag))
    dt = DeltaTable(uri, storage_options=endpoint.delta_rs_options())
    victim = sorted(dt.file_uris())[0]
    loc = S3Location.parse(victim)
    endpoint.s3_client().delete_object(Bucket=loc.bucket, Key=loc.key)
    return victim.removeprefix(uri + "/")


def _log_versions(endpoint: Any, uri: str) -> dict[int, list[dict[str, Any]]]:
    """The commits in the raw S3 listing of ``_delta_log/``, parsed."""
    loc = S3Location.parse(f"{uri}/_delta_log/")
    s3 = endpoint.s3_client()
    out = {}
    for obj in s3.list_objects_v2(Bucket=loc.bucket, Prefix=loc.key).get("Contents", []):
        name = obj["Key"].rsplit("/", 1)[-1]
        if len(name) == 25 and name.endswith(".json") and name[:20].isdigit():
            body = s3.get_object(Bucket=loc.bucket, Key=obj["Key"])["Body"].read().decode()
            out[int(name[:20])] = [json.loads(x) for x in body.splitlines() if x.strip()]
    return out


def _interrupted_repair(
    proxy: FaultProxy, endpoint: Any, uri: str, fired: list[int], signum: int, *extra: str
) -> subprocess.CompletedProcess[str]:
    """Runs ``repair --yes`` through ``proxy`` and sends ``signum`` once the proxy's rules have
    fired ``fired`` times (the repair is then held at that request)."""
    args = [DELTAGUARD, "repair", uri, "--yes", "--endpoint", proxy.endpoint.url]
    args += ["--region", endpoint.region, "--path-style", *extra]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **endpoint.credentials_env()},
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 120
    while proxy.fired() != fired:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"repair never reached the held request: {proxy.fired()}\n{out}\n{err}")
        time.sleep(0.05)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


# proves: docs/guides/repair.md "Interrupted: each line is printed when its step is done (...),
# so the output is a true record of what was done."
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_while_the_commit_put_is_held_writes_nothing_and_says_so(
    ls_proxy, localstack, ls_bucket, signum
):
    endpoint = localstack.endpoint
    uri = f"s3://{ls_bucket}/held"
    _damaged_table(endpoint, uri)
    ls_proxy.set_rules([FaultRule("hang", method="PUT", path_regex=COMMIT, times=1, delay_s=120)])
    out = _interrupted_repair(ls_proxy, endpoint, uri, [1], signum)
    record = out.stdout + out.stderr
    assert sorted(_log_versions(endpoint, uri)) == [0, 1, 2], "nothing was written"
    assert "committed version" not in record, record
    assert out.returncode == 128 + signum, record
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("deltaguard repair: "), record
    assert "dangling:" in out.stdout, "the plan was printed before the commit"
    assert f"the commit of version {REPAIR_VERSION} was in flight and may have landed" in (
        out.stderr
    )


# proves: docs/guides/repair.md "Interrupted: each line is printed when its step is done (...),
# so the output is a true record of what was done."
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_after_the_commit_landed_unanswered_says_it_may_have_landed(
    ls_proxy, localstack, ls_bucket, signum
):
    """The commit PUT lands but its answer is lost (the proxy resets the connection), and the
    read-back that would settle it is held: the signal then. The log holds the FSCK commit; the
    JSON record names the version in flight and never claims nothing was written."""
    endpoint = localstack.endpoint
    uri = f"s3://{ls_bucket}/landed-{signum.name}"
    victim = _damaged_table(endpoint, uri)
    ls_proxy.set_rules(
        [
            FaultRule("drop_response", method="PUT", path_regex=COMMIT, times=1),
            FaultRule("hang", method="GET", path_regex=COMMIT, after=0, times=1, delay_s=120),
        ]
    )
    out = _interrupted_repair(ls_proxy, endpoint, uri, [1, 1], signum, "--json")
    log = _log_versions(endpoint, uri)
    assert sorted(log) == [0, 1, 2, REPAIR_VERSION], "the commit landed"
    fsck = log[REPAIR_VERSION]
    assert fsck[0]["commitInfo"]["operation"] == "FSCK"
    assert [a["remove"]["path"] for a in fsck if "remove" in a] == [victim]
    report = json.loads(out.stdout)
    assert report["committed_version"] is None and report["in_flight"] == REPAIR_VERSION, report
    assert (
        f"the commit of version {REPAIR_VERSION} was in flight and may have landed"
        in (report["error"])
    )
    assert report["exit_code"] == out.returncode == 128 + signum
    assert report["error"] in out.stderr
    dt = DeltaTable(uri, storage_options=endpoint.delta_rs_options())
    assert dt.version() == REPAIR_VERSION
    assert f"{uri}/{victim}" not in dt.file_uris()
    assert dt.to_pyarrow_table().num_rows == 3, "the other append's rows are read"
