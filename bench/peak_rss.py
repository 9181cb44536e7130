"""A process's peak RSS, read where it is right.

On Linux a child's ``ru_maxrss`` (its own ``getrusage``, ``wait4``'s and ``RUSAGE_CHILDREN``
alike) starts from the forking parent's peak and keeps it across exec, so a bench process that
built a large table in memory reports its own peak as every child's (a child using 13 MiB
reported 513 MiB under a 500 MiB parent on this machine). ``VmHWM`` in ``/proc/PID/status``
belongs to the process's own memory map, which exec replaces: :func:`peak_rss_mib` reads it.

A child that is not ours to change, ``deltaguard``'s CLI, is measured by running it in-process
under ``python -m bench.peak_rss OUT ARGS...`` (:func:`measured_cli`): the CLI's exit code,
its output, and its VmHWM written to ``OUT`` when it exits.
"""

from __future__ import annotations

import sys
from pathlib import Path


def proc_status(pid: int | None = None) -> dict[str, str]:
    """The fields of ``/proc/PID/status`` (None: this process), each value as written after
    its tab. Raises OSError if there is no such process."""
    text = Path(f"/proc/{pid if pid is not None else 'self'}/status").read_text()
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def peak_rss_mib(pid: int | None = None) -> int:
    """The peak RSS (MiB) of process ``pid`` (None: this one), from its ``VmHWM``. Raises
    OSError if there is no such process, RuntimeError if it has no memory map (a zombie)."""
    hwm = proc_status(pid).get("VmHWM")
    if hwm is None:
        raise RuntimeError(f"process {pid} has no VmHWM (exited?)")
    return int(hwm.split()[0]) // 1024


def measured_cli(out: Path) -> list[str]:
    """The command that runs ``deltaguard`` with the arguments appended to it and writes its
    peak RSS (MiB) to ``out``; run it with the repository root as the working directory."""
    return [sys.executable, "-m", "bench.peak_rss", str(out)]


def main(argv: list[str]) -> None:
    """Runs the CLI with ``argv[1:]`` and exits as it does (click's ``SystemExit``, passed on
    unchanged); writes this process's peak RSS to ``argv[0]`` first."""
    from deltaguard.tools.cli import main as cli

    try:
        cli.main(args=argv[1:], prog_name="deltaguard")
    finally:
        Path(argv[0]).write_text(f"{peak_rss_mib()}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
