"""versitygw (the Versity S3 Gateway, Apache-2.0) on 127.0.0.1: the test bed's second real S3
server, independent of LocalStack, and one that users run on-premises.

Installed by ``localstack/install_go_s3_server.sh versitygw`` (``go install`` at a released
version) into ``<cache>/bin/versitygw``. It serves S3 from a POSIX directory (``posix DIR``;
object metadata lives in extended attributes, so DIR must be on a filesystem with xattrs). Its
PutObject honours ``If-None-Match: *`` atomically (412 for the second create; 0 double winners
in 300 races of 8 writers, measured, see docs/reference/testbed.md). It speaks S3 only: no DynamoDB.
The life cycle (port, work directory, start and stop by PID) is
:class:`~deltaguard.localstack.go_s3_server.GoS3Server`'s.
"""

from __future__ import annotations

from deltaguard.localstack.go_s3_server import GoS3Server

VERSITYGW_VERSION = "v1.8.0"


class VersityGWServer(GoS3Server):
    """``versitygw posix DIR`` on a free loopback port."""

    binary_name = "versitygw"
    label = "versitygw"
    start_timeout_s = 30.0

    def command(self) -> list[str]:
        return [
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
        ]

    def ready(self) -> bool:
        """Any HTTP answer at all (an unsigned GET gets 403 AccessDenied) means it serves."""
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(f"{self.endpoint.url}/", timeout=1.0):
                return True
        except urllib.error.HTTPError:
            return True
