"""boto3 S3 clients, one named policy per kind of job.

``commit``
    botocore retries off (one attempt per request). Only the commit protocols use it
    (:class:`~deltaguard.logstore.s3_conditional.S3ConditionalLogStore`, the DynamoDB store's
    S3 side, the probe's create checks): every retry of a conditional create must go through
    the protocol's settle/read-back logic, or its attempt budget is not what it says.
``read``
    botocore's ``standard`` retry mode with a bounded budget (:data:`READ_MAX_ATTEMPTS`
    attempts per request, plus botocore's retry quota): 5xx, ``SlowDown`` and other throttles,
    timeouts and connection errors are retried with jittered exponential backoff. Everything
    read-only uses it: ``audit``, ``history``, ``orphans`` (listing, reading, and its deletes,
    which are idempotent) and the probe's reads. A request that still fails after the budget
    raises; callers report it as "could not read", never as damage to the table.

Both: credentials from boto3's standard chain (environment, profile, instance role) unless
given, the region of :func:`region_or_default`, optional path-style addressing, and listings
that are not URL-encoded (:mod:`deltaguard.logstore.s3_listing`). ``AWS_MAX_ATTEMPTS``, if
set, replaces the read policy's attempts (:func:`read_max_attempts`), as it does for aws-cli.

Retries are reported, not made, here: a read client tells the listener set with
:func:`set_retry_listener` (the CLI's progress display, :mod:`deltaguard.tools.progress`) each
time botocore sends a request again, with the attempt, the budget and what failed before
(:class:`RetryNotice`). It hooks two botocore events: ``needs-retry`` (to remember what the
failed attempt got) and ``request-created`` (an attempt above 1 is a retry botocore decided
on, after its backoff).

Importing this module loads neither boto3 nor botocore's config (together about a second of a
command's start): they are imported where a client is made, so a command on a local table
never pays for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from deltaguard.logstore.s3_listing import list_unencoded

#: Attempts per request (the first plus retries) under the read policy.
READ_MAX_ATTEMPTS = 8
#: The region when neither the caller nor the AWS configuration names one.
DEFAULT_REGION = "us-east-1"


def region_or_default(region: str | None) -> str:
    """The one region rule of every deltaguard command and client: ``region`` if given, else
    the AWS configuration's (``AWS_REGION``, ``AWS_DEFAULT_REGION``, the profile's
    ``region``), else :data:`DEFAULT_REGION`. Raises botocore's ``ProfileNotFound`` for an
    ``AWS_PROFILE`` that names no profile."""
    if region:
        return region
    if os.environ.get("AWS_REGION"):  # the AWS SDKs' and aws-cli's; botocore reads only the next
        return os.environ["AWS_REGION"]
    import botocore.session

    configured = botocore.session.get_session().get_config_variable("region")
    return str(configured) if configured else DEFAULT_REGION


def read_max_attempts() -> int:
    """The read policy's attempts per request: ``AWS_MAX_ATTEMPTS`` if it is a positive
    integer, else :data:`READ_MAX_ATTEMPTS`."""
    value = os.environ.get("AWS_MAX_ATTEMPTS", "")
    return int(value) if value.isdigit() and int(value) > 0 else READ_MAX_ATTEMPTS


class ClientPolicy(StrEnum):
    """Which retry policy a client gets (see the module docstring)."""

    COMMIT = "commit"
    READ = "read"


def _config(policy: ClientPolicy, path_style: bool) -> Any:
    """The botocore ``Config`` of ``policy``: ``standard`` retry mode with one attempt per
    request (commit) or :func:`read_max_attempts` (read), 10 s to connect, 60 s to read."""
    from botocore.config import Config

    attempts = 1 if policy is ClientPolicy.COMMIT else read_max_attempts()
    return Config(
        retries={"mode": "standard", "total_max_attempts": attempts},
        connect_timeout=10,
        read_timeout=60,
        s3={"addressing_style": "path" if path_style else "auto"},
    )


@dataclass(frozen=True)
class RetryNotice:
    """A request botocore sends again: ``attempt`` of ``max_attempts`` (1 is the first),
    after ``after`` (an HTTP status, an S3 error code, or the exception's name)."""

    operation: str
    attempt: int
    max_attempts: int | None
    after: str

    def message(self) -> str:
        budget = f"/{self.max_attempts}" if self.max_attempts else ""
        return f"retrying {self.operation} after {self.after} ({self.attempt}{budget})"


_retry_listener: Callable[[RetryNotice], None] | None = None
_FAILURE = "deltaguard.last_failure"


def set_retry_listener(listener: Callable[[RetryNotice], None] | None) -> None:
    """Who hears about read-client retries from now on (None: nobody). Process-wide; the
    listener is called on the thread that retries and must not raise."""
    global _retry_listener
    _retry_listener = listener


def _remember_failure(
    request_dict: Any, response: Any = None, caught_exception: Any = None, **_: Any
) -> None:
    """``needs-retry``: what this attempt got, for the next attempt's notice."""
    if caught_exception is not None:
        after = type(caught_exception).__name__
    elif response is not None:
        http, parsed = response
        code = parsed.get("Error", {}).get("Code") if isinstance(parsed, dict) else None
        status = getattr(http, "status_code", None)
        after = f"{status} {code}" if code and str(code) != str(status) else str(status)
    else:
        return
    request_dict.get("context", {})[_FAILURE] = after


def _announce_retry(request: Any, operation_name: str = "request", **_: Any) -> None:
    """``request-created``: an attempt above the first is a retry; tell the listener."""
    listener = _retry_listener
    retries = request.context.get("retries") or {}
    attempt = retries.get("attempt", 1)
    if listener is None or attempt < 2:
        return
    after = request.context.get(_FAILURE, "an error")
    listener(RetryNotice(operation_name, attempt, retries.get("max"), after))


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
    retries), region (:func:`region_or_default`) and addressing style."""
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=endpoint_url,
        region_name=region_or_default(region),
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        aws_session_token=session_token,
        config=_config(policy, path_style),
    )
    if policy is ClientPolicy.READ:
        client.meta.events.register("needs-retry.s3", _remember_failure)
        client.meta.events.register("request-created.s3", _announce_retry)
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


def dynamodb_client(endpoint_url: str | None = None, region: str | None = None) -> Any:
    """A DynamoDB client in the region of :func:`region_or_default` (botocore's default
    retries: the DynamoDB LogStore's protocol settles its own conditional puts)."""
    import boto3

    return boto3.client(
        "dynamodb", endpoint_url=endpoint_url, region_name=region_or_default(region)
    )
