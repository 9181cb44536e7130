"""versitygw (the Versity S3 Gateway, Apache-2.0) on 127.0.0.1: the test bed's second real S3
server, independent of LocalStack, and one that users run on-premises.

Installed by ``localstack/install_versitygw.sh`` (``go install`` at a released version) into
``<cache>/bin/versitygw``. It serves S3 from a POSIX directory (``posix DIR``; object metadata
lives in extended attributes, so DIR must be on a filesystem with xattrs). Its PutObject honours
``If-None-Match: *`` atomically (412 for the second create; 0 double winners in 300 races of 8
writers, measured, see docs/reference/testbed.md). It speaks S3 only: no DynamoDB.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.process import ServerProcess, free_port
from deltaguard.spark_conf.jvm_deps import cache_dir

VERSITYGW_VERSION = "v1.8.0"


class VersityGWNotInstalledError(RuntimeError):
    """versitygw is not in the cache."""


def versitygw_binary() -> Path:
    """The installed versitygw binary; raises VersityGWNotInstalledError naming the fix."""
    binary = cache_dir() / "bin" / "versitygw"
    if not binary.is_file():
        raise VersityGWNotInstalledError(
            f"versitygw is not installed at {binary}: run `make localstack` "
            "(bash localstack/install_versitygw.sh)."
        )
    return binary


def _ready(url: str) -> bool:
    """Any HTTP answer at all (an unsigned GET gets 403 AccessDenied) means it serves."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=1.0):
            return True
    except urllib.error.HTTPError:
        return True


class VersityGWServer:
    """``versitygw posix DIR`` on a free loopback port; a context manager stopped by PID, which
    removes its data directory on stop."""

    def __init__(self, workdir: Path | None = None) -> None:
        self.binary = versitygw_binary()
        self.port = free_port()
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="deltaguard-versitygw-"))
        self.data_dir = self.workdir / "data"
        self.endpoint = Endpoint(url=f"http://127.0.0.1:{self.port}")
        self.server: ServerProcess | None = None

    def start(self, timeout_s: float = 30.0) -> VersityGWServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.server = ServerProcess(
            "versitygw",
            [
                str(self.binary),
                "--access",
                self.endpoint.access_key,
                "--secret",
                self.endpoint.secret_key,
                "--region",
                self.endpoint.region,
                "--port",
                f"127.0.0.1:{self.port}",
                "posix",
                str(self.data_dir),
            ],
            self.workdir / "versitygw.log",
            stop_grace_s=10,
        ).start(lambda: _ready(f"{self.endpoint.url}/"), timeout_s=timeout_s)
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> VersityGWServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
