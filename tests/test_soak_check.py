"""The soak's invariant checker catches what it must (no server: ledgers and reader reports
written by hand)."""

from __future__ import annotations

from deltaguard.localstack.soak_check import check
from deltaguard.localstack.soak_ledger import (
    ROWS_PER_APPEND,
    Ledger,
    open_operation_since,
    read_ledgers,
)

R = ROWS_PER_APPEND
T = "s3://b/t"


def _ops(tmp_path, records):
    ledger = Ledger(tmp_path / "w.jsonl", "w", "python")
    for op_id, kind, outcome, target in records:
        ledger.intent(op_id, T, kind, target)
        if outcome != "killed":
            ledger.outcome(op_id, outcome)
    ledger.close()
    return read_ledgers([tmp_path / "w.jsonl"])


def _report(per_append, versions=3):
    table = {"versions": list(range(versions)), "rows": sum(per_append.values())}
    return {
        "spark": {T: {**table, "per_append": per_append}},
        "delta-rs": {T: {**table, "per_append": dict(per_append)}},
    }


def test_clean_run_passes(tmp_path):
    ops = _ops(
        tmp_path,
        [
            ("a", "append", "ok", None),
            ("b", "append", "failed", None),
            ("c", "append", "killed", None),
            ("e", "ephemeral", "ok", None),
            ("d", "delete", "ok", "e"),
        ],
    )
    verdict = check(ops, _report({"a": R, "c": R}), [T])
    assert verdict.ok, verdict.violations


def test_lost_duplicated_and_failed_but_present_are_violations(tmp_path):
    ops = _ops(
        tmp_path,
        [("a", "append", "ok", None), ("b", "append", "ok", None), ("c", "append", "failed", None)],
    )
    verdict = check(ops, _report({"b": 2 * R, "c": R, "x": R}), [T])
    assert (verdict.lost, verdict.duplicated) == (1, 1)
    text = "\n".join(verdict.violations)
    assert "lost: append a" in text and "duplicated: append b" in text
    assert "present although its writer was told it failed (or deleted it): append c" in text
    assert "no writer recorded: ['x']" in text


def test_gaps_and_disagreeing_readers_are_violations(tmp_path):
    ops = _ops(tmp_path, [("a", "append", "ok", None)])
    readers = _report({"a": R})
    readers["spark"][T]["versions"] = [0, 2]
    readers["delta-rs"][T]["per_append"] = {}
    readers["delta-rs"][T]["rows"] = 0
    text = "\n".join(check(ops, readers, [T]).violations)
    assert "versions not contiguous" in text and "readers disagree" in text


def test_a_line_cut_by_sigkill_leaves_the_op_unknown(tmp_path):
    ops = _ops(tmp_path, [("a", "append", "killed", None)])
    with (tmp_path / "w.jsonl").open("a") as f:
        f.write('{"op": "a", "ev')
    assert read_ledgers([tmp_path / "w.jsonl"])["a"].outcome == "unknown"
    assert check(ops, _report({}), [T]).ok


def test_abandoned_data_must_stay_absent(tmp_path):
    """An abandoned operation's data file was never committed: rows of it are a violation."""
    ops = _ops(tmp_path, [("a", "abandoned", "failed", None)])
    assert check(ops, _report({}), [T]).ok
    verdict = check(ops, _report({"a": R}), [T])
    assert "present although its writer was told it failed" in "\n".join(verdict.violations)


def test_open_operation_since_reads_the_newest_line(tmp_path):
    """What the soak's write deadline reads: the intent's time while an operation runs."""
    path = tmp_path / "w.jsonl"
    assert open_operation_since(path) is None
    ledger = Ledger(path, "w", "python")
    ledger.intent("a", T, "append")
    started = read_ledgers([path])["a"].started
    assert started is not None and open_operation_since(path) == started
    ledger.outcome("a", "ok")
    assert open_operation_since(path) is None
    ledger.intent("b", T, "append")
    ledger.close()
    with path.open("a") as file:
        file.write('{"op": "b", "ev')  # cut by SIGKILL
    assert open_operation_since(path) == read_ledgers([path])["b"].started
