"""boto3 S3 clients, one named policy per kind of job.

``commit`` (:data:`COMMIT_CONFIG`)
    botocore retries off. Only the commit protocols use it
    (:class:`~deltaguard.logstore.s3_conditional.S3ConditionalLogStore`, the DynamoDB store's
    S3 side, the probe's create checks): every retry of a conditional create must go through
    the protocol's settle/read-back logic, or its attempt budget is not what it says.
``read`` (:data:`READ_CONFIG`)
    botocore's ``standard`` retry mode with a bounded budget (:data:`READ_MAX_ATTEMPTS`
    attempts per request, plus botocore's retry quota): 5xx, ``SlowDown`` and other throttles,
    timeouts and connection errors are retried with jittered exponential backoff. Everything
    read-only uses it: ``audit``, ``history``, ``orphans`` (listing, reading, and its deletes,
    which are idempotent) and the probe's reads. A request that still fails after the budget
    raises; callers report it as "could not read", never as damage to the table.

Both: credentials from boto3's standard chain (environment, profile, instance role) unless
given, optional path-style addressing, and listings that are not URL-encoded
(:mod:`deltaguard.logstore.s3_listing`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import boto3
from botocore.config import Config

from deltaguard.logstore.s3_conditional import NO_SDK_RETRIES
from deltaguard.logstore.s3_listing import list_unencoded

#: Attempts per request (the first plus retries) under the read policy.
READ_MAX_ATTEMPTS = 8


class ClientPolicy(StrEnum):
    """Which retry policy a client gets (see the module docstring)."""

    COMMIT = "commit"
    READ = "read"


COMMIT_CONFIG = NO_SDK_RETRIES
READ_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": READ_MAX_ATTEMPTS},
    connect_timeout=10,
    read_timeout=60,
)
_CONFIGS = {ClientPolicy.COMMIT: COMMIT_CONFIG, ClientPolicy.READ: READ_CONFIG}


def s3_client(
    endpoint_url: str | None = None,
    region: str | None = None,
    access_key: str | None = None,
    secret_key: str | None = None,
    session_token: str | None = None,
    path_style: bool = False,
    policy: ClientPolicy = ClientPolicy.COMMIT,
) -> Any:
    """An S3 client with the given policy's retries (commit: none; read: bounded standard
    retries) and addressing style."""
    config = _CONFIGS[policy].merge(
        Config(s3={"addressing_style": "path" if path_style else "auto"})
    )
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


def read_client(
    endpoint_url: str | None = None, region: str | None = None, path_style: bool = False
) -> Any:
    """:func:`s3_client` with the read policy: for every read-only job."""
    return s3_client(endpoint_url, region, path_style=path_style, policy=ClientPolicy.READ)


def commit_client(
    endpoint_url: str | None = None, region: str | None = None, path_style: bool = False
) -> Any:
    """:func:`s3_client` with the commit policy: for the commit protocols only."""
    return s3_client(endpoint_url, region, path_style=path_style, policy=ClientPolicy.COMMIT)
