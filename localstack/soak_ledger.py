"""The soak writers' own accounts (ledgers): what each writer tried and what it was told.

A writer appends one JSON line before an operation (``intent``) and one after it (``ok``,
``failed`` or ``unknown``, with the error), each flushed and fsynced before the writer goes on. A SIGKILL can
cut an operation between the two: its outcome stays ``unknown``. A killed writer may leave a
half-written last line, which :func:`read_ledgers` ignores (the line before it is complete).

Operation kinds (``kind``):

- ``append``: one commit adding :data:`ROWS_PER_APPEND` rows whose ``append_id`` is the op id;
- ``ephemeral``: the same, for rows that a following ``delete`` removes again;
- ``delete``: deletes the rows of ephemeral append ``target``;
- ``merge``: rewrites the rows of append ``target`` (``touched = touched + 1``); row counts do
  not change;
- ``optimize``: compaction; rows do not change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

ROWS_PER_APPEND = 3
Outcome = Literal["ok", "failed", "unknown"]
ADDS_ROWS = ("append", "ephemeral")


@dataclass
class Operation:
    """One operation as its writer recorded it."""

    op_id: str
    writer: str
    engine: str
    table: str
    kind: str
    target: str | None = None
    outcome: Outcome = "unknown"
    error: str | None = None


class Ledger:
    """One writer process's ledger file (append mode: a restarted writer keeps adding)."""

    def __init__(self, path: Path, writer: str, engine: str) -> None:
        self.writer = writer
        self.engine = engine
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("a", encoding="utf-8")

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def intent(self, op_id: str, table: str, kind: str, target: str | None = None) -> None:
        self._write(
            {
                "op": op_id,
                "writer": self.writer,
                "engine": self.engine,
                "table": table,
                "kind": kind,
                "target": target,
                "event": "intent",
            }
        )

    def outcome(self, op_id: str, outcome: Outcome, error: str | None = None) -> None:
        """``unknown`` is for an error that leaves the commit's fate open (the store's
        CommitOutcomeUnknownError): the commit may or may not be in the table."""
        self._write({"op": op_id, "event": outcome, "error": error})

    def close(self) -> None:
        self._file.close()


def read_ledgers(paths: Iterable[Path]) -> dict[str, Operation]:
    """Every operation of every ledger, by op id. An outcome line without its intent, or an op
    id used twice, raises ValueError (a writer bug, not a store problem)."""
    ops: dict[str, Operation] = {}
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by SIGKILL: its op stays unknown
            op_id = record["op"]
            if record["event"] == "intent":
                if op_id in ops:
                    raise ValueError(f"{path}:{number}: op id {op_id} used twice")
                ops[op_id] = Operation(
                    op_id,
                    record["writer"],
                    record["engine"],
                    record["table"],
                    record["kind"],
                    record.get("target"),
                )
            elif op_id not in ops:
                raise ValueError(f"{path}:{number}: outcome of op {op_id} without its intent")
            else:
                ops[op_id].outcome = record["event"]
                ops[op_id].error = record.get("error")
    return ops
