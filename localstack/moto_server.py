"""A moto server (``moto[server]``, from the project venv) on 127.0.0.1.

moto answers single conditional requests correctly but its check-and-store is not atomic under
races, so tests use it for protocol behaviour only, never to prove mutual exclusion.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from deltaguard.testbed.endpoints import Endpoint
from deltaguard.testbed.process import ServerProcess, free_port, http_ok


class MotoServer:
    """``moto_server`` on a free loopback port; a context manager stopped by PID."""

    def __init__(self, workdir: Path | None = None) -> None:
        self.port = free_port()
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="deltaguard-moto-"))
        self.endpoint = Endpoint(url=f"http://127.0.0.1:{self.port}")
        self.server: ServerProcess | None = None

    def start(self, timeout_s: float = 30.0) -> MotoServer:
        self.server = ServerProcess(
            "moto",
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            self.workdir / "moto.log",
        ).start(lambda: http_ok(f"{self.endpoint.url}/moto-api/"), timeout_s=timeout_s)
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def __enter__(self) -> MotoServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
