"""End to end through the DynamoDB LogStore: Spark driver processes (and Python writers) on one
s3a:// table on LocalStack, with DynamoDB Local behind LocalStack as the commit authority.
Besides the reader, the oracle of lost commits is the raw log: the commit files listed and
parsed with boto3 and ``json`` (:func:`~deltaguard.localstack.race.raw_commit_tags`)."""

from __future__ import annotations

import re

import pytest

from deltaguard.localstack.fault_proxy import FaultRule
from deltaguard.localstack.multi_driver import (
    MultiDriverResult,
    kill_when,
    run_multi_driver,
    start_job,
    verify_table,
)
from deltaguard.localstack.race import hold_one_dynamodb_claim, raw_commit_tags
from deltaguard.logstore.preset_name import PresetName

pytestmark = pytest.mark.spark
ROWS = 10


def _run(
    localstack, proxy, bucket, commit_table, tmp_path, writers, appends, python_writers=0, **kw
):
    return run_multi_driver(
        f"s3a://{bucket}/events",
        writer_endpoint_url=proxy.endpoint.url,
        reader_endpoint_url=localstack.endpoint.url,
        logstore=PresetName.S3_DYNAMODB,
        dynamodb_table=commit_table,
        writers=writers,
        python_writers=python_writers,
        appends=appends,
        rows=ROWS,
        workdir=tmp_path,
        **kw,
    )


def _assert_raw_log_holds_each_once(localstack, bucket: str, result: MultiDriverResult) -> None:
    """The raw log (boto3 + json, no LogStore) holds every append a writer was told
    succeeded exactly once, and no other data commit; versions contiguous from 0."""
    raw = raw_commit_tags(localstack.endpoint.s3_client(), bucket, "events")
    assert sorted(raw) == list(range(len(raw))), f"versions contiguous: {sorted(raw)}"
    data = sorted(str(raw[v]) for v in raw if v > 0)
    assert data == sorted(result.claimed_tags), result.summary()


# Suite budget: both sizes in make soak; make test keeps the Spark DynamoDB store through the
# mixed Spark + Python writers and the killed driver below.
@pytest.mark.parametrize(
    "appends",
    [pytest.param(5, marks=pytest.mark.long), pytest.param(10, marks=pytest.mark.long)],
)
def test_dynamodb_store_4_drivers_lose_nothing(
    appends, localstack, ls_proxy, ls_bucket, ls_commit_table, tmp_path
):
    """4 drivers x ``appends`` (``make soak`` runs 10 per driver)."""
    result = _run(
        localstack, ls_proxy, ls_bucket, ls_commit_table, tmp_path, writers=4, appends=appends
    )
    summary = result.summary()
    commits = 4 * appends
    assert result.failed_appends == [] and len(result.claimed_tags) == commits, summary
    assert result.lost_tags == [] and result.duplicated_tags == [], summary
    assert result.found_rows == commits * ROWS, summary
    assert result.versions_contiguous and len(result.verified["versions"]) == commits + 1, summary


def test_spark_and_python_dynamodb_writers_together(
    localstack, ls_proxy, ls_bucket, ls_commit_table, tmp_path
):
    # proves: README "the DynamoDB store never loses a commit" (Spark + Python writers)
    result = _run(
        localstack,
        ls_proxy,
        ls_bucket,
        ls_commit_table,
        tmp_path,
        writers=2,
        appends=5,
        python_writers=2,
    )
    assert sorted(r["engine"] for r in result.reports) == ["python", "python", "spark", "spark"]
    assert result.lost_tags == [] and result.duplicated_tags == [] and result.failed_appends == []
    assert result.found_rows == 20 * ROWS and result.versions_contiguous
    _assert_raw_log_holds_each_once(localstack, ls_bucket, result)
    _assert_marked_by_both_runtimes(localstack, ls_bucket, len(result.verified["versions"]))


def _assert_marked_by_both_runtimes(localstack, bucket: str, versions: int) -> None:
    """Issue 50: every commit of the DynamoDB stores carries the provenance mark (the JVM
    store's copy through S3A's create header, the Python store's copy), read back with a raw
    HeadObject."""
    from deltaguard.logstore.jars import VERSION

    s3 = localstack.endpoint.s3_client()
    marks = {
        s3.head_object(Bucket=bucket, Key=f"events/_delta_log/{v:020d}.json")["Metadata"].get(
            "deltaguard-commit"
        )
        for v in range(versions)
    }
    assert marks == {f"s3-dynamodb/jvm/{VERSION}", f"s3-dynamodb/python/{VERSION}"}, marks


def test_staged_claim_race_of_two_spark_drivers_loses_nothing(
    localstack, ls_proxy, ls_bucket, ls_commit_table, tmp_path
):
    """The staged race through the JVM DynamoDB store: 2 drivers x 2 appends, started
    together; the first claim (conditional PutItem) of a data version is held by the proxy,
    after its driver read the latest version, until the other driver's claim of the same
    version is answered. The held claim is refused (ConditionalCheckFailed) and Delta retries
    the commit at the next version: all 4 appends are in the raw log once, and delta-rs reads
    every row."""
    # proves: README "the DynamoDB store never loses a commit" (Spark drivers, staged race)
    ls_proxy.set_rules([hold_one_dynamodb_claim()])
    result = _run(
        localstack,
        ls_proxy,
        ls_bucket,
        ls_commit_table,
        tmp_path,
        writers=2,
        appends=2,
        start_together=True,
        verify_with_deltars=True,
    )
    assert ls_proxy.fired() == [1], "one claim was held"
    [held] = ls_proxy.held()
    assert held["released_by_peer"], f"the other driver's claim of the version came first: {held}"
    assert held["status"] == 400, f"the held claim was refused (ConditionalCheckFailed): {held}"
    assert result.failed_appends == [] and len(result.claimed_tags) == 4, result.summary()
    _assert_raw_log_holds_each_once(localstack, ls_bucket, result)
    assert result.found_rows == 4 * ROWS, result.summary()
    _assert_metrics_counted(localstack, ls_bucket, result)


def _assert_metrics_counted(localstack, bucket: str, result: MultiDriverResult) -> None:
    """Issue 50 part 4, the plain DynamoDB JVM store: each driver's ``deltaguard`` metrics
    source (as registered with its own metrics system) counted the commits it made: its
    appends, its two warm-up tables' version 0 and, for writer 0, the table's version 0;
    together every commit in the raw listing of the bucket, and the held claim's conflict."""
    counts = [r["deltaguard_metrics"] for r in result.reports]
    assert all(c is not None for c in counts), "the source is registered in every driver"
    for report, c in zip(result.reports, counts, strict=True):
        made = len(report["committed"]) + 2 + (report["writer"] == 0)
        assert c["commits"] == made, counts
        assert c["failures"] == c["outcomes_unknown"] == c["settles"] == 0, counts
        assert c["commit_latency"] == c["commits"] + c["conflicts"], counts
        # one conditional PutItem per commit; a conflict found before the claim sends none
        assert c["commits"] <= c["attempts"] <= c["commits"] + c["conflicts"], counts
    keys = localstack.endpoint.s3_client().list_objects_v2(Bucket=bucket)["Contents"]
    raw = [k["Key"] for k in keys if re.search(r"/_delta_log/\d{20}\.json$", k["Key"])]
    assert sum(c["commits"] for c in counts) == len(raw), (counts, raw)
    assert sum(c["conflicts"] for c in counts) >= 1, counts


# proves: docs/guides/commit-path.md "a DynamoDB writer killed after its commit point loses nothing:
# the next writer or reader repairs N"
def test_spark_driver_killed_after_commit_point_is_repaired_by_the_reader(
    localstack, ls_proxy, ls_bucket, ls_commit_table, tmp_path
):
    """The driver freezes copying T(N) -> N.json, after its DynamoDB entry (the commit point),
    and is SIGKILLed. A reader's listing repairs N: the killed driver's rows are in the table."""
    table = f"s3a://{ls_bucket}/events"
    ls_proxy.set_rules(
        [
            # version 0 (the table creation) passes; the first data commit's copy hangs
            FaultRule(
                "hang",
                method="PUT",
                path_regex=r"/_delta_log/(?!0{20}\.json)\d{20}\.json$",
                times=1,
                delay_s=300,
            ),
        ]
    )
    proc = start_job(
        [
            "append",
            "--table",
            table,
            "--logstore",
            "s3-dynamodb",
            "--dynamodb-table",
            ls_commit_table,
            "--endpoint",
            ls_proxy.endpoint.url,
            "--appends",
            "2",
            "--rows",
            str(ROWS),
            "--run-id",
            "killed",
            "--writer",
            "0",
            "--local-dir",
            str(tmp_path / "spark-killed"),
        ],
        tmp_path / "killed.log",
    )
    kill_when(proc, lambda: ls_proxy.fired() == [1], tmp_path / "killed.log", timeout_s=300)
    item = localstack.endpoint.dynamodb_client().get_item(
        TableName=ls_commit_table,
        ConsistentRead=True,
        Key={"tablePath": {"S": f"s3a://{ls_bucket}/events"}, "fileName": {"S": f"{1:020d}.json"}},
    )["Item"]
    assert item["complete"] == {"S": "false"}
    verified = verify_table(
        table,
        localstack.endpoint.url,
        tmp_path,
        "after-kill",
        store_args=["--logstore", "s3-dynamodb", "--dynamodb-table", ls_commit_table],
    )
    assert verified["versions"] == [0, 1]
    assert verified["rows_per_batch"] == {"w0/b0": ROWS}, (
        "the killed driver's committed append survived"
    )
