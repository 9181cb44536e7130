"""Where the CPU goes during a time window: the machine's busy CPU seconds and those of named
server process trees (LocalStack, the fault proxy), so a throughput figure on this small
machine can say whether the writers were short of CPU and who used it.

A :class:`CpuSampler` samples in a thread, every ``every_s`` seconds, the machine's busy CPU
time (``psutil.cpu_times``: everything but idle and iowait) and the user + system CPU time of
each named process and its descendants, with the wall-clock time of the sample
(``time.time()``, the clock the writers stamp their appends with).
:meth:`CpuSampler.used` gives the CPU seconds spent inside a window, interpolated linearly
between the samples around each end: the error is at most one sampling interval's CPU at each
end, small against windows of several seconds.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import psutil


@dataclass(frozen=True)
class _Sample:
    at: float
    busy_s: float
    by_name: dict[str, float]


def machine_busy_s() -> float:
    """CPU seconds the machine has spent busy since boot, all cores (not idle, not iowait)."""
    t = psutil.cpu_times()
    return float(sum(t) - t.idle - getattr(t, "iowait", 0.0))


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of the process ``pid`` and its living descendants (0 for
    processes that are gone)."""
    total = 0.0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    for proc in procs:
        try:
            cpu = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += cpu.user + cpu.system
    return total


class CpuSampler:
    """Samples the machine's and the ``pids`` trees' CPU (name -> pid) until closed."""

    def __init__(self, pids: dict[str, int], every_s: float = 0.2) -> None:
        self.pids = dict(pids)
        self.every_s = every_s
        self._samples: list[_Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)
        self._lock = threading.Lock()

    def _take(self) -> None:
        sample = _Sample(
            time.time(),
            machine_busy_s(),
            {name: tree_cpu_s(pid) for name, pid in self.pids.items()},
        )
        with self._lock:
            self._samples.append(sample)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._take()

    def __enter__(self) -> Self:
        self._take()
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _at(self, samples: list[_Sample], when: float) -> dict[str, float]:
        """The counters at ``when``, interpolated between the samples around it."""
        times = [s.at for s in samples]
        i = bisect_left(times, when)
        if i == 0 or i == len(samples):
            raise ValueError(f"no samples around {when:.3f} ({times[0]:.3f}..{times[-1]:.3f})")
        a, b = samples[i - 1], samples[i]
        f = (when - a.at) / (b.at - a.at)

        def mix(x: float, y: float) -> float:
            return x + (y - x) * f

        values = {name: mix(a.by_name[name], b.by_name[name]) for name in self.pids}
        values["machine"] = mix(a.busy_s, b.busy_s)
        return values

    def used(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds spent between ``start`` and ``end`` (``time.time()`` values inside the
        sampled span): ``machine`` (all processes, all cores) and one entry per name. Raises
        ValueError for a window outside the samples."""
        with self._lock:
            samples = list(self._samples)
        first, last = self._at(samples, start), self._at(samples, end)
        return {k: max(0.0, last[k] - first[k]) for k in first}
