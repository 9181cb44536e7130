"""Where a Delta table lives, as Spark/Hadoop settings.

A storage setup is one of :class:`LocalStorage` or :class:`S3Storage`. Each renders the
``spark.hadoop.*`` settings that make Hadoop reach it; nothing else in deltaguard writes S3A
settings, so the demo, the tests, the benchmarks and the presets configure S3 identically.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The prefix of S3A's Hadoop settings (``fs.s3a.endpoint``, ...).
S3A_PREFIX = "fs.s3a."


def s3a_keys(name: str, bucket: str) -> tuple[str, str]:
    """The Hadoop keys that give S3A setting ``name`` (``endpoint``, ``access.key``, ...) for
    ``bucket``, in S3A's order: ``fs.s3a.bucket.<bucket>.<name>`` overrides ``fs.s3a.<name>``."""
    return (f"{S3A_PREFIX}bucket.{bucket}.{name}", f"{S3A_PREFIX}{name}")


@dataclass(frozen=True)
class LocalStorage:
    """Tables on the local filesystem (``file:/...`` paths)."""

    def hadoop_conf(self) -> dict[str, str]:
        return {}


@dataclass(frozen=True)
class S3Storage:
    """Tables on S3 or an S3-compatible endpoint, reached through Hadoop's S3A.

    ``s3://`` paths are served by S3A too, so both schemes reach the same objects.
    Credentials: explicit keys if given, otherwise ``credentials_provider`` (a Hadoop/SDK v2
    provider class name), otherwise S3A's default chain (environment, profile, instance role).
    """

    endpoint: str | None = None
    region: str = "us-east-1"
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None
    path_style: bool = False
    credentials_provider: str | None = None

    def hadoop_conf(self) -> dict[str, str]:
        s3a = "spark.hadoop.fs.s3a."
        conf = {
            "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            s3a + "endpoint.region": self.region,
            s3a + "path.style.access": str(self.path_style).lower(),
            # deltaguard's LogStore talks to S3 with S3A's own client, outside S3A audit spans.
            s3a + "audit.reject.out.of.span.operations": "false",
        }
        if self.endpoint:
            conf[s3a + "endpoint"] = self.endpoint
            conf[s3a + "connection.ssl.enabled"] = str(self.endpoint.startswith("https")).lower()
        if self.access_key and self.secret_key:
            conf[s3a + "access.key"] = self.access_key
            conf[s3a + "secret.key"] = self.secret_key
            if self.session_token:
                conf[s3a + "session.token"] = self.session_token
                conf[s3a + "aws.credentials.provider"] = (
                    "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
                )
            else:
                conf[s3a + "aws.credentials.provider"] = (
                    "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
                )
        elif self.credentials_provider:
            conf[s3a + "aws.credentials.provider"] = self.credentials_provider
        return conf


Storage = LocalStorage | S3Storage
