"""The soak's final invariants: what the writers were told (their ledgers) against what readers
that never wrote find (a Spark driver and delta-rs), per table.

Per operation that adds rows (``append``, ``ephemeral``), with ``R`` = ROWS_PER_APPEND rows and
``c`` = the rows with its ``append_id`` (the same in both readers, or that is a violation):

- ``append`` told ok: ``c == R`` (0 is a lost commit, more is a duplicate);
- told failed: ``c == 0`` (a lost response the store settled as success was reported as ok,
  so it is in the first case, exactly once);
- outcome unknown (killed mid-commit, or the store said so): ``c`` in {0, R};
- ``ephemeral``: 0 after a successful DELETE of it, R if the DELETE failed, {0, R} if the
  DELETE's outcome is unknown; a failed ephemeral append is 0.

Also: no rows without a ledger entry; versions contiguous from 0 (both readers); every
reader's row total equals the sum of the per-append counts the ledgers explain.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from deltaguard.localstack.soak_ledger import ADDS_ROWS, ROWS_PER_APPEND, Operation


@dataclass
class Verdict:
    """Counts for the summary line, and every violation in words."""

    lost: int = 0
    duplicated: int = 0
    present_but_told_failed: int = 0
    violations: list[str] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return not self.violations


def _allowed(op: Operation, deletes: dict[str, Operation]) -> set[int]:
    """The row counts ``op``'s append id may have at the end."""
    r = ROWS_PER_APPEND
    present = {"ok": {r}, "failed": {0}, "unknown": {0, r}}[op.outcome]
    if op.kind == "ephemeral" and op.outcome != "failed":
        delete = deletes.get(op.op_id)
        if delete is not None:
            if delete.outcome == "ok":
                return {0}
            return present | {0} if delete.outcome == "unknown" else present
    return present


def check(
    ops: dict[str, Operation], readers: dict[str, dict[str, dict[str, Any]]], tables: list[str]
) -> Verdict:
    """``readers``: reader name -> table -> ``{"versions", "rows", "per_append"}``."""
    verdict = Verdict()
    deletes = {op.target: op for op in ops.values() if op.kind == "delete" and op.target}
    for op in ops.values():
        verdict.outcomes[f"{op.engine} {op.kind} {op.outcome}"] += 1
    for reader, report in readers.items():
        for table in tables:
            seen = report[table]
            versions = seen["versions"]
            if versions != list(range(len(versions))):
                verdict.violations.append(f"{reader}: {table}: versions not contiguous: {versions}")
            per_append: dict[str, int] = seen["per_append"]
            unexplained = sorted(set(per_append) - set(ops))
            if unexplained:
                verdict.violations.append(
                    f"{reader}: {table}: rows of appends no writer recorded: {unexplained[:5]}"
                )
            if seen["rows"] != sum(per_append.values()):
                verdict.violations.append(f"{reader}: {table}: row total != sum per append")
    for op in ops.values():
        if op.kind not in ADDS_ROWS:
            continue
        counts = {
            name: report[op.table]["per_append"].get(op.op_id, 0)
            for name, report in readers.items()
        }
        if len(set(counts.values())) > 1:
            verdict.violations.append(f"readers disagree on {op.op_id} in {op.table}: {counts}")
        found = max(counts.values())
        allowed = _allowed(op, deletes)
        if found in allowed:
            continue
        if found > ROWS_PER_APPEND:
            verdict.duplicated += 1
            what = "duplicated"
        elif found == ROWS_PER_APPEND:
            verdict.present_but_told_failed += 1
            what = "present although its writer was told it failed (or deleted it)"
        elif found == 0:
            verdict.lost += 1
            what = "lost"
        else:
            what = "wrong row count"
        verdict.violations.append(
            f"{what}: {op.kind} {op.op_id} by {op.writer} ({op.engine}) in {op.table}: "
            f"told {op.outcome}, {found} rows found, allowed {sorted(allowed)}"
            + (f" (error: {op.error})" if op.error else "")
        )
    return verdict
