"""The DynamoDB commit protocol in Python on LocalStack (S3 + DynamoDB Local): mutual
exclusion (free-running and as a staged race), lost PutItem responses, and recovery of a
writer killed after its commit point. The races' oracle is the raw log: the commit files
listed and parsed with boto3 and ``json`` (:func:`~deltaguard.localstack.race.raw_commit_tags`),
against the ledger of what each writer was told."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from dynamodb_entries import put_entry
from s3_appends import rows, s3_put

from deltaguard.localstack.append_job import arrow_schema
from deltaguard.localstack.delta_append import append, create_table
from deltaguard.localstack.fault_proxy import FaultRule
from deltaguard.localstack.multi_driver import kill_when, start_job
from deltaguard.localstack.race import hold_one_dynamodb_claim, raw_commit_tags
from deltaguard.logstore.errors import LogFileExistsError
from deltaguard.logstore.s3_dynamodb import CommitTableMissingError, S3DynamoDBLogStore
from deltaguard.logstore.s3_location import S3Location

COMMIT_PUT = r"/_delta_log/\d{20}\.json$"


def _store(endpoint, table_name: str) -> S3DynamoDBLogStore:
    return S3DynamoDBLogStore(endpoint.s3_client(), endpoint.dynamodb_client(), table_name)


def _item(endpoint, table_name: str, table_uri: str, version: int) -> dict | None:
    return (
        endpoint.dynamodb_client()
        .get_item(
            TableName=table_name,
            ConsistentRead=True,
            Key={"tablePath": {"S": table_uri}, "fileName": {"S": f"{version:020d}.json"}},
        )
        .get("Item")
    )


def test_entry_schema_matches_delta(localstack, ls_bucket, ls_commit_table):
    store = _store(localstack.endpoint, ls_commit_table)
    uri = f"s3a://{ls_bucket}/t"
    create_table(store, uri, arrow_schema())
    item = _item(localstack.endpoint, ls_commit_table, uri, 0)
    assert set(item) == {"tablePath", "fileName", "tempPath", "complete", "expireTime"}
    assert item["tablePath"] == {"S": uri} and item["complete"] == {"S": "true"}
    assert item["tempPath"]["S"].startswith(".tmp/00000000000000000000.json.")
    assert int(item["expireTime"]["N"]) > time.time() + 86000
    with pytest.raises(LogFileExistsError):
        create_table(store, uri, arrow_schema())


def _assert_raw_log_holds(endpoint, bucket: str, acked: dict[str, int]) -> None:
    """The raw log of table ``t`` (boto3 + json, not a LogStore) holds every acknowledged
    append (``acked``: tag -> the version ``append()`` returned) once, at that version, and
    nothing else; its versions are contiguous from 0."""
    tags = raw_commit_tags(endpoint.s3_client(), bucket, "t")
    assert sorted(tags) == list(range(len(acked) + 1)), f"versions contiguous: {sorted(tags)}"
    data = [tags[v] for v in range(1, len(acked) + 1)]
    assert sorted(data) == sorted(acked), "each acknowledged append once, no other commit"
    assert {tags[v]: v for v in range(1, len(acked) + 1)} == acked, "at the version returned"


def _writers(endpoint, bucket: str, commit_table: str, writers: int, appends: int):
    """``writers`` threads released together, ``appends`` appends each to table ``t``;
    the ledger: tag -> the version each append was told it committed."""
    uri = f"s3a://{bucket}/t"
    barrier = threading.Barrier(writers)

    def writer(w: int) -> list[tuple[str, int]]:
        store = _store(endpoint, commit_table)
        put = s3_put(endpoint)
        barrier.wait()
        out = []
        for b in range(appends):
            tag = f"w{w}/b{b}"
            out.append((tag, append(store, put, uri, rows(tag, 5), user_metadata=tag)))
        return out

    with ThreadPoolExecutor(writers) as pool:
        futures = [pool.submit(writer, w) for w in range(writers)]
        return dict(pair for f in futures for pair in f.result())


@pytest.mark.parametrize(
    "appends",
    [pytest.param(5, marks=pytest.mark.slow), pytest.param(10, marks=pytest.mark.long)],
)
def test_concurrent_python_writers_lose_nothing(localstack, ls_bucket, ls_commit_table, appends):
    """6 threads race from a barrier; every append gets its own version, none is lost."""
    # proves: README "the DynamoDB store never loses a commit" (free-running writers)
    uri = f"s3a://{ls_bucket}/t"
    create_table(_store(localstack.endpoint, ls_commit_table), uri, arrow_schema())
    acked = _writers(localstack.endpoint, ls_bucket, ls_commit_table, 6, appends)
    assert len(acked) == 6 * appends
    _assert_raw_log_holds(localstack.endpoint, ls_bucket, acked)


def test_staged_claim_race_loses_nothing(ls_proxy, localstack, ls_bucket, ls_commit_table):
    """The staged race of the DynamoDB protocol: the first claim (conditional PutItem) of a
    data version is held by the proxy, after its writer read the latest version, until
    another writer's claim of the same version is answered. The held claim is refused
    (ConditionalCheckFailed), its writer retries at the next version: every append the
    writers were told succeeded is in the raw log once, versions contiguous."""
    # proves: README "the DynamoDB store never loses a commit" (the staged race)
    create_table(
        _store(localstack.endpoint, ls_commit_table), f"s3a://{ls_bucket}/t", arrow_schema()
    )
    ls_proxy.set_rules([hold_one_dynamodb_claim(timeout_s=60)])
    acked = _writers(ls_proxy.endpoint, ls_bucket, ls_commit_table, 3, 2)
    assert ls_proxy.fired() == [1], "one claim was held"
    [held] = ls_proxy.held()
    assert held["released_by_peer"], f"a peer's claim of the same version came first: {held}"
    assert held["status"] == 400, f"the held claim was refused (ConditionalCheckFailed): {held}"
    assert len(acked) == 6
    _assert_raw_log_holds(localstack.endpoint, ls_bucket, acked)


# proves: docs/guides/commit-path.md and docs/guides/streaming.md "a lost response is settled by
# reading it back, never a duplicate"
def test_lost_putitem_response_is_ours_not_a_conflict(
    ls_proxy, localstack, ls_bucket, ls_commit_table
):
    """The PutItem lands, its response is dropped, botocore... (retries off) - the store's own
    retry path: a conditional failure against our own entry is success, not a conflict."""
    store = _store(ls_proxy.endpoint, ls_commit_table)
    uri = f"s3a://{ls_bucket}/t"
    create_table(store, uri, arrow_schema())
    import boto3
    from botocore.config import Config

    # this client retries once: the retry of the landed PutItem fails its condition
    ddb = boto3.client(
        "dynamodb",
        config=Config(retries={"total_max_attempts": 2, "mode": "standard"}),
        **ls_proxy.endpoint.boto3_kwargs(),
    )
    retrying = S3DynamoDBLogStore(ls_proxy.endpoint.s3_client(), ddb, ls_commit_table)
    ls_proxy.set_rules(
        [
            FaultRule(
                "drop_response",
                method="POST",
                header_present="x-amz-target",
                times=1,
                path_regex=r"^/$",
            )
        ]
    )
    version = append(
        retrying, s3_put(ls_proxy.endpoint), uri, rows("once", 5), user_metadata="once"
    )
    assert ls_proxy.fired() == [1]
    assert version == 1
    assert raw_commit_tags(localstack.endpoint.s3_client(), ls_bucket, "t") == {
        0: None,
        1: "once",
    }, "committed exactly once, at version 1 (the raw log)"


# proves: docs/guides/commit-path.md "a DynamoDB writer killed after its commit point loses nothing:
# the next writer or reader repairs N"
def test_writer_killed_after_commit_point_is_repaired(
    ls_proxy, localstack, ls_bucket, ls_commit_table, tmp_path
):
    """A Python writer process freezes on the copy T(N) -> N.json (after its DynamoDB entry)
    and is killed with SIGKILL. The next writer repairs N first; nothing is lost."""
    uri = f"s3a://{ls_bucket}/t"
    direct = _store(localstack.endpoint, ls_commit_table)
    create_table(direct, uri, arrow_schema())
    ls_proxy.set_rules(
        [FaultRule("hang", method="PUT", path_regex=COMMIT_PUT, times=1, delay_s=120)]
    )
    proc = start_job(
        [
            "append",
            "--engine",
            "python",
            "--table",
            uri,
            "--logstore",
            "s3-dynamodb",
            "--dynamodb-table",
            ls_commit_table,
            "--endpoint",
            ls_proxy.endpoint.url,
            "--appends",
            "1",
            "--rows",
            "7",
            "--run-id",
            "killed",
            "--writer",
            "3",
        ],
        tmp_path / "killed.log",
    )
    kill_when(proc, lambda: ls_proxy.fired() == [1], tmp_path / "killed.log", timeout_s=60)
    item = _item(localstack.endpoint, ls_commit_table, uri, 1)
    assert item["complete"] == {"S": "false"}, "killed after the commit point, before completion"
    s3 = localstack.endpoint.s3_client()
    loc = S3Location.parse(f"{uri}/_delta_log/{1:020d}.json")
    assert "Contents" not in s3.list_objects_v2(Bucket=loc.bucket, Prefix=loc.key)

    version = append(
        direct, s3_put(localstack.endpoint), uri, rows("next", 5), user_metadata="next"
    )
    assert version == 2, "the next writer repaired version 1 and committed after it"
    tags = raw_commit_tags(localstack.endpoint.s3_client(), ls_bucket, "t")
    assert tags == {0: None, 1: "killed/w3/b0", 2: "next"}, "the raw log"
    assert _item(localstack.endpoint, ls_commit_table, uri, 1)["complete"] == {"S": "true"}


def test_reader_listing_repairs_incomplete_latest_entry(localstack, ls_bucket, ls_commit_table):
    uri = f"s3a://{ls_bucket}/t"
    store = _store(localstack.endpoint, ls_commit_table)
    create_table(store, uri, arrow_schema())
    # a writer that stopped right after its commit point: temp file + incomplete entry
    s3, ddb = localstack.endpoint.s3_client(), localstack.endpoint.dynamodb_client()
    temp = f".tmp/{1:020d}.json.dead-writer"
    loc = S3Location.parse(f"{uri}/_delta_log/{temp}")
    s3.put_object(Bucket=loc.bucket, Key=loc.key, Body=b'{"commitInfo":{"txnId":"dead"}}\n')
    put_entry(ddb, ls_commit_table, uri, 1, temp, complete=False)
    names = [e.name for e in store.list_from(f"{uri}/_delta_log/{0:020d}.json")]
    assert f"{1:020d}.json" in names
    assert list(store.read(f"{uri}/_delta_log/{1:020d}.json")) == [
        '{"commitInfo":{"txnId":"dead"}}'
    ]
    assert _item(localstack.endpoint, ls_commit_table, uri, 1)["complete"] == {"S": "true"}


def test_missing_table_is_a_clear_error(localstack, ls_bucket):
    store = _store(localstack.endpoint, "no_such_commit_table")
    with pytest.raises(CommitTableMissingError, match="dynamodb create-table no_such_commit_table"):
        create_table(store, f"s3a://{ls_bucket}/t", arrow_schema())
