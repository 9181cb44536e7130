"""Issue 50 part 1, Python side: each of deltaguard's Python stores marks the commit objects it
creates (``x-amz-meta-deltaguard-commit: <preset>/python/<version>``), read back with a raw
HeadObject (boto3 directly, an oracle independent of deltaguard's reader); the DynamoDB
store's repair copy carries it too. The audit's reader sees the same mark through its GET."""

from __future__ import annotations

import json

import pytest
from dynamodb_entries import put_entry

from deltaguard.logstore.jars import VERSION
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore
from deltaguard.logstore.s3_transition import S3TransitionLogStore
from deltaguard.tools.deltalog.history import read_history
from deltaguard.tools.storage import S3Options

LINE = '{"commitInfo":{"operation":"WRITE","engineInfo":"deltaguard-test"}}'


@pytest.mark.parametrize(
    ("preset", "make"),
    [
        ("s3-conditional", lambda ep, table: S3ConditionalLogStore(ep.s3_client())),
        (
            "s3-dynamodb",
            lambda ep, table: S3DynamoDBLogStore(ep.s3_client(), ep.dynamodb_client(), table),
        ),
        (
            "s3-dynamodb-transition",
            lambda ep, table: S3TransitionLogStore(ep.s3_client(), ep.dynamodb_client(), table),
        ),
    ],
)
def test_each_python_store_marks_its_commits(
    localstack, ls_bucket, ls_commit_table, monkeypatch, preset, make
):
    ep = localstack.endpoint
    for name, value in ep.credentials_env().items():
        monkeypatch.setenv(name, value)
    store = make(ep, ls_commit_table)
    uri = f"s3://{ls_bucket}/t"
    for version in range(2):
        store.write(f"{uri}/_delta_log/{version:020d}.json", [LINE])
    s3 = ep.s3_client()
    for version in range(2):
        head = s3.head_object(Bucket=ls_bucket, Key=f"t/_delta_log/{version:020d}.json")
        assert head["Metadata"] == {"deltaguard-commit": f"{preset}/python/{VERSION}"}
    temp = s3.list_objects_v2(Bucket=ls_bucket, Prefix="t/_delta_log/.tmp/").get("Contents", [])
    for obj in temp:  # temp commits are not commits: no mark
        assert s3.head_object(Bucket=ls_bucket, Key=obj["Key"])["Metadata"] == {}
    history = read_history(uri, s3=S3Options(ep.url, ep.region, True))
    expected = {
        "s3-conditional": "deltaguard-conditional",
        "s3-dynamodb": "deltaguard-dynamodb",
        "s3-dynamodb-transition": "deltaguard-transition",
    }[preset]
    assert [(e.commit_path, e.commit_mark) for e in history] == [
        (expected, f"{preset}/python/{VERSION}")
    ] * 2


def test_the_dynamodb_repair_copy_is_marked(localstack, ls_bucket, ls_commit_table):
    """A writer stopped after its PutItem: the next writer's repair copies the temp commit to
    N.json, with the mark."""
    ep = localstack.endpoint
    store = S3DynamoDBLogStore(ep.s3_client(), ep.dynamodb_client(), ls_commit_table)
    uri = f"s3://{ls_bucket}/r"
    store.write(f"{uri}/_delta_log/{0:020d}.json", [LINE])
    entry = {
        "tablePath": uri,
        "fileName": f"{1:020d}.json",
        "tempPath": f".tmp/{1:020d}.json.stopped",
        "complete": False,
    }
    ep.s3_client().put_object(
        Bucket=ls_bucket, Key=f"r/_delta_log/{entry['tempPath']}", Body=b"x\n"
    )
    store.claim(entry, 1)
    store.write(f"{uri}/_delta_log/{2:020d}.json", [LINE])
    head = ep.s3_client().head_object(Bucket=ls_bucket, Key=f"r/_delta_log/{1:020d}.json")
    assert head["Metadata"] == {"deltaguard-commit": f"s3-dynamodb/python/{VERSION}"}


def test_history_names_delta_dynamodb_commits_by_their_entries(
    localstack, ls_bucket, ls_commit_table, run_cli
):
    """A Spark commit without a mark and without a temp commit left: ``history`` calls it the
    single-driver store's, until ``--dynamodb-table`` shows its version has an entry of
    Delta's DynamoDB store (issue 50 part 1). The commit files are plain PUTs (no mark)."""
    ep = localstack.endpoint
    spark = (
        '{"commitInfo":{"operation":"WRITE","engineInfo":"Apache-Spark/3.5.3 Delta-Lake/3.3.2"}}'
    )
    s3 = ep.s3_client()
    for version in range(2):
        key = f"h/_delta_log/{version:020d}.json"
        s3.put_object(Bucket=ls_bucket, Key=key, Body=spark.encode() + b"\n")
    put_entry(
        ep.dynamodb_client(),
        ls_commit_table,
        f"s3a://{ls_bucket}/h",
        1,
        f".tmp/{1:020d}.json.gone",
        complete=True,
        expire=False,
    )
    uri = f"s3://{ls_bucket}/h"
    s3_args = ["--endpoint", ep.url, "--region", ep.region, "--path-style"]
    ddb_args = ["--dynamodb-table", ls_commit_table, "--dynamodb-endpoint", ep.url]

    def paths(*extra: str) -> list[str]:
        done = run_cli("history", uri, "--json", *s3_args, *extra, env=ep.credentials_env())
        assert done.returncode == 0, done.stderr
        return [e["commit_path"] for e in json.loads(done.stdout)["entries"]]

    assert paths() == ["single-driver", "single-driver"]
    assert paths(*ddb_args) == ["delta-dynamodb", "single-driver"]


def test_provenance_unsafe_writers_and_python_counts_on_minio(minio, minio_bucket):
    """Issue 50 parts 1, 2 and 4 on MinIO (the second S3 server): delta-rs creates the table and
    appends, the Python conditional store appends twice (its counters: 2 commits, 2 attempts),
    then a Spark commit without a mark, temp commit or entry (Delta's default store: a plain
    PUT by boto3). The marks read back with a raw HeadObject; ``history`` names each version's
    writer and path; ``audit`` reports ``unsafe-commit-path`` for that version only once it
    exists."""
    from deltalake import write_deltalake
    from s3_appends import rows, s3_put

    from deltaguard.localstack.delta_append import append
    from deltaguard.tools.deltalog.audit import audit_table

    ep, bucket = minio.endpoint, minio_bucket
    s3 = ep.s3_client()
    uri, opts = f"s3://{bucket}/t", S3Options(ep.url, ep.region, True)
    first = rows("rs", 2)
    for mode in ("error", "append"):
        write_deltalake(uri, first, mode=mode, storage_options=ep.delta_rs_options())
    store = S3ConditionalLogStore(s3)
    for tag in ("c1", "c2"):
        append(store, s3_put(ep), uri, rows(tag, 1))
    counts = store.metrics.snapshot()
    assert (counts.commits, counts.attempts, counts.conflicts) == (2, 2, 0), counts
    for version in (2, 3):
        head = s3.head_object(Bucket=bucket, Key=f"t/_delta_log/{version:020d}.json")
        assert head["Metadata"] == {"deltaguard-commit": f"s3-conditional/python/{VERSION}"}

    def unsafe() -> list[str]:
        report = audit_table(uri, s3=opts, check_files=False)
        return [f.message for f in report.findings if f.code == "unsafe-commit-path"]

    assert unsafe() == [], "delta-rs and the conditional store are safe together"
    info = {
        "timestamp": 1,
        "operation": "WRITE",
        "engineInfo": "Apache-Spark/3.5.3 Delta-Lake/3.3.3",
    }
    body = json.dumps({"commitInfo": info}).encode() + b"\n"
    s3.put_object(Bucket=bucket, Key=f"t/_delta_log/{4:020d}.json", Body=body)
    got = {e.version: (str(e.writer), str(e.commit_path)) for e in read_history(uri, s3=opts)}
    assert got == {
        0: ("delta-rs", "conditional-put"),
        1: ("delta-rs", "conditional-put"),
        2: ("other", "deltaguard-conditional"),  # the test bed's appender: its own engineInfo
        3: ("other", "deltaguard-conditional"),
        4: ("spark", "single-driver"),
    }, got
    found = unsafe()
    assert len(found) == 1 and "(version 4) written by spark via single-driver" in found[0], found
    assert "s3-conditional preset" in found[0], found
