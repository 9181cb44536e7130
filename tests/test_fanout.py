"""Fan-out writes (issue 7): the naive thread-pool trap, and write_fanout on LocalStack through
deltaguard's conditional LogStore.

The Spark tests start one driver per scenario (the trap), or the example job through
spark-submit with the s3-conditional preset (kill, re-run, then one reader).
"""

from __future__ import annotations

import json
import random
import threading
import time

import pytest
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

from deltaguard.localstack import fanout_run
from deltaguard.localstack.multi_driver import kill_when
from deltaguard.tools.fanout.keyed_append import (
    TxnKey,
    WriteMode,
    is_retryable_conflict,
    missing_columns,
    plan_write,
)
from deltaguard.tools.fanout.writer import (
    BatchOutcome,
    BatchStatus,
    FanoutError,
    FanoutResult,
    RetryPolicy,
    TableOutcome,
    _TableGate,
)

ENTITIES = 10
BATCHES = 4
ROWS = 4
#: Tables that exist before the job (created by deltaguard's Python writer).
EXISTING = range(5)
#: Entities that gain a `note` attribute from batch 2 on: 3-4 existing, 5-7 new.
EVOLVING = range(3, 8)
#: The example job is killed once this many of its ENTITIES x BATCHES commits landed.
KILL_AFTER = 16


# --- contracts that need no Spark -------------------------------------------------------------


def test_missing_columns_and_plan():
    table = StructType(
        [
            StructField("id", LongType()),
            StructField("tags", ArrayType(StructType([StructField("k", StringType())]))),
        ]
    )
    same = StructType([StructField("ID", LongType())])
    nested = StructType(
        [
            StructField("tags", ArrayType(StructType([StructField("v", StringType())]))),
            StructField("note", StringType()),
        ]
    )
    assert missing_columns(same, table) == [], "case-insensitive, fewer columns are fine"
    assert missing_columns(nested, table) == ["tags.v", "note"]
    assert plan_write(same, None) is WriteMode.CREATE
    assert plan_write(nested, table) is WriteMode.EVOLVE
    assert plan_write(same, table) is WriteMode.APPEND


def test_retry_policy_and_retryable_classes():
    from delta.exceptions import (
        ConcurrentAppendException,
        ConcurrentDeleteReadException,
        ConcurrentTransactionException,
        MetadataChangedException,
        ProtocolChangedException,
    )

    for cls in (ConcurrentAppendException, ProtocolChangedException, MetadataChangedException):
        assert is_retryable_conflict(cls("conflict"))
    for exc in (ConcurrentTransactionException("x"), ConcurrentDeleteReadException("x")):
        assert not is_retryable_conflict(exc)
    assert not is_retryable_conflict(ValueError("x"))
    policy = RetryPolicy(max_attempts=4, base_delay_s=0.1, max_delay_s=0.3)
    rng = random.Random(1)
    delays = [policy.delay_s(n, rng) for n in (1, 2, 3, 4, 5) for _ in range(50)]
    assert all(0 <= d <= 0.3 for d in delays) and max(delays) > 0.2, "jittered, capped"
    with pytest.raises(ValueError):
        TxnKey("job/0", -1)


def test_fanout_error_is_an_exception_group_with_the_result():
    error = ValueError("boom")
    failed = BatchOutcome("t", "0", "j/0", 1, BatchStatus.FAILED, attempts=1, error=error)
    written = BatchOutcome("t", "1", "j/1", 1, BatchStatus.WRITTEN, rows=3, version=4, attempts=2)
    result = FanoutResult({"t": TableOutcome("t", (failed, written))})
    assert (result.tables["t"].rows, result.tables["t"].version) == (3, 4)
    assert result.tables["t"].attempts == 3 and result.tables["t"].error is error
    with pytest.raises(ExceptionGroup) as caught:
        raise FanoutError("1 of 2 writes failed", result.errors, result)
    assert caught.value.result is result
    assert caught.value.exceptions == (error,)
    try:
        raise FanoutError("x", result.errors, result)
    except* ValueError as group:  # except* splits keep the result
        assert group.result is result
    assert json.loads(json.dumps(result.summary()))["tables"]["t"]["error"] == "ValueError: boom"


def test_table_gate_runs_exclusive_alone_and_shared_together():
    gate = _TableGate()
    active: list[str] = []
    seen: list[tuple[str, ...]] = []
    lock = threading.Lock()

    def hold(kind: str) -> None:
        with gate.exclusive() if kind == "x" else gate.shared():
            with lock:
                active.append(kind)
                seen.append(tuple(active))
            time.sleep(0.05)
            with lock:
                active.remove(kind)

    threads = [threading.Thread(target=hold, args=(k,)) for k in "sxsssxss"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(s == ("x",) for s in seen if "x" in s), seen
    assert any(s.count("s") > 1 for s in seen), "shared holders overlap"


# --- Spark on LocalStack -------------------------------------------------------------------------


# proves: docs/guides/fanout.md "the fan-out writer loses no rows; every failure surfaces"
@pytest.mark.spark
def test_naive_pool_loses_rows_silently_and_write_fanout_does_not(localstack, ls_bucket, tmp_path):
    """One driver: 4 threads append one batch each to a new table, and to an existing table with a
    new column, through a plain ThreadPoolExecutor whose futures nobody reads; then the same
    batches through write_fanout; then two fan-outs creating one table; then a failing write."""
    report = fanout_run.run_trap(localstack.endpoint, f"s3a://{ls_bucket}/trap", tmp_path)

    for case, conflict in (
        ("create", "ProtocolChangedException"),
        ("evolve", "MetadataChangedException"),
    ):
        naive = report["naive"][case]
        assert naive["rows_found"] < naive["rows_written"], f"naive {case}: rows lost, {naive}"
        assert naive["hidden_errors"], "the pool ended normally with exceptions in unread futures"
        assert set(naive["hidden_errors"]) == {conflict}, naive
        lost = naive["rows_written"] - naive["rows_found"]
        assert lost == len(naive["hidden_errors"]) * 5, "each hidden exception is one lost batch"

        fanout = report["fanout"][case]
        assert fanout["rows_found"] == fanout["rows_written"] == fanout["rows_reported"], fanout
        assert fanout["statuses"] == ["written"] * 4
        assert fanout["modes"].count(case) == 1, "the first write runs alone"
        assert fanout["modes"].count("append") == 3, "the others follow it, in parallel"

    two = report["two_jobs"]
    assert two["rows_found"] == two["rows_written"] and two["statuses"] == ["written"] * 2, two
    assert two["attempts"] == [1, 2], "the loser of the creation race retried once"

    failure = report["failure"]
    assert failure["raised"] == "FanoutError" and failure["exceptions"] == ["AnalysisException"]
    by_name = {t.rsplit("/", 1)[1]: o for t, o in failure["tables"].items()}
    assert by_name["clash"] == {"status": "failed", "attempts": 1, "rows": 0}, "not retried"
    assert by_name["good"] == {"status": "written", "attempts": 1, "rows": 5}


def _records(entity: int, batch: int) -> list[dict]:
    out = []
    for seq in range(ROWS):
        record = {
            "entity": f"e{entity:02d}",
            "batch": batch,
            "seq": seq,
            "name": f"e{entity:02d}-{batch}-{seq}",
            "score": seq + 0.5,
        }
        if entity in EVOLVING and batch >= 2:
            record["note"] = f"added in batch {batch}"
        out.append(record)
    return out


def _create_existing_tables(endpoint, root: str) -> None:
    import pyarrow as pa

    from deltaguard.localstack.delta_append import create_table
    from deltaguard.logstore.s3_conditional import S3ConditionalLogStore

    store = S3ConditionalLogStore(endpoint.s3_client())
    schema = pa.schema(
        [("batch", pa.int64()), ("seq", pa.int64()), ("name", pa.string()), ("score", pa.float64())]
    )
    for entity in EXISTING:
        create_table(store, f"{root}/e{entity:02d}", schema)


# proves: docs/guides/fanout.md "A re-run after a crash, with the same `job_id`, `run_version`
# and writes, therefore writes only what is missing."
@pytest.mark.spark
@pytest.mark.parametrize(
    ("entities", "n_batches", "kill_after"),
    [
        # short (make test): 6 tables x 3 batches (5 existing, 1 new; 3 gain a column in batch
        # 2), killed after 6 of its 18 commits
        pytest.param(6, 3, 6, id="6-tables-3-batches"),
        # suite budget (100 s): make soak
        pytest.param(
            ENTITIES, BATCHES, KILL_AFTER, id="10-tables-4-batches", marks=pytest.mark.long
        ),
    ],
)
def test_example_job_killed_half_way_and_rerun_writes_every_row_once(
    localstack, ls_bucket, tmp_path, entities, n_batches, kill_after
):
    """``entities`` tables x ``n_batches`` batches (those of EXISTING exist before the job, the
    others are new; those of EVOLVING gain a column in batch 2) through the example job under
    spark-submit with the s3-conditional preset. Killed (SIGKILL) after ``kill_after`` of its
    commits, re-run with the same run version: every row exactly once (delta-rs reads)."""
    endpoint = localstack.endpoint
    root = f"s3a://{ls_bucket}/entities"
    batches = [[r for e in range(entities) for r in _records(e, b)] for b in range(n_batches)]
    raw = fanout_run.write_input(tmp_path / "raw", batches)
    _create_existing_tables(endpoint, root)
    pre_existing = fanout_run.count_commits(endpoint, root)
    assert pre_existing == len(EXISTING)
    props = fanout_run.properties_file(
        tmp_path / "lake.properties", endpoint, root, tmp_path / "sp"
    )
    args = ["--input", f"file://{raw}", "--output-root", root, "--run-version", "1"]

    first_log = tmp_path / "first.log"
    first = fanout_run.start_job(props, endpoint, args, first_log)
    kill_when(
        first,
        lambda: fanout_run.count_commits(endpoint, root) - pre_existing >= kill_after,
        first_log,
        timeout_s=600,
    )
    time.sleep(2)  # nothing may commit after the kill: the count must stay put
    committed_by_first = fanout_run.count_commits(endpoint, root) - pre_existing
    assert kill_after <= committed_by_first < entities * n_batches, "killed half way"
    time.sleep(1)
    assert fanout_run.count_commits(endpoint, root) - pre_existing == committed_by_first

    second_log = tmp_path / "second.log"
    code, summary = fanout_run.job_result(
        fanout_run.start_job(props, endpoint, args, second_log), second_log
    )
    assert code == 0 and summary["ok"], json.dumps(summary)[:3000]
    statuses = [b["status"] for t in summary["tables"].values() for b in t["batches"]]
    assert len(statuses) == entities * n_batches
    assert statuses.count("skipped") == committed_by_first, "each earlier commit was recognised"
    assert statuses.count("written") == entities * n_batches - committed_by_first
    assert sum(t["rows"] for t in summary["tables"].values()) == statuses.count("written") * ROWS
    assert fanout_run.count_commits(endpoint, root) - pre_existing == entities * n_batches

    tables = [f"{root}/e{e:02d}" for e in range(entities)]
    found = fanout_run.read_tables(endpoint, tables, ["batch", "seq"])
    for e, table in enumerate(tables):
        report = found[table]
        assert report["rows"] == report["distinct_keys"] == n_batches * ROWS, (table, report)
        assert ("note" in report["columns"]) == (e in EVOLVING), (table, report)
        assert report["versions"] == n_batches + (1 if e in EXISTING else 0), (table, report)


@pytest.mark.spark
def test_example_job_bad_input_is_a_clear_error(localstack, ls_bucket, tmp_path):
    """A malformed raw line: exit code 2 and one line naming the problem, no traceback."""
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "batch-000.jsonl").write_text('{"entity": "e00", "seq": 1}\n{"entity": oops\n')
    root = f"s3a://{ls_bucket}/bad"
    props = fanout_run.properties_file(
        tmp_path / "p.properties", localstack.endpoint, root, tmp_path
    )
    log = tmp_path / "bad.log"
    args = ["--input", f"file://{raw}", "--output-root", root, "--run-version", "1"]
    proc = fanout_run.start_job(props, localstack.endpoint, args, log)
    stdout, _ = proc.communicate(timeout=300)
    output = stdout + log.read_text()  # spark-submit merges the Python driver's stderr into stdout
    assert proc.returncode == 2, output[-2000:]
    message = [ln for ln in output.splitlines() if ln.startswith("fanout_job: bad input")]
    assert len(message) == 1 and str(raw) in message[0], output[-2000:]
    assert "Malformed records" in message[0]
    assert "Traceback" not in output
    assert fanout_run.count_commits(localstack.endpoint, root) == 0
