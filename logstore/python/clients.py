"""boto3 clients configured the way deltaguard's protocols expect."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

from deltaguard.logstore.s3_conditional import NO_SDK_RETRIES
from deltaguard.logstore.s3_listing import list_unencoded


def s3_client(
    endpoint_url: str | None = None,
    region: str | None = None,
    access_key: str | None = None,
    secret_key: str | None = None,
    session_token: str | None = None,
    path_style: bool = False,
) -> Any:
    """An S3 client with botocore retries off (the commit protocol retries, conditionally,
    after a read-back) and optional path-style addressing. Credentials default to boto3's
    standard chain (environment, profile, instance role). Listings are not URL-encoded
    (:mod:`deltaguard.logstore.s3_listing`)."""
    config = NO_SDK_RETRIES.merge(Config(s3={"addressing_style": "path" if path_style else "auto"}))
    client = boto3.client(
        "s3",
        endpoint_url=endpoint_url,
        region_name=region,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        aws_session_token=session_token,
        config=config,
    )
    return list_unencoded(client)
