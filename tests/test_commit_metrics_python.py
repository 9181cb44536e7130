"""Issue 50 part 4, Python side: each Python store's ``metrics`` counts its commits with the
JVM source's names, on LocalStack (through the fault proxy for a lost response): a commit, a
settled lost response, a conflict lost to another writer; files that are not commits (an
overwrite, ``_last_checkpoint``) are not counted."""

from __future__ import annotations

import pytest

from deltaguard.localstack.fault_proxy import FaultRule
from deltaguard.logstore.commit_metrics import CommitCounts
from deltaguard.logstore.errors import LogFileExistsError
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore
from deltaguard.logstore.s3_transition import S3TransitionLogStore

COMMIT_RE = r"/_delta_log/\d{20}\.json$"
LINE = '{"commitInfo":{"operation":"WRITE"}}'


def _uri(bucket: str, version: int) -> str:
    return f"s3://{bucket}/t/_delta_log/{version:020d}.json"


def _counts(store: S3ConditionalLogStore | S3DynamoDBLogStore) -> dict[str, int]:
    """The integer counters (the latency sum is a measurement, not asserted)."""
    snap = store.metrics.snapshot()
    return {k: v for k, v in vars(snap).items() if k != "commit_latency_seconds"}


def _expected(**counts: int) -> dict[str, int]:
    return {k: v for k, v in vars(CommitCounts(**counts)).items() if k != "commit_latency_seconds"}


def test_conditional_store_counts_commits_settles_and_conflicts(ls_proxy, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    mine = S3ConditionalLogStore(s3, base_delay_s=0.01)
    theirs = S3ConditionalLogStore(s3, base_delay_s=0.01)
    mine.write(_uri(ls_bucket, 0), [LINE])
    mine.write(f"s3://{ls_bucket}/t/_delta_log/_last_checkpoint", ["{}"], overwrite=True)
    ls_proxy.set_rules([FaultRule("drop_response", method="PUT", path_regex=COMMIT_RE, times=1)])
    mine.write(_uri(ls_bucket, 1), ['{"commitInfo":{"txnId":"mine"}}'])
    assert ls_proxy.fired() == [1], "the response of version 1's PUT was lost"
    with pytest.raises(LogFileExistsError):
        theirs.write(_uri(ls_bucket, 1), ['{"commitInfo":{"txnId":"theirs"}}'])
    assert _counts(mine) == _expected(commits=2, attempts=2, settles=1)
    assert _counts(theirs) == _expected(conflicts=1, attempts=1)
    assert mine.metrics.snapshot().commit_latency_seconds > 0


@pytest.mark.parametrize(
    ("store_class", "requests_per_commit"),
    # a conditional PutItem; the transition store also the conditional PUT of N.json
    [(S3DynamoDBLogStore, 1), (S3TransitionLogStore, 2)],
)
def test_dynamodb_stores_count_commits_and_conflicts(
    localstack, ls_bucket, ls_commit_table, monkeypatch, store_class, requests_per_commit
):
    ep = localstack.endpoint
    for name, value in ep.credentials_env().items():
        monkeypatch.setenv(name, value)
    mine = store_class(ep.s3_client(), ep.dynamodb_client(), ls_commit_table)
    theirs = store_class(ep.s3_client(), ep.dynamodb_client(), ls_commit_table)
    for version in range(2):
        mine.write(_uri(ls_bucket, version), [LINE])
    with pytest.raises(LogFileExistsError):
        theirs.write(_uri(ls_bucket, 1), [LINE])
    assert _counts(mine) == _expected(commits=2, attempts=2 * requests_per_commit)
    # N.json already there: lost before sending a conditional request
    assert _counts(theirs) == _expected(conflicts=1)
