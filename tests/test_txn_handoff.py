"""Two Spark drivers take turns committing idempotent writes of one application id to one S3
table (``localstack/txn_handoff.py``), on every line: each sees the other's ``txnVersion``
(Delta skips a batch the table has and applies the next), and every ``N.crc`` either drivers
read carries the table's ``setTransactions`` exactly or not at all (the store's derived
blind-append checksum included), checked against the log replayed without Spark and against
Delta's own computed state (``checksum.mismatch.fatal``: Delta's check raises on a mismatch).

4.2 in ``make test`` (about a minute: two driver JVMs and a state reconstruction per step); 3.5
(the SDK v1 jar), 4.0 and 3.5 on Hadoop 3.4 in ``make soak``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_spark_lines_e2e import line_python  # noqa: F401  (a fixture)

from deltaguard.localstack.multi_driver import RESULT_PREFIX
from deltaguard.localstack.txn_handoff import ROWS
from deltaguard.spark_conf.spark_lines import by_name

pytestmark = pytest.mark.spark
APP = "query-7"


class _Driver:
    """A ``txn_handoff`` driver process, asked one command at a time."""

    def __init__(self, python: str, table: str, endpoint_url: str, log: Path) -> None:
        self.log = log
        with log.open("w") as stderr:
            self.proc = subprocess.Popen(
                [python, "-m", "deltaguard.localstack.txn_handoff", table, endpoint_url],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.ready = self._answer()

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(RESULT_PREFIX):
                answer: dict[str, Any] = json.loads(line[len(RESULT_PREFIX) :])
                return answer
        tail = self.log.read_text()[-3000:]
        raise AssertionError(f"driver ended (exit {self.proc.wait()}): {tail}")

    def ask(self, *command: object) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(" ".join(str(c) for c in command) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def close(self) -> None:
        if self.proc.poll() is None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _assert_exact(answer: dict[str, Any]) -> None:
    """The newest version's setTransactions: Delta's computed state equals the log's, and the
    stored N.crc carries the same or none."""
    truth = answer["log_txns"]
    assert answer["delta"]["version"] == answer["after"], answer
    assert answer["delta"]["txns"] == truth, answer
    stored = answer["stored_checksum_txns"]
    assert stored is None or stored == truth, answer


@pytest.mark.parametrize(
    "line",
    [
        "4.2",
        *(pytest.param(line, marks=pytest.mark.long) for line in ("3.5", "4.0", "3.5-hadoop3.4")),
    ],
)
def test_second_driver_sees_the_first_drivers_txn_version(
    line,
    line_python,  # noqa: F811
    localstack,
    ls_bucket,
    tmp_path,
):
    python = sys.executable if line == "4.2" else line_python(line)
    table = f"s3a://{ls_bucket}/handoff"
    a = _Driver(python, table, localstack.endpoint.url, tmp_path / "a.log")
    b = _Driver(python, table, localstack.endpoint.url, tmp_path / "b.log")
    try:
        assert a.ready["ready"].startswith(by_name(line).spark + "."), a.ready
        steps = [
            (a, ("create",), True, {}),
            (a, ("txn", APP, 1), True, {APP: 1}),
            # B has never read the table: it must see A's version 1.
            (b, ("txn", APP, 1), False, {APP: 1}),
            # A blind append: the store derives N.crc, carrying setTransactions.
            (b, ("blind",), True, {APP: 1}),
            # A derives its checksum from that one; B must then see A's version 2.
            (a, ("txn", APP, 2), True, {APP: 2}),
            (b, ("txn", APP, 2), False, {APP: 2}),
        ]
        answers = []
        for driver, command, commits, txns in steps:
            answer = driver.ask(*command)
            answers.append(answer)
            landed = answer["after"] == answer["before"] + 1
            assert landed == commits, answer
            assert answer["log_txns"] == txns, answer
            (tmp_path / "answers.json").write_text(json.dumps(answers, indent=1))
            _assert_exact(answer)
        rows = a.ask("rows")["rows"]
    finally:
        a.close()
        b.close()
    assert rows == {"blind": 2 * ROWS, **{f"{APP}/{v}": ROWS for v in (1, 2)}}, rows
    # Not vacuous: the checksums the drivers read did carry the transactions (Delta's own for
    # the idempotent commits, the store's derived one for the blind appends).
    carried = [x["stored_checksum_txns"] for x in answers if x["after"] > x["before"]]
    assert carried[-1] == {APP: 2} and carried[-2] == {APP: 1}, answers
