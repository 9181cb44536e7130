"""Child server processes owned by the test bed: started on 127.0.0.1, stopped by PID.

Contract: :class:`ServerProcess` starts its command in a new session (its own process group),
waits until a readiness check passes, and on :meth:`ServerProcess.stop` sends SIGTERM to the
whole group, then SIGKILL after a grace period, and reaps it; descendants that left the group
(a server's own helper servers in their own session) get SIGKILL after it. It is a context manager, and an
``atexit`` hook stops anything still running, so a test run leaves no server behind.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

_RUNNING: weakref.WeakSet[ServerProcess] = weakref.WeakSet()


def descendants(pid: int) -> list[Any]:
    """Every living descendant of ``pid`` (children, their children, ...) as
    ``psutil.Process`` objects, which remember their start time: a later process that reuses
    a PID is not taken for one of them."""
    import psutil

    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.NoSuchProcess:
        return []


def _wait_until_dead(processes: list[Any], timeout_s: float) -> None:
    """Waits until each of ``processes`` (``psutil.Process``) has exited or is a zombie: a
    signalled process dies a moment later, not when the signal is sent."""
    import psutil

    deadline = time.monotonic() + timeout_s
    for process in processes:
        while time.monotonic() < deadline:
            try:
                if process.status() == psutil.STATUS_ZOMBIE:
                    break
            except psutil.NoSuchProcess:
                break
            time.sleep(0.02)


class ServerStartError(RuntimeError):
    """A server did not become ready; the message carries the tail of its log."""


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """One server child process with a log file, a readiness check and a clean stop."""

    def __init__(
        self,
        name: str,
        command: list[str],
        log_path: Path,
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        stop_grace_s: float = 15.0,
    ) -> None:
        self.name = name
        self.command = command
        self.log_path = log_path
        self.env = env
        self.cwd = cwd
        self.stop_grace_s = stop_grace_s
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError(f"{self.name} is not running")
        return self.process.pid

    def start(self, ready: Callable[[], bool], timeout_s: float = 60.0) -> Self:
        """Starts the process and polls ``ready`` until it returns True.

        Raises ServerStartError (after stopping the process) on timeout or early exit.
        """
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            self.command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,
        )
        log.close()
        _RUNNING.add(self)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise ServerStartError(
                    f"{self.name} exited with code {self.process.returncode} during start-up; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            with contextlib.suppress(OSError):
                if ready():
                    return self
            time.sleep(0.2)
        self.stop()
        raise ServerStartError(
            f"{self.name} was not ready after {timeout_s:.0f}s; log {self.log_path}:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM to the process group, SIGKILL after the grace period; idempotent. If the
        server was still running, returns once every descendant it had then is gone (or a
        zombie: dead, not yet reaped), at most 5 s after the last SIGKILL."""
        proc = self.process
        if proc is None:
            return
        # Every descendant, found now: those that started their own session (LocalStack runs
        # DynamoDB Local so) are outside the group and are killed after the group is gone.
        started = descendants(proc.pid) if proc.poll() is None else []
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=self.stop_grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        # Children that outlived the leader (same group) get SIGKILL too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        if started:
            import psutil

            for child in started:
                with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                    child.kill()  # psutil checks the PID still names the same process
            _wait_until_dead(started, timeout_s=5.0)
        _RUNNING.discard(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def http_ok(url: str, timeout_s: float = 1.0) -> bool:
    """True if a GET of ``url`` answers 2xx."""
    import urllib.request

    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return bool(200 <= response.status < 300)


@atexit.register
def _stop_all() -> None:
    for server in list(_RUNNING):
        server.stop()
