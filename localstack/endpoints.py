"""What a running test-bed server offers to clients: an endpoint and credentials."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltaguard.spark_conf.storage import S3Storage


@dataclass(frozen=True)
class Endpoint:
    """An S3 (and maybe DynamoDB) endpoint on loopback with its static test credentials."""

    url: str
    region: str = "us-east-1"
    access_key: str = "test"
    #: Eight characters at least: MinIO refuses shorter root passwords. The test-bed processes
    #: (drivers, writers, verifiers) build ``Endpoint(url=...)`` and so use these defaults;
    #: every server the test bed starts accepts them (LocalStack, moto and DynamoDB Local do
    #: not check secrets; versitygw and MinIO are started with them).
    secret_key: str = "test-secret"

    def s3_storage(self) -> S3Storage:
        """The Spark/Hadoop storage setup that reaches this endpoint (path-style, plain HTTP)."""
        return S3Storage(
            endpoint=self.url,
            region=self.region,
            access_key=self.access_key,
            secret_key=self.secret_key,
            path_style=True,
        )

    def s3_client(self) -> Any:
        """A boto3 S3 client for deltaguard's protocols (path-style, botocore retries off)."""
        from deltaguard.logstore.clients import s3_client

        return s3_client(self.url, self.region, self.access_key, self.secret_key, path_style=True)

    def dynamodb_client(self) -> Any:
        """A boto3 DynamoDB client for this endpoint."""
        import boto3

        return boto3.client("dynamodb", **self.boto3_kwargs())

    def delta_rs_options(self) -> dict[str, str]:
        """``storage_options`` for delta-rs (``deltalake.DeltaTable``) on this endpoint."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_REGION": self.region,
            **self.credentials_env(),
            "AWS_ALLOW_HTTP": "true",
        }

    def credentials_env(self) -> dict[str, str]:
        """This endpoint's keys as environment variables for a child process (the default
        credential chains of S3A and boto3 read them)."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}

    def boto3_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``boto3.client(...)``."""
        return {
            "endpoint_url": self.url,
            "region_name": self.region,
            "aws_access_key_id": self.access_key,
            "aws_secret_access_key": self.secret_key,
        }
