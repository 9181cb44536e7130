"""The transition commit protocol in Python on LocalStack (S3 + DynamoDB Local): marked entries,
its neighbours (plain DynamoDB writers in phase 1, conditional writers in phase 2), lost
responses on the PutItem and on the create of N.json, and a writer killed after its PutItem
whose version a conditional writer then takes."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.config import Config
from s3_appends import rows, s3_put

from deltaguard.localstack.append_job import arrow_schema
from deltaguard.localstack.delta_append import append, create_table, latest_version
from deltaguard.localstack.fault_proxy import FaultRule
from deltaguard.localstack.multi_driver import kill_when, start_job
from deltaguard.localstack.race import raw_commit_tags
from deltaguard.logstore.dynamodb_table import MARKER_ATTRIBUTE, TRANSITION_MARKER
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore
from deltaguard.logstore.s3_transition import S3TransitionLogStore

COMMIT_PUT = r"/_delta_log/\d{20}\.json$"


def _transition(endpoint: Any, table_name: str, ddb: Any = None) -> S3TransitionLogStore:
    return S3TransitionLogStore(endpoint.s3_client(), ddb or endpoint.dynamodb_client(), table_name)


def _item(endpoint: Any, table_name: str, uri: str, version: int) -> dict[str, Any] | None:
    item: dict[str, Any] | None = (
        endpoint.dynamodb_client()
        .get_item(
            TableName=table_name,
            ConsistentRead=True,
            Key={"tablePath": {"S": uri}, "fileName": {"S": f"{version:020d}.json"}},
        )
        .get("Item")
    )
    return item


def _tags(store: Any, uri: str) -> list[str]:
    """userMetadata of every commit after version 0, in version order."""
    out = []
    for v in range(1, latest_version(store, uri) + 1):
        lines = list(store.read(f"{uri}/_delta_log/{v:020d}.json"))
        info = next(json.loads(line)["commitInfo"] for line in lines if "commitInfo" in line)
        out.append(info["userMetadata"])
    return out


def test_entries_carry_the_marker_and_plain_readers_see_delta_items(
    localstack, ls_bucket, ls_commit_table
):
    uri = f"s3a://{ls_bucket}/t"
    store = _transition(localstack.endpoint, ls_commit_table)
    create_table(store, uri, arrow_schema())
    version = append(store, s3_put(localstack.endpoint), uri, rows("a"), user_metadata="a")
    item = _item(localstack.endpoint, ls_commit_table, uri, version)
    assert item is not None
    assert set(item) == {"tablePath", "fileName", "tempPath", "complete", "expireTime"} | {
        MARKER_ATTRIBUTE
    }
    assert item[MARKER_ATTRIBUTE] == {"S": TRANSITION_MARKER}
    assert item["complete"] == {"S": "true"}
    plain = S3DynamoDBLogStore(
        localstack.endpoint.s3_client(), localstack.endpoint.dynamodb_client(), ls_commit_table
    )
    assert _tags(plain, uri) == ["a"], "a plain DynamoDB reader reads the transition commit"


def _race(uri: str, writers: list[Any], appends: int, endpoint: Any) -> list[int]:
    barrier = threading.Barrier(len(writers))

    def run(w: int) -> list[int]:
        barrier.wait()
        return [
            append(writers[w], s3_put(endpoint), uri, rows(f"w{w}b{b}"), user_metadata=f"w{w}/b{b}")
            for b in range(appends)
        ]

    with ThreadPoolExecutor(len(writers)) as pool:
        return [v for f in [pool.submit(run, w) for w in range(len(writers))] for v in f.result()]


# proves: README and docs/guides/migration.md "the transition store moves a live table without
# stopping a writer; 0 lost, 0 duplicated"
def test_phase_one_next_to_plain_dynamodb_writers_loses_nothing(
    localstack, ls_bucket, ls_commit_table
):
    ep = localstack.endpoint
    uri = f"s3a://{ls_bucket}/t"
    plain = [S3DynamoDBLogStore(ep.s3_client(), ep.dynamodb_client(), ls_commit_table)] * 2
    transition = [_transition(ep, ls_commit_table) for _ in range(2)]
    create_table(plain[0], uri, arrow_schema())
    versions = _race(uri, [*plain, *transition], 3, ep)
    assert sorted(versions) == list(range(1, 13))
    raw = raw_commit_tags(ep.s3_client(), ls_bucket, "t")
    assert sorted(raw) == list(range(13)), "one commit file per version, none missing"
    assert sorted(t for v, t in raw.items() if v > 0) == sorted(
        f"w{w}/b{b}" for w in range(4) for b in range(3)
    )


# proves: README and docs/guides/migration.md "the transition store moves a live table without
# stopping a writer; 0 lost, 0 duplicated"
def test_phase_two_next_to_conditional_writers_loses_nothing(
    localstack, ls_bucket, ls_commit_table
):
    ep = localstack.endpoint
    uri = f"s3a://{ls_bucket}/t"
    transition = [_transition(ep, ls_commit_table) for _ in range(2)]
    conditional = [S3ConditionalLogStore(ep.s3_client()) for _ in range(2)]
    create_table(transition[0], uri, arrow_schema())
    versions = _race(uri, [*transition, *conditional], 3, ep)
    assert sorted(versions) == list(range(1, 13))
    raw = raw_commit_tags(ep.s3_client(), ls_bucket, "t")
    assert sorted(raw) == list(range(13)), "one commit file per version, none missing"
    tags = [t for v, t in raw.items() if v > 0]
    assert sorted(tags) == sorted(f"w{w}/b{b}" for w in range(4) for b in range(3))
    entries = S3DynamoDBLogStore(None, ep.dynamodb_client(), ls_commit_table).entries(uri)
    assert all(e["complete"] for e in entries), "a lost copy race still completes the entry"


def test_lost_putitem_response_is_ours(ls_proxy, localstack, ls_bucket, ls_commit_table):
    uri = f"s3a://{ls_bucket}/t"
    create_table(_transition(localstack.endpoint, ls_commit_table), uri, arrow_schema())
    ddb = boto3.client(
        "dynamodb",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
        **ls_proxy.endpoint.boto3_kwargs(),
    )
    store = _transition(ls_proxy.endpoint, ls_commit_table, ddb)
    ls_proxy.set_rules(
        [
            FaultRule(
                "drop_response",
                method="POST",
                target="PutItem",
                times=1,
                path_regex=r"^/$",
            )
        ]
    )
    version = append(store, s3_put(ls_proxy.endpoint), uri, rows("once"), user_metadata="once")
    assert ls_proxy.fired() == [1]
    assert version == 1 and _tags(store, uri) == ["once"], "committed exactly once"


def test_lost_create_response_is_success_not_a_duplicate(
    ls_proxy, localstack, ls_bucket, ls_commit_table
):
    uri = f"s3a://{ls_bucket}/t"
    create_table(_transition(localstack.endpoint, ls_commit_table), uri, arrow_schema())
    store = _transition(ls_proxy.endpoint, ls_commit_table)
    ls_proxy.set_rules([FaultRule("drop_response", method="PUT", path_regex=COMMIT_PUT, times=1)])
    version = append(store, s3_put(ls_proxy.endpoint), uri, rows("once"), user_metadata="once")
    assert ls_proxy.fired() == [1]
    assert version == 1 and _tags(store, uri) == ["once"]
    assert _item(localstack.endpoint, ls_commit_table, uri, 1)["complete"] == {"S": "true"}


@pytest.mark.slow  # 5-10 s: make test-fast stays under 3 minutes
def test_writer_killed_after_putitem_then_conditional_writer_takes_the_version(
    ls_proxy, localstack, ls_bucket, ls_commit_table, tmp_path
):
    """A transition writer process freezes on its create of N.json (after its marked entry) and
    is SIGKILLed; a conditional writer commits N; a transition reader's listing completes the
    dead entry without touching the conditional writer's N.json."""
    ep = localstack.endpoint
    uri = f"s3a://{ls_bucket}/t"
    direct = _transition(ep, ls_commit_table)
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
            "s3-dynamodb-transition",
            "--dynamodb-table",
            ls_commit_table,
            "--endpoint",
            ls_proxy.endpoint.url,
            "--appends",
            "1",
            "--rows",
            "3",
            "--run-id",
            "killed",
            "--writer",
            "3",
        ],
        tmp_path / "killed.log",
    )
    kill_when(proc, lambda: ls_proxy.fired() == [1], tmp_path / "killed.log", timeout_s=60)
    item = _item(ep, ls_commit_table, uri, 1)
    assert item is not None and item["complete"] == {"S": "false"}
    assert item[MARKER_ATTRIBUTE] == {"S": TRANSITION_MARKER}

    conditional = S3ConditionalLogStore(ep.s3_client())
    version = append(conditional, s3_put(ep), uri, rows("cond"), user_metadata="cond")
    assert version == 1, "the conditional writer sees no version 1 and takes it"
    assert [e.name for e in direct.list_from(f"{uri}/_delta_log/{0:020d}.json")]
    assert _item(ep, ls_commit_table, uri, 1)["complete"] == {"S": "true"}
    assert _tags(direct, uri) == ["cond"], "the conditional commit was never replaced"
    version = append(direct, s3_put(ep), uri, rows("next"), user_metadata="next")
    assert version == 2 and _tags(direct, uri) == ["cond", "next"]
