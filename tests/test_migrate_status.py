"""`deltaguard migrate status` and audit's `mixed-commit-protocols`: the phase of a table moving
from DynamoDB to conditional writes, from its log and its DynamoDB entries."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dynamodb_entries import put_entry
from s3_appends import rows, s3_put

from deltaguard.localstack.append_job import arrow_schema
from deltaguard.localstack.delta_append import append, create_table
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore
from deltaguard.logstore.s3_transition import S3TransitionLogStore
from deltaguard.tools.deltalog.listing import LogListing
from deltaguard.tools.deltalog.protocol_mix import Phase, WriterKind, gather_evidence
from deltaguard.tools.storage import FileInfo

NOW_MS = 1_800_000_000_000


def _listing(mtimes: dict[int, int]) -> LogListing:
    names = {v: f"{v:020d}.json" for v in mtimes}
    return LogListing(
        files={names[v]: FileInfo(f"_delta_log/{names[v]}", 10, ms) for v, ms in mtimes.items()},
        commits=names,
    )


def _entry(version: int, marker: str | None, expire_s: int | None = None) -> dict[str, Any]:
    return {
        "tablePath": "s3a://b/t",
        "fileName": f"{version:020d}.json",
        "tempPath": f".tmp/{version:020d}.json.x",
        "complete": expire_s is not None,
        "expireTime": expire_s,
        "marker": marker,
    }


def test_commits_older_than_the_entries_ttl_are_not_taken_for_conditional_ones():
    hour = 3600_000
    # versions 0-1 long ago (their entries expired), 2-3 recent with plain entries (TTL 24 h)
    listing = _listing({0: NOW_MS - 50 * hour, 1: NOW_MS - 49 * hour, 2: NOW_MS - hour, 3: NOW_MS})
    entries = [_entry(v, None, (NOW_MS - (3 - v) * hour) // 1000 + 86400) for v in (2, 3)]
    ev = gather_evidence(listing, entries, window_s=100 * 3600, now_ms=NOW_MS)
    assert [c.version for c in ev.commits] == [2, 3]
    assert ev.ttl_estimate_s is not None and 86000 < ev.ttl_estimate_s <= 86400
    assert ev.phase() is Phase.DYNAMODB and ev.unsafe_mix() is None


def test_a_plain_commit_above_a_conditional_one_is_the_unsafe_mix():
    listing = _listing({1: NOW_MS - 3000, 2: NOW_MS - 2000, 3: NOW_MS - 1000})
    entries = [
        _entry(1, "transition", NOW_MS // 1000 + 86400),
        _entry(3, None, NOW_MS // 1000 + 86400),
    ]
    ev = gather_evidence(listing, entries, now_ms=NOW_MS)
    assert [c.kind for c in ev.commits] == [
        WriterKind.TRANSITION,
        WriterKind.CONDITIONAL,
        WriterKind.PLAIN,
    ]
    mix = ev.unsafe_mix()
    assert mix is not None and (mix[0].version, mix[1].version) == (2, 3)
    # the same commits with the plain one below the conditional one: not a proven mix
    entries = [
        _entry(1, None, NOW_MS // 1000 + 86400),
        _entry(3, "transition", NOW_MS // 1000 + 86400),
    ]
    ev = gather_evidence(listing, entries, now_ms=NOW_MS)
    assert ev.unsafe_mix() is None and ev.phase() is Phase.TRANSITION


def _status(run_cli, endpoint, table: str, commit_table: str) -> tuple[int, dict[str, Any]]:
    out = run_cli(
        "migrate",
        "status",
        table,
        "--dynamodb-table",
        commit_table,
        "--endpoint",
        endpoint.url,
        "--path-style",
        "--region",
        endpoint.region,
        "--json",
        env=endpoint.credentials_env(),
    )
    assert out.stderr == "", out.stderr
    return out.returncode, json.loads(out.stdout)


def _audit(run_cli, endpoint, table: str, commit_table: str) -> tuple[int, list[str]]:
    out = run_cli(
        "audit",
        table,
        "--dynamodb-table",
        commit_table,
        "--endpoint",
        endpoint.url,
        "--path-style",
        "--region",
        endpoint.region,
        "--json",
        "--no-check-files",
        env=endpoint.credentials_env(),
    )
    return out.returncode, [f["code"] for f in json.loads(out.stdout)["findings"]]


@pytest.mark.slow
def test_status_follows_the_phases_and_audit_finds_the_unsafe_mix(
    localstack, ls_bucket, ls_commit_table, run_cli
):
    ep = localstack.endpoint
    uri = f"s3a://{ls_bucket}/t"
    plain = S3DynamoDBLogStore(ep.s3_client(), ep.dynamodb_client(), ls_commit_table)
    transition = S3TransitionLogStore(ep.s3_client(), ep.dynamodb_client(), ls_commit_table)
    conditional = S3ConditionalLogStore(ep.s3_client())
    create_table(plain, uri, arrow_schema())
    append(plain, s3_put(ep), uri, rows("p1", 1))

    code, status = _status(run_cli, ep, uri, ls_commit_table)
    assert (code, status["phase"]) == (0, "dynamodb")
    assert status["next"].startswith("Phase 1")
    assert status["commits"][-1]["engine_info"], "each commit's engineInfo is evidence"

    append(transition, s3_put(ep), uri, rows("t1", 1))
    code, status = _status(run_cli, ep, uri, ls_commit_table)
    assert (code, status["phase"]) == (0, "transition")
    assert status["next"].startswith("Phase 1 in progress")
    assert status["last_unmarked_entry"]["version"] == 1

    append(conditional, s3_put(ep), uri, rows("c1", 1))
    append(transition, s3_put(ep), uri, rows("t2", 1))
    code, status = _status(run_cli, ep, uri, ls_commit_table)
    assert (code, status["phase"], status["unsafe"]) == (0, "transition", False)
    # (the DynamoDB protocol's temp files are audit warnings of their own: `temp-file`)
    assert "mixed-commit-protocols" not in _audit(run_cli, ep, uri, ls_commit_table)[1]

    append(plain, s3_put(ep), uri, rows("p2", 1))  # a forgotten plain DynamoDB job
    code, status = _status(run_cli, ep, uri, ls_commit_table)
    assert (code, status["unsafe"]) == (1, True)
    assert status["unsafe_mix"] == {"conditional_version": 3, "plain_version": 5}
    code, codes = _audit(run_cli, ep, uri, ls_commit_table)
    # one cause, one finding: the plain writer's marked commit is already unsafe-commit-path
    assert code == 1 and "unsafe-commit-path" in codes and "mixed-commit-protocols" not in codes


def _conditional_table(ep, bucket: str) -> str:
    """``s3a://bucket/t``: created and appended to by the conditional store."""
    uri = f"s3a://{bucket}/t"
    conditional = S3ConditionalLogStore(ep.s3_client())
    create_table(conditional, uri, arrow_schema())
    append(conditional, s3_put(ep), uri, rows("c", 1))
    return uri


def test_conditional_only_table_is_in_the_conditional_phase(
    localstack, ls_bucket, ls_commit_table, run_cli
):
    ep = localstack.endpoint
    uri = _conditional_table(ep, ls_bucket)
    code, status = _status(run_cli, ep, uri, ls_commit_table)
    assert (code, status["phase"]) == (0, "conditional")


def test_unreadable_dynamodb_table_is_exit_2(localstack, ls_bucket, run_cli):
    ep = localstack.endpoint
    uri = f"s3a://{ls_bucket}/t"
    create_table(S3ConditionalLogStore(ep.s3_client()), uri, arrow_schema())
    out = run_cli(
        "migrate",
        "status",
        uri,
        "--dynamodb-table",
        "no_such_table",
        "--endpoint",
        ep.url,
        "--path-style",
        env=ep.credentials_env(),
    )
    assert out.returncode == 2, (
        "no region given: the region rule's us-east-1 (docs/reference/options.md)"
    )
    assert "no_such_table" in out.stderr and "Traceback" not in out.stderr
    out = run_cli(
        "migrate",
        "status",
        uri,
        "--dynamodb-table",
        "no_such_table",
        "--endpoint",
        ep.url,
        "--path-style",
        "--region",
        ep.region,
        env=ep.credentials_env(),
    )
    assert out.returncode == 2
    assert "no_such_table" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
def test_a_single_driver_commit_next_to_a_conditional_writer_is_unsafe(
    localstack, ls_bucket, ls_commit_table, run_cli
):
    """The single-driver branch: a Spark commit without a deltaguard mark, no temp commit and
    no DynamoDB entry (Delta's default store: a plain PUT, here by boto3) after the
    conditional store's commits is unsafe in ``migrate status`` (exit 1, the versions and the
    preset named) and the ``unsafe-commit-path`` of ``audit``; before it, neither."""
    ep = localstack.endpoint
    uri = _conditional_table(ep, ls_bucket)
    code, status = _status(run_cli, ep, uri, ls_commit_table)
    assert (code, status["unsafe"]) == (0, False)
    info = {
        "timestamp": 1,
        "operation": "WRITE",
        "engineInfo": "Apache-Spark/3.5.3 Delta-Lake/3.3.3",
    }
    body = json.dumps({"commitInfo": info}).encode() + b"\n"
    ep.s3_client().put_object(Bucket=ls_bucket, Key=f"t/_delta_log/{2:020d}.json", Body=body)
    code, status = _status(run_cli, ep, uri, ls_commit_table)
    assert (code, status["unsafe"]) == (1, True), status
    assert status["next"].startswith("UNSAFE: versions 2 were committed through Delta's "
                                     "single-driver store"), status["next"]  # fmt: skip
    assert "s3-conditional preset" in status["next"]
    code, codes = _audit(run_cli, ep, uri, ls_commit_table)
    assert code == 1 and "unsafe-commit-path" in codes and "mixed-commit-protocols" not in codes


def test_a_plain_entry_under_a_conditional_commit_is_the_mixed_protocols_finding(
    localstack, ls_bucket, ls_commit_table, run_cli
):
    """The case the commits cannot show: a plain DynamoDB client's entry for a version whose
    ``N.json`` the conditional writer created (the plain writer died before its copy). The
    marked commit is no ``unsafe-commit-path``; the entry makes it ``mixed-commit-protocols``."""
    ep = localstack.endpoint
    uri = _conditional_table(ep, ls_bucket)
    append(S3ConditionalLogStore(ep.s3_client()), s3_put(ep), uri, rows("c2", 1))
    name = f"{2:020d}.json"
    put_entry(ep.dynamodb_client(), ls_commit_table, uri, 2, f".tmp/{name}.0b5e7c1d", complete=True)
    code, codes = _audit(run_cli, ep, uri, ls_commit_table)
    assert code == 1 and "mixed-commit-protocols" in codes and "unsafe-commit-path" not in codes
