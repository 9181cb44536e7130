"""SIGINT and SIGTERM during ``deltaguard orphans --engine spark --delete --yes``: a real CLI
process (its own local Spark session), a real signal once the executors have begun deleting.
The stop marker and the cancelled job group stop the tasks at their next batch, every batch a
task sent is recorded (its answers, or ``unknown``), and the manifest's counts bound the
files really gone, as for the local engine (:mod:`test_orphans_interrupt`); a re-run with
the same ``--manifest`` finishes the job and names the Spark run it continues
(:func:`test_orphans_interrupt.check_rerun`)."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest
from test_orphans_interrupt import (
    check_interrupted,
    check_rerun,
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
def test_signal_mid_delete_with_the_spark_engine(
    tmp_path: Path, sig: signal.Signals, run_cli
) -> None:
    planned = stray_table(tmp_path / "t", 12_000)  # 2 delete tasks of 6 batches each
    manifests = tmp_path / "m"
    args = ["orphans", str(tmp_path / "t"), "--engine", "spark", "--spark-master", "local[2]",
            "--delete", "--yes", "--manifest", str(manifests)]  # fmt: skip
    env = {"PYSPARK_PYTHON": sys.executable, "DELTAGUARD_STATE_DIR": str(tmp_path / "state")}
    proc = start_cli(*args, env=env)
    manifest = wait_for_status(manifests, "deleting", proc, timeout_s=400)  # a JVM, a re-read
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
    if sig is signal.SIGTERM:
        return  # the re-run below is the same for either signal
    # the re-run that continues it: the local engine (no second JVM; the Spark engine's own
    # continuation is checked in test_orphans_spark_engine, in its module's session)
    local = [a for a in args if a not in ("--engine", "spark", "--spark-master", "local[2]")]
    check_rerun(run_cli(*local, "--json", env=env), manifests, manifest, doc, planned, gone)
    assert not any((tmp_path / "t" / p).exists() for p in planned)
    assert (tmp_path / "t" / "p=a/live.parquet").exists()
