"""deltaguard.logstore.s3_listing on LocalStack: unencoded listings, and the fallback to
URL-encoded ones for keys XML 1.0 cannot carry."""

from __future__ import annotations

from typing import Any

from deltaguard.logstore.s3_listing import list_pages

KEYS = [
    "t/a.parquet",
    "t/p=0/bad\x01name.parquet",
    "t/p=0/x.parquet",
    "t/p=1/y.parquet",
    "t/p=caf\u00e9 %41/z.parquet",
    "t/w\x02.parquet",
    "t/zz.parquet",
]


def _encoding_types(client: Any) -> list[str | None]:
    seen: list[str | None] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        seen.append(params["query_string"].get("encoding-type"))

    client.meta.events.register("before-call.s3.ListObjectsV2", record)
    return seen


def _listed(client: Any, bucket: str, delimiter: str | None) -> tuple[list[str], list[str]]:
    keys: list[str] = []
    prefixes: list[str] = []
    for page in list_pages(client, bucket, "t/", delimiter=delimiter):
        keys += [o["Key"] for o in page.get("Contents", ())]
        prefixes += [p["Prefix"] for p in page.get("CommonPrefixes", ())]
    return keys, prefixes


def test_unencoded_listing_falls_back_for_keys_xml_cannot_carry(localstack, ls_bucket) -> None:
    client = localstack.endpoint.s3_client()
    for key in KEYS:
        client.put_object(Bucket=ls_bucket, Key=key, Body=b"x")
    seen = _encoding_types(client)
    keys, prefixes = _listed(client, ls_bucket, None)
    assert keys == KEYS
    assert seen[0] is None and seen[-1] == "url"  # plain first, then the fallback
    seen.clear()
    keys, prefixes = _listed(client, ls_bucket, "/")
    assert keys == ["t/a.parquet", "t/w\x02.parquet", "t/zz.parquet"]
    assert prefixes == ["t/p=0/", "t/p=1/", "t/p=caf\u00e9 %41/"]
    seen.clear()
    for page in list_pages(client, ls_bucket, "t/p=1/"):
        assert [o["Key"] for o in page["Contents"]] == ["t/p=1/y.parquet"]
    assert seen == [None]  # a clean directory is listed unencoded, once


def test_a_client_that_encodes_lists_the_same(localstack, ls_bucket) -> None:
    import boto3

    client = boto3.client("s3", **localstack.endpoint.boto3_kwargs())
    for key in KEYS:
        client.put_object(Bucket=ls_bucket, Key=key, Body=b"x")
    seen = _encoding_types(client)
    assert _listed(client, ls_bucket, None) == (KEYS, [])
    assert set(seen) == {"url"}
