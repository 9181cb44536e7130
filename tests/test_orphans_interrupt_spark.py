"""SIGINT and SIGTERM during ``deltaguard orphans --engine spark --delete --yes``: a real CLI
process (its own local Spark session), a real signal once the executors have begun deleting.
The stop marker and the cancelled job group stop the tasks at their next batch, every batch a
task sent is recorded (its answers, or ``unknown``), and the manifest's counts bound the
files really gone, as for the local engine (:mod:`test_orphans_interrupt`)."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest
from test_orphans_interrupt import (
    check_interrupted,
    finish,
    start_cli,
    stray_table,
    wait_for_status,
)

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    "sig",
    [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.long)],
    ids=["SIGINT", "SIGTERM"],
)
def test_signal_mid_delete_with_the_spark_engine(tmp_path: Path, sig: signal.Signals) -> None:
    planned = stray_table(tmp_path / "t", 12_000)  # 2 delete tasks of 6 batches each
    manifest = tmp_path / "m"
    proc = start_cli(
        "orphans", str(tmp_path / "t"), "--engine", "spark", "--spark-master", "local[2]",
        "--delete", "--yes", "--manifest", str(manifest),
        env={"PYSPARK_PYTHON": sys.executable, "DELTAGUARD_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip
    wait_for_status(manifest, "deleting", proc, timeout_s=400)  # a JVM, a scan, a re-read
    deadline = time.monotonic() + 120
    # a task's third batch was sent: its first batches are settled, files are gone
    while len(list((manifest / "outcome").glob("part-*.parquet"))) < 3:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.005)
    proc.send_signal(sig)
    ended = finish(proc)
    gone = {p for p in planned if not (tmp_path / "t" / p).exists()}
    doc = check_interrupted(ended, manifest, planned, gone, sig.name)
    assert doc["counts"]["deleted"] > 0 and not (manifest / ".stop").exists()
    assert (tmp_path / "t" / "p=a/live.parquet").exists()
