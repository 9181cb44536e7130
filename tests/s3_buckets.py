"""A fresh bucket on one of the test bed's S3 servers: the fixtures of conftest.py and the
tests that pick their server at run time make theirs here."""

from __future__ import annotations

import uuid

import pytest

from deltaguard.localstack.endpoints import Endpoint


def new_bucket(endpoint: Endpoint) -> str:
    """Creates a bucket with a fresh name on ``endpoint`` and returns the name."""
    name = f"dg-{uuid.uuid4().hex[:12]}"
    endpoint.s3_client().create_bucket(Bucket=name)
    return name


def new_bucket_with_credentials(endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch) -> str:
    """:func:`new_bucket`, with the server's credentials in the environment for the test
    (boto3's and delta-rs' default chains read them)."""
    for name, value in endpoint.credentials_env().items():
        monkeypatch.setenv(name, value)
    return new_bucket(endpoint)
