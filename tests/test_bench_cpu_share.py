"""``bench/cpu_share.py`` puts a process tree's CPU in the window it was spent in, under its
own name, and counts it in the machine's busy time too."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from bench.cpu_share import CpuSampler

#: A child that spins for a second, then sleeps (it stays alive: a tree that is gone counts 0).
_SPIN_THEN_SLEEP = (
    "import time\nend = time.time() + 1.0\nwhile time.time() < end:\n    pass\ntime.sleep(30)\n"
)


def test_a_busy_child_is_counted_under_its_name_in_its_window() -> None:
    spinner = subprocess.Popen([sys.executable, "-c", _SPIN_THEN_SLEEP])
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with CpuSampler({"spinner": spinner.pid, "sleeper": sleeper.pid}, every_s=0.05) as cpu:
            started = time.time()
            time.sleep(1.6)
        busy = cpu.used(started + 0.3, started + 0.9)  # inside the spin (after the start-up)
        idle = cpu.used(started + 1.2, started + 1.5)  # after it
    finally:
        for proc in (spinner, sleeper):
            proc.kill()
            proc.wait()
    assert busy["spinner"] >= 0.15, busy  # 0.6 s of spinning; a quarter core under CI load
    assert busy["sleeper"] < 0.05, busy
    assert busy["machine"] >= busy["spinner"] * 0.9, busy
    assert idle["spinner"] < 0.05, idle


def test_a_window_outside_the_samples_is_refused() -> None:
    with CpuSampler({}, every_s=0.05) as cpu:
        time.sleep(0.2)
    with pytest.raises(ValueError, match="no samples around"):
        cpu.used(time.time() + 10, time.time() + 11)
