"""A Go S3 server on 127.0.0.1 for the test bed (versitygw, MinIO): the shared life cycle.

Each server is a binary that ``localstack/install_go_s3_server.sh NAME`` builds with
``go install`` into ``<cache>/bin/NAME``; a subclass says how to start it (its command line and
environment) and when it serves (its readiness check). The base class owns the rest: a free
loopback port, a work directory (a fresh temporary one unless given) with the data directory
``data`` and the log ``NAME.log`` in it, the start by PID through
:class:`~deltaguard.localstack.process.ServerProcess` (a start that fails stops the process and
raises ``ServerStartError`` with the log's tail), and the stop (SIGTERM, SIGKILL after 10 s,
nothing left running), which removes the data directory.
"""

from __future__ import annotations

import shutil
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar, Self

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.process import ServerProcess, free_port
from deltaguard.spark_conf.jvm_deps import cache_dir


class GoS3ServerNotInstalledError(RuntimeError):
    """The server's binary is not in the cache."""


class GoS3Server(ABC):
    """One Go S3 server on a free loopback port, with the test bed's default keys
    (``Endpoint(url=...)``: the processes of the test bed build the same); a context manager
    stopped by PID, which removes its data directory on stop. Raises
    GoS3ServerNotInstalledError, naming the fix, when the binary is missing."""

    #: The binary in ``<cache>/bin``, and the name of the process, its log and its install stamp.
    binary_name: ClassVar[str]
    #: How errors name the server.
    label: ClassVar[str]
    #: How long ``start()`` waits for the server to serve, by default.
    start_timeout_s: ClassVar[float]

    def __init__(self, workdir: Path | None = None) -> None:
        self.binary = self.installed_binary()
        self.port = free_port()
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix=f"deltaguard-{self.binary_name}-"))
        self.data_dir = self.workdir / "data"
        self.endpoint = Endpoint(url=f"http://127.0.0.1:{self.port}")
        self.server: ServerProcess | None = None

    @classmethod
    def installed_binary(cls) -> Path:
        """The installed binary; raises GoS3ServerNotInstalledError naming the fix."""
        binary = cache_dir() / "bin" / cls.binary_name
        if not binary.is_file():
            raise GoS3ServerNotInstalledError(
                f"{cls.label} is not installed at {binary}: run `make localstack` "
                f"(bash localstack/install_go_s3_server.sh {cls.binary_name})."
            )
        return binary

    @abstractmethod
    def command(self) -> list[str]:
        """The command line serving S3 from ``data_dir`` on 127.0.0.1:``port``."""

    def environment(self) -> dict[str, str] | None:
        """The server's environment (None: this process's)."""
        return None

    @abstractmethod
    def ready(self) -> bool:
        """True once the server serves S3 (an OSError counts as not yet)."""

    def start(self, timeout_s: float | None = None) -> Self:
        """Starts the server and waits until it serves (``start_timeout_s`` by default)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.server = ServerProcess(
            self.binary_name,
            self.command(),
            self.workdir / f"{self.binary_name}.log",
            env=self.environment(),
            stop_grace_s=10,
        ).start(self.ready, timeout_s=self.start_timeout_s if timeout_s is None else timeout_s)
        return self

    def stop(self) -> None:
        """Stops the server (idempotent) and removes its data directory."""
        if self.server is not None:
            self.server.stop()
            self.server = None
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
