"""MinIO on 127.0.0.1: the test bed's third real S3 server, the one teams without DynamoDB run
Delta on (delta-io/delta #1336), independent of LocalStack and versitygw.

Installed by ``localstack/install_go_s3_server.sh minio`` (``go install`` at a pseudo-version:
the Go module proxy serves no tagged MinIO release) into ``<cache>/bin/minio``. One server, one
drive (a directory under the server's work directory), root credentials from the environment,
the web console and update checks off, its certificates directory inside the work directory
(nothing under ``~/.minio``). Its PutObject honours ``If-None-Match: *`` atomically (412 for
the second create, minio #20346; 0 double winners in 300 races of 8 writers, measured,
``/work/shared/research``); where it differs from LocalStack and versitygw, and how the test
bed handles it: docs/reference/testbed.md ("MinIO"). S3 only: no DynamoDB. The life cycle (port, work
directory, start and stop by PID) is :class:`~deltaguard.localstack.go_s3_server.GoS3Server`'s.
"""

from __future__ import annotations

import os

from deltaguard.localstack.go_s3_server import GoS3Server
from deltaguard.localstack.process import free_port

#: The pseudo-version install_go_s3_server.sh builds (a commit of 2026-02-12).
MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"


class MinIOServer(GoS3Server):
    """``minio server DIR`` on a free loopback port (its console on another, never exposed);
    the test bed's default keys are its root user."""

    binary_name = "minio"
    label = "MinIO"
    start_timeout_s = 60.0

    def command(self) -> list[str]:
        return [
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
        ]

    def environment(self) -> dict[str, str]:
        return {
            **os.environ,
            "MINIO_ROOT_USER": self.endpoint.access_key,
            "MINIO_ROOT_PASSWORD": self.endpoint.secret_key,
            "MINIO_REGION": self.endpoint.region,
            "MINIO_BROWSER": "off",
            "MINIO_UPDATE": "off",
        }

    def ready(self) -> bool:
        """MinIO's liveness endpoint answers 200 once the drive is formatted and S3 serves."""
        import urllib.request

        url = f"{self.endpoint.url}/minio/health/live"
        with urllib.request.urlopen(url, timeout=1.0) as response:
            return bool(response.status == 200)
