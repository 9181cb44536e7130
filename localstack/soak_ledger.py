"""The soak writers' own accounts (ledgers): what each writer tried and what it was told.

A writer appends one JSON line before an operation (``intent``) and one after it (``ok``,
``failed`` or ``unknown``, with the error), each flushed and fsynced before the writer goes on,
each with its wall-clock time (``at``, epoch seconds). A SIGKILL can cut an operation between
the two: its outcome stays ``unknown``. The soak reads the newest line of a running writer's
ledger (:func:`open_operation_since`) to kill an operation that runs past its deadline. A
killed writer may leave a half-written last line, which :func:`read_ledgers` ignores (the line
before it is complete).

Operation kinds (``kind``):

- ``append``: one commit adding :data:`ROWS_PER_APPEND` rows whose ``append_id`` is the op id;
- ``ephemeral``: the same, for rows that a following ``delete`` removes again;
- ``delete``: deletes the rows of ephemeral append ``target``;
- ``merge``: rewrites the rows of append ``target`` (``touched = touched + 1``); row counts do
  not change;
- ``optimize``: compaction; rows do not change;
- ``abandoned``: a data file written and never committed (a job that died between writing its
  data and committing); told ``failed``, so its rows must be absent.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

ROWS_PER_APPEND = 3
Outcome = Literal["ok", "failed", "unknown"]
ADDS_ROWS = ("append", "ephemeral", "abandoned")


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
    #: Epoch seconds of the intent and of the outcome (None: no outcome recorded).
    started: float | None = None
    ended: float | None = None

    @property
    def seconds(self) -> float | None:
        """How long the operation ran, if it recorded both ends."""
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started


class Ledger:
    """One writer process's ledger file (append mode: a restarted writer keeps adding)."""

    def __init__(self, path: Path, writer: str, engine: str) -> None:
        self.writer = writer
        self.engine = engine
        #: True when an earlier process of this writer already wrote to the ledger.
        self.resumed = path.exists() and path.stat().st_size > 0
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
                "at": time.time(),
            }
        )

    def outcome(self, op_id: str, outcome: Outcome, error: str | None = None) -> None:
        """``unknown`` is for an error that leaves the commit's fate open (the store's
        CommitOutcomeUnknownError): the commit may or may not be in the table."""
        self._write({"op": op_id, "event": outcome, "error": error, "at": time.time()})

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
                    started=record.get("at"),
                )
            elif op_id not in ops:
                raise ValueError(f"{path}:{number}: outcome of op {op_id} without its intent")
            else:
                ops[op_id].outcome = record["event"]
                ops[op_id].error = record.get("error")
                ops[op_id].ended = record.get("at")
    return ops


def open_operation_since(path: Path, tail_bytes: int = 4096) -> float | None:
    """When the operation the ledger's writer is running started (epoch seconds), or None if
    it is between operations (or has not started one). Reads only the end of the file: the
    newest complete line is an ``intent`` exactly while an operation runs."""
    try:
        with path.open("rb") as file:
            file.seek(0, os.SEEK_END)
            file.seek(max(0, file.tell() - tail_bytes))
            tail = file.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    for line in reversed(tail.splitlines()):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by SIGKILL, or the first, partial line of the tail
        if record.get("event") == "intent" and "at" in record:
            return float(record["at"])
        return None
    return None
