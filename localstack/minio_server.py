"""MinIO on 127.0.0.1: the test bed's third real S3 server, the one teams without DynamoDB run
Delta on (delta-io/delta #1336), independent of LocalStack and versitygw.

Installed by ``localstack/install_minio.sh`` (``go install`` at a pseudo-version: the Go module
proxy serves no tagged MinIO release) into ``<cache>/bin/minio``. One server, one drive (a
directory under the server's temporary work directory), root credentials from the
environment, the web console and update checks off, its certificates directory inside the
work directory (nothing under ``~/.minio``). Its PutObject honours ``If-None-Match: *``
atomically (412 for the second create, minio #20346; 0 double winners in 300 races of 8
writers, measured, ``/work/shared/research``); where it differs from LocalStack and
versitygw, and how the test bed handles it: docs/reference/testbed.md ("MinIO"). S3 only: no DynamoDB.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.process import ServerProcess, free_port
from deltaguard.spark_conf.jvm_deps import cache_dir

#: The pseudo-version install_minio.sh builds (a commit of 2026-02-12).
MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"


class MinIONotInstalledError(RuntimeError):
    """MinIO is not in the cache."""


def minio_binary() -> Path:
    """The installed MinIO binary; raises MinIONotInstalledError naming the fix."""
    binary = cache_dir() / "bin" / "minio"
    if not binary.is_file():
        raise MinIONotInstalledError(
            f"MinIO is not installed at {binary}: run `make localstack` "
            "(bash localstack/install_minio.sh)."
        )
    return binary


def _ready(url: str) -> bool:
    """MinIO's liveness endpoint answers 200 once the drive is formatted and S3 serves."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/minio/health/live", timeout=1.0) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


class MinIOServer:
    """``minio server DIR`` on a free loopback port (its console on another, never exposed);
    a context manager stopped by PID, which removes its data directory on stop."""

    def __init__(self, workdir: Path | None = None) -> None:
        self.binary = minio_binary()
        self.port = free_port()
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="deltaguard-minio-"))
        self.data_dir = self.workdir / "data"
        # The test bed's default keys (its processes build Endpoint(url=...)): the root user.
        self.endpoint = Endpoint(url=f"http://127.0.0.1:{self.port}")
        self.server: ServerProcess | None = None

    def start(self, timeout_s: float = 60.0) -> MinIOServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "MINIO_ROOT_USER": self.endpoint.access_key,
            "MINIO_ROOT_PASSWORD": self.endpoint.secret_key,
            "MINIO_REGION": self.endpoint.region,
            "MINIO_BROWSER": "off",
            "MINIO_UPDATE": "off",
        }
        self.server = ServerProcess(
            "minio",
            [
                str(self.binary),
                "server",
                "--quiet",
                "--address",
                f"127.0.0.1:{self.port}",
                "--console-address",
                f"127.0.0.1:{free_port()}",
                "--certs-dir",
                str(self.workdir / "certs"),
                str(self.data_dir),
            ],
            self.workdir / "minio.log",
            env=env,
            stop_grace_s=10,
        ).start(lambda: _ready(self.endpoint.url), timeout_s=timeout_s)
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> MinIOServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
