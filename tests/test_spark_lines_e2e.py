"""Every Spark line end to end on LocalStack: real driver JVMs of Spark 3.5 (Delta 3.3.3,
hadoop-aws 3.3.4, the SDK v1 jar), Spark 4.0 (Delta 4.4's build for Spark 4.0, hadoop-aws 3.4.1)
and Spark 4.1 (Delta 4.4's build for Spark 4.1, hadoop-aws 3.4.2), both with the SDK v2 jar,
started from their own cached virtualenvs (spark_line_venvs), next to the project's Spark 4.2.

Per line, at reduced size (the larger runs are in ``make bench``): the staged race through the
conditional store (3 drivers x 5 appends: nothing lost or duplicated) and through Delta's
default store (loses a commit: the race can fail), the fail-closed check, and lost responses /
409 / 503 on commit PUTs. The staged race also on Spark 3.5 with Hadoop 3.4.1's client jars
ahead of pyspark's (hadoop-aws 3.4.1, the SDK v2 jar). And one table written by a Spark 3.5 and
a Spark 4.2 driver at once, and the fan-out writer on Spark 3.5 (and 4.1 in ``make soak``). (The
checkpoint file manager and a stream per line: tests/test_streaming.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_spark_commits import (
    ROWS,
    _assert_commits_marked,
    _assert_nothing_lost,
    assert_no_commit_written,
    assert_requests_per_append,
    count_log_reads,
)

from deltaguard.localstack import fanout_run
from deltaguard.localstack.fault_proxy import FaultRule
from deltaguard.localstack.multi_driver import (
    DriverFailedError,
    MultiDriverResult,
    run_multi_driver,
)
from deltaguard.localstack.race import DATA_COMMIT_FILE_REGEX, hold_one_commit_put
from deltaguard.localstack.spark_line_venvs import LineVenvError, ensure
from deltaguard.localstack.spark_metrics import logged_counts
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.spark_lines import by_name

pytestmark = pytest.mark.spark
OTHER_LINES = ["3.5", "4.0", "4.1"]


@pytest.fixture(scope="session")
def line_python():
    """``line_python(name)``: that line's interpreter, installed on first use (never skipped:
    an install failure fails the test with the installer's output)."""
    cache: dict[str, str] = {}

    def get(name: str) -> str:
        if name not in cache:
            try:
                cache[name] = str(ensure(by_name(name)))
            except LineVenvError as exc:
                pytest.fail(f"Spark line {name} test bed: {exc}")
        return cache[name]

    return get


def _run(
    localstack, proxy, bucket, tmp_path: Path, logstore, pythons: list[str], appends: int
) -> MultiDriverResult:
    return run_multi_driver(
        f"s3a://{bucket}/events",
        writer_endpoint_url=proxy.endpoint.url,
        reader_endpoint_url=localstack.endpoint.url,
        logstore=logstore,
        writers=len(pythons),
        appends=appends,
        rows=ROWS,
        workdir=tmp_path,
        pythons=pythons,
        verify_python=pythons[0],
    )


def _assert_ran_on(result: MultiDriverResult, *names: str) -> None:
    """Each Spark writer ran the Spark and Hadoop of its line (in writer order)."""
    ran = [(r["spark_version"], r["hadoop_version"]) for r in result.reports]
    for (spark, hadoop), name in zip(ran, names, strict=True):
        line = by_name(name)
        assert spark.startswith(line.spark + ".") and hadoop == line.hadoop, (name, ran)


#: make test runs a line on each side of Spark 4 (3.5, 4.1; 4.2 is the project venv's own);
#: make soak runs every line.
SUITE_LINES = [
    "3.5",
    pytest.param("4.0", marks=pytest.mark.long),
    "4.1",
    pytest.param("3.5-hadoop3.4", marks=pytest.mark.long),
]
OLDEST_LINE_ONLY = ["3.5", *(pytest.param(x, marks=pytest.mark.long) for x in OTHER_LINES[1:])]


@pytest.mark.parametrize("line", SUITE_LINES)
def test_staged_race_conditional_store_loses_nothing(
    line, line_python, localstack, ls_proxy, ls_bucket, tmp_path
):
    python = line_python(line)
    ls_proxy.set_rules([hold_one_commit_put(), *count_log_reads()])
    result = _run(
        localstack, ls_proxy, ls_bucket, tmp_path, PresetName.S3_CONDITIONAL, [python] * 3, 5
    )
    assert ls_proxy.fired() == [1, 0, 0], "the race was staged"
    _assert_ran_on(result, line, line, line)
    _assert_nothing_lost(result, 15)
    # Issue 50: this line's jar (3.5: AWS SDK v1, 4.1: v2) marks every commit it creates.
    _assert_commits_marked(localstack, ls_bucket, "events", range(1, 16))
    # The line's own request-saving settings were in effect (spark_conf.request_tuning).
    assert_requests_per_append(localstack, ls_proxy, ls_bucket, commits=16, drivers=3)
    # Issue 50 part 4: this line's driver registered the metrics source and counted its commits.
    _assert_metrics_counted(result, versions=16)


def _assert_metrics_counted(result: MultiDriverResult, versions: int) -> None:
    """Each Spark driver's ``deltaguard`` metrics source, as registered with its own metrics
    system, counted the commits it made (its appends, and version 0 for writer 0): together
    every version of the raw log, and the staged race's conflict."""
    counts = [r["deltaguard_metrics"] for r in result.reports]
    assert all(c is not None for c in counts), "the source is registered in every driver"
    for report, c in zip(result.reports, counts, strict=True):
        assert c["commits"] == len(report["committed"]) + (report["writer"] == 0), counts
        assert c["failures"] == c["outcomes_unknown"] == 0, counts
        assert c["commit_latency"] == c["commits"] + c["conflicts"], counts
    assert sum(c["commits"] for c in counts) == versions, counts
    assert sum(c["conflicts"] for c in counts) >= 1, counts


# 4.1 in `make soak`: its Delta default store is Delta 4.4's, whose loss `make test` shows on
# the installed 4.2 line (test_spark_commits.py); `make bench` runs it on every line.
@pytest.mark.parametrize("line", OLDEST_LINE_ONLY)
def test_staged_race_delta_default_store_loses_a_commit(
    line, line_python, localstack, ls_proxy, ls_bucket, tmp_path
):
    python = line_python(line)
    ls_proxy.set_rules([hold_one_commit_put()])
    # Two drivers are enough to stage the race; the held PUT overwrites a peer's commit.
    result = _run(
        localstack, ls_proxy, ls_bucket, tmp_path, PresetName.S3_SINGLE_DRIVER, [python] * 2, 3
    )
    summary = result.summary()
    assert ls_proxy.fired() == [1], "the race was staged"
    assert result.failed_appends == [], "every writer believes every append succeeded"
    assert len(result.claimed_tags) == 6
    assert len(result.lost_tags) >= 1, summary
    assert result.found_rows == (6 - len(result.lost_tags)) * ROWS, summary


@pytest.mark.parametrize("line", OTHER_LINES)
def test_store_ignoring_if_none_match_is_refused(
    line, line_python, localstack, ls_proxy, ls_bucket, tmp_path
):
    python = line_python(line)
    ls_proxy.set_rules([FaultRule("strip_header", method="PUT", header="If-None-Match")])
    with pytest.raises(DriverFailedError) as err:
        _run(localstack, ls_proxy, ls_bucket, tmp_path, PresetName.S3_CONDITIONAL, [python], 1)
    message = str(err.value)
    assert "does not honour If-None-Match" in message
    assert ls_proxy.endpoint.url in message
    assert_no_commit_written(localstack, ls_bucket)
    # Issue 50 part 4: this line's driver registered the metrics source and counted the refused
    # commit (version 0) as one failure that sent no commit PUT (the check's probe is no commit).
    [log] = tmp_path.glob("*-writer0.log")
    assert logged_counts(log.read_text()) == {
        "commits": 0,
        "conflicts": 0,
        "outcomes_unknown": 0,
        "failures": 1,
        "attempts": 0,
        "settles": 0,
        "commit_latency": 1,
    }


@pytest.mark.parametrize("line", OLDEST_LINE_ONLY)
def test_lost_responses_and_conflicts_duplicate_nothing(
    line, line_python, localstack, ls_proxy, ls_bucket, tmp_path
):
    """Commit PUTs that land while their response is dropped, then a 409 and a 503: the
    read-back settles each; exact rows, nothing twice."""
    python = line_python(line)
    conditional = {
        "method": "PUT",
        "path_regex": DATA_COMMIT_FILE_REGEX,
        "header_present": "If-None-Match",
    }
    ls_proxy.set_rules(
        [
            FaultRule("drop_response", times=2, **conditional),
            FaultRule(
                "error", status=409, code="ConditionalRequestConflict", times=1, **conditional
            ),
            FaultRule("error", status=503, code="SlowDown", times=1, **conditional),
        ]
    )
    result = _run(localstack, ls_proxy, ls_bucket, tmp_path, PresetName.S3_CONDITIONAL, [python], 4)
    assert ls_proxy.fired() == [2, 1, 1], "every fault happened"
    _assert_ran_on(result, line)
    _assert_nothing_lost(result, 4)


def test_mixed_lines_on_one_table_lose_nothing(
    line_python, localstack, ls_proxy, ls_bucket, tmp_path
):
    """A Spark 3.5 driver (SDK v1 jar) and a Spark 4.2 driver (SDK v2 jar) append to one table
    at once, with the staged race. The 3.5 driver creates the table, so its protocol is one
    both lines write; the 4.2 driver reads it back."""
    import sys

    ls_proxy.set_rules([hold_one_commit_put()])
    result = run_multi_driver(
        f"s3a://{ls_bucket}/events",
        writer_endpoint_url=ls_proxy.endpoint.url,
        reader_endpoint_url=localstack.endpoint.url,
        logstore=PresetName.S3_CONDITIONAL,
        writers=2,
        appends=5,
        rows=ROWS,
        workdir=tmp_path,
        pythons=[line_python("3.5"), sys.executable],
    )
    assert ls_proxy.fired() == [1], "the race was staged"
    _assert_ran_on(result, "3.5", "4.2")
    _assert_nothing_lost(result, 10)
    first = (
        localstack.endpoint.s3_client()
        .get_object(Bucket=ls_bucket, Key=f"events/_delta_log/{0:020d}.json")["Body"]
        .read()
    )
    protocol = next(json.loads(ln)["protocol"] for ln in first.splitlines() if b'"protocol"' in ln)
    assert (protocol["minReaderVersion"], protocol["minWriterVersion"]) == (1, 2), protocol


# 4.1 in `make soak`: the fan-out library is the same code on every line; `make test` runs it
# through the SDK v1 jar here and on 4.2 in test_fanout.py.
@pytest.mark.parametrize("line", ["3.5", pytest.param("4.1", marks=pytest.mark.long)])
def test_fanout_writer_on_older_lines(line, line_python, localstack, ls_bucket, tmp_path):
    """deltaguard's fan-out writer (write_fanout) on Spark 3.5 / Delta 3.3 (through the SDK v1
    jar) and Spark 4.1 / Delta 4.4: concurrent first writes, schema evolution, two fan-outs
    racing to create one table, and a failing write, all reported exactly."""
    report = fanout_run.run_trap(
        localstack.endpoint, f"s3a://{ls_bucket}/trap", tmp_path, line_python(line)
    )
    for case in ("create", "evolve"):
        fanout = report["fanout"][case]
        assert fanout["rows_found"] == fanout["rows_written"] == fanout["rows_reported"], fanout
        assert fanout["statuses"] == ["written"] * 4
    two = report["two_jobs"]
    assert two["rows_found"] == two["rows_written"] and two["statuses"] == ["written"] * 2, two
    assert report["failure"]["raised"] == "FanoutError", report["failure"]
