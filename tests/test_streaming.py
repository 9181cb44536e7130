"""Structured Streaming into Delta on LocalStack through the ``s3-conditional`` preset
(docs/guides/streaming.md), with real driver processes (``localstack/streams.py``):

- two streaming queries (file sources, ``writeStream.format("delta")``, each its own driver
  and S3 checkpoint) and a batch writer on one table; one query's driver SIGKILLed while its
  micro-batch's commit PUT is frozen (data files written, commit not), the other's while its
  checkpoint's ``commits/1`` PUT is frozen (Delta committed, the checkpoint does not know),
  both restarted from their checkpoints, all with the preset's one-PUT checkpoint file manager
  (no COPY or DELETE under the checkpoints): every source row exactly once by (query, value), ``deltaguard audit`` healthy,
  ``deltaguard orphans`` classes the killed batch's files ``orphan``. On Spark 4.2, on 3.5
  (hadoop-aws 3.3.4, the SDK v1 jar), and in ``make soak`` on 4.1 (hadoop-aws 3.4.2);
- foreachBatch fan-out to three tables (txnAppId = query id, txnVersion = batch id), killed
  between two tables' commits of one micro-batch: the re-run skips the table that has it.

Small sizes in ``make test`` (3 micro-batches of 5 rows per query); ``make soak`` runs the
kill test with 8 micro-batches per query (marked ``long``).
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from test_spark_lines_e2e import line_python  # noqa: F401  (a fixture)

from deltaguard.localstack.fault_proxy import FaultProxy, requests_under
from deltaguard.localstack.streams import (
    Kill,
    StreamsResult,
    hang_checkpoint_commit,
    hang_commit,
    run_streams,
)
from deltaguard.spark_conf.spark_lines import by_name

pytestmark = pytest.mark.spark
FILES, ROWS_PER_FILE, BATCH_APPENDS, BATCH_ROWS = 3, 5, 3, 5


def _assert_exactly_once(
    result: StreamsResult, table: str | None = None, files: int = FILES
) -> None:
    summary = result.summary()
    for q in result.queries:
        assert result.missing(q, table) == [], (q.name, summary)
        assert result.duplicated(q, table) == [], (q.name, summary)
        assert len(q.values) == files * ROWS_PER_FILE


def _s3_args(localstack) -> list[str]:
    return ["--endpoint", localstack.endpoint.url, "--region", "us-east-1", "--path-style"]


# proves: docs/guides/streaming.md "a streaming commit never overwrites another's; every source row
# exactly once through a kill"
@pytest.mark.parametrize("files", [FILES, pytest.param(8, marks=pytest.mark.long)])
@pytest.mark.parametrize("line", ["4.2", "3.5", pytest.param("4.1", marks=pytest.mark.long)])
def test_two_queries_and_a_batch_writer_exactly_once_through_a_kill(
    line,
    files,
    line_python,  # noqa: F811
    localstack,
    ls_proxy,
    ls_bucket,
    tmp_path,
    run_cli,
):
    import sys

    python = sys.executable if line == "4.2" else line_python(line)
    table = f"s3a://{ls_bucket}/events"
    with FaultProxy(localstack.endpoint, tmp_path, seed=8) as q0_proxy:
        result = run_streams(
            table,
            endpoint_url=localstack.endpoint.url,
            workdir=tmp_path,
            # q1: killed with its second Delta commit frozen (data files written, no commit);
            # q0: killed with its second checkpoint commits/ file frozen (Delta committed).
            kills={
                "q1": Kill(ls_proxy, hang_commit(skip=1)),
                "q0": Kill(q0_proxy, hang_checkpoint_commit(skip=1)),
            },
            files=files,
            rows_per_file=ROWS_PER_FILE,
            batch_appends=BATCH_APPENDS,
            batch_rows=BATCH_ROWS,
            python=python,
        )
        logs = ls_proxy.requests() + q0_proxy.requests()
    summary = result.summary()
    print("streams kill/restart", line, json.dumps(summary))
    # The preset's checkpoint file manager wrote every checkpoint file, before and after the
    # kills, with one PUT: no rename (COPY + DELETE) anywhere under the checkpoints. (The only
    # DELETEs are the LogStore verifier's probe keys, once per driver and directory.)
    on_checkpoints = requests_under(logs, ls_bucket, "checkpoints/")
    renames = [
        e
        for e in on_checkpoints
        if e["kind"] == "s3 CopyObject"
        or (e["kind"] == "s3 DeleteObject" and ".deltaguard-probe." not in e["path"])
    ]
    assert on_checkpoints and not renames, Counter(e["kind"] for e in on_checkpoints)
    assert result.killed == ["q0", "q1"]
    _assert_exactly_once(result, files=files)
    # Each restart finished its source; q0's restart re-ran the micro-batch whose commits/
    # file was frozen, which Delta skipped (the table recorded it: no rows twice), so it
    # starts past batch 0. (Which batch: the second commits/ write through Spark's manager;
    # the third through the preset's, not yet explained.)
    for name in ("q0", "q1"):
        (rerun,) = result.reports[name]
        assert rerun["batches"], summary
    assert result.reports["q0"][0]["batches"][0]["batch_id"] >= 1, result.reports["q0"]
    # The batch writer's appends, all committed, once each.
    batch = result.batch_report
    assert batch is not None and batch["errors"] == [], batch
    assert len(batch["committed"]) == BATCH_APPENDS
    counts = result.counts[table]
    for tag in batch["committed"]:
        assert sum(n for (payload, _), n in counts.items() if payload == tag) == BATCH_ROWS
    # Every driver ran its line's Spark and Hadoop.
    want = by_name(line)
    for reports in (*result.reports.values(), [batch]):
        for r in reports:
            assert r["spark_version"].startswith(want.spark + "."), r
            assert r["hadoop_version"] == want.hadoop, r

    s3 = _s3_args(localstack)
    creds = localstack.endpoint.credentials_env()
    audit = run_cli("audit", table.replace("s3a://", "s3://"), *s3, "--json", env=creds)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    orphans = run_cli(
        "orphans",
        table.replace("s3a://", "s3://"),
        *s3,
        "--retention",
        "0",
        "--unsafe-retention",
        "--json",
        env=creds,
    )
    assert orphans.returncode == 1, orphans.stdout + orphans.stderr
    report = json.loads(orphans.stdout)
    killed_files = result.killed_batch_files
    assert killed_files and all(f.endswith(".parquet") for f in killed_files), summary
    assert {f["path"]: f["class"] for f in report["files"]} == dict.fromkeys(
        killed_files, "orphan"
    ), (report["files"], summary)


# proves: docs/guides/streaming.md "a streaming commit never overwrites another's; every source row
# exactly once through a kill"
def test_foreach_batch_fanout_rerun_after_a_kill_writes_nothing_twice(
    localstack, ls_proxy, ls_bucket, tmp_path
):
    """One query (3 micro-batches), foreachBatch to three tables through write_fanout, one
    table at a time. Its fifth commit (micro-batch 1, second table) is frozen and the driver killed: micro-batch 1
    is in the first table only. The restart re-runs micro-batch 1: skipped on the first table
    (Delta found txnVersion 1 recorded for the query's app id there), written on the others."""
    tables = [f"s3a://{ls_bucket}/fan/t{i}" for i in range(3)]
    result = run_streams(
        tables[0],
        endpoint_url=localstack.endpoint.url,
        workdir=tmp_path,
        kills={"q0": Kill(ls_proxy, hang_commit(skip=4))},
        queries=1,
        files=3,
        rows_per_file=ROWS_PER_FILE,
        batch_appends=0,
        fanout_tables=tables,
        fanout_workers=1,
    )
    summary = result.summary()
    print("fan-out kill/restart", json.dumps(summary))
    for t in tables:
        _assert_exactly_once(result, t, files=3)
    (rerun,) = result.reports["q0"]
    first = rerun["fanout"][0]
    assert first["batch_id"] == 1, rerun["fanout"]
    assert [first["statuses"][t] for t in tables] == ["skipped", "written", "written"], first
    assert all(set(b["statuses"].values()) == {"written"} for b in rerun["fanout"][1:]), rerun[
        "fanout"
    ]
