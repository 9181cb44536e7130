"""``bench/cpu_share.py`` puts a process tree's CPU in the window it was spent in, under its
own name, and counts it in the machine's busy time too."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from bench.cpu_share import CpuSampler

#: A child that says "ready", waits for a line on stdin, spins for 0.6 s of its own CPU time
#: (however long that takes on a loaded machine), prints the CPU seconds it spun and sleeps (it
#: stays alive: a tree that is gone counts 0).
_SPIN_ON_GO = (
    "import sys, time\n"
    "print('ready', flush=True)\n"
    "sys.stdin.readline()\n"
    "start = time.process_time()\n"
    "while time.process_time() - start < 0.6:\n"
    "    pass\n"
    "print(time.process_time() - start, flush=True)\n"
    "time.sleep(60)\n"
)


def _sampled_after(cpu: CpuSampler, when: float) -> None:
    """Waits until ``cpu`` has a sample taken after ``when``."""
    deadline = time.monotonic() + 60  # a hang guard, not a timing assertion
    while True:
        try:
            cpu.used(when, when)
            return
        except ValueError:
            assert time.monotonic() < deadline, "the sampler took no sample for 60 s"
            time.sleep(0.01)


def _edge(cpu: CpuSampler) -> float:
    """A window edge with samples on both sides taken after this call began: the counters
    there are exact while the children stay as they were when it was called (idle)."""
    _sampled_after(cpu, time.time())
    edge = time.time()
    _sampled_after(cpu, edge)
    return edge


def test_a_busy_child_is_counted_under_its_name_in_its_window() -> None:
    """The windows are cut by events, not by a clock: the spin starts when the test says go,
    once the sampler has sampled the idle child; it ends when the child says so."""
    spinner = subprocess.Popen(
        [sys.executable, "-c", _SPIN_ON_GO],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert spinner.stdin is not None and spinner.stdout is not None and sleeper.stdout is not None
    try:
        with CpuSampler({"spinner": spinner.pid, "sleeper": sleeper.pid}, every_s=0.05) as cpu:
            assert spinner.stdout.readline() == "ready\n" == sleeper.stdout.readline()
            # both children idle from here (blocked on stdin, asleep): a sample in between
            start = _edge(cpu)
            spinner.stdin.write("go\n")
            spinner.stdin.flush()
            spun = float(spinner.stdout.readline())  # the child's own count of its spin
            end = _edge(cpu)
            _sampled_after(cpu, end + 0.3)
            later = _edge(cpu)
        busy = cpu.used(start, end)  # the whole spin, edges in idle stretches
        idle = cpu.used(end, later)  # after it
    finally:
        for proc in (spinner, sleeper):
            proc.kill()
            proc.wait()
    assert busy["spinner"] >= spun * 0.9, (busy, spun)
    assert busy["sleeper"] < 0.05, busy
    assert busy["machine"] >= busy["spinner"] * 0.9, busy
    assert idle["spinner"] < 0.05, idle


def test_a_window_outside_the_samples_is_refused() -> None:
    with CpuSampler({}, every_s=0.05) as cpu:
        time.sleep(0.2)
    with pytest.raises(ValueError, match="no samples around"):
        cpu.used(time.time() + 10, time.time() + 11)
