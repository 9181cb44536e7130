"""The deterministic commit race used by the demo and the tests.

A fault-proxy rule holds the first PUT of a commit file ``_delta_log/<N>.json`` until another
request for the same key has been answered. With Delta's default S3 LogStore
(S3SingleDriverLogStore: check ``exists`` then PUT) the held writer's PUT lands after the other
writer's commit of the same version and overwrites it: a commit is lost, every time. With a
conditional-write LogStore the held PUT carries If-None-Match and gets 412 instead.

The same race for the DynamoDB protocol (:func:`hold_one_dynamodb_claim`): the held request is
a writer's conditional PutItem of the entry of version N (its commit point, made after it read
the latest version), released once another writer's PutItem of the same entry is answered;
the held claim then gets ConditionalCheckFailed (HTTP 400).

:func:`raw_commit_tags` is the race's oracle: the ``userMetadata`` of every commit file as the
raw S3 listing and the JSON lines themselves say, read with boto3 and ``json`` only (no
LogStore, no deltaguard log reader).
"""

from __future__ import annotations

import json
import re
from typing import Any

from deltaguard.localstack.fault_proxy import FaultRule
from deltaguard.logstore.commit_names import COMMIT_FILE_PATTERN, commit_file_name

# Commit files of versions >= 1 (version 0, the table creation, is left alone).
DATA_COMMIT_FILE_REGEX = rf"/_delta_log/(?!{re.escape(commit_file_name(0))}){COMMIT_FILE_PATTERN}$"


def hold_one_commit_put(timeout_s: float = 120.0) -> FaultRule:
    """Hold the first commit PUT of a version >= 1 until a peer's PUT of the same version has
    been answered, or ``timeout_s`` passed."""
    return FaultRule(
        "hold_until_peer",
        method="PUT",
        path_regex=DATA_COMMIT_FILE_REGEX,
        times=1,
        delay_s=timeout_s,
    )


def hold_commit_puts(versions: list[int], timeout_s: float = 120.0) -> list[FaultRule]:
    """One :func:`hold_one_commit_put` rule per version in ``versions`` (each >= 1): the first
    commit PUT of each is held until a peer's PUT of the same version has been answered. With
    two writers on Delta's default store that append in turn, each held version is a lost
    commit: the writer not held cannot see the held ``N.json``, so its next commit PUTs the
    same version (the peer), and the held PUT lands last, over it. Rule ``i`` fires for
    ``versions[i]``: ``FaultProxy.fired()`` is ``[1] * len(versions)`` once all were staged."""
    if not versions or min(versions) < 1:
        raise ValueError(f"hold_commit_puts: versions must be >= 1, got {versions}")
    return [
        FaultRule(
            "hold_until_peer",
            method="PUT",
            path_regex=rf"/_delta_log/{re.escape(commit_file_name(v))}$",
            times=1,
            delay_s=timeout_s,
        )
        for v in versions
    ]


def count_log_reads() -> list[FaultRule]:
    """Rules that never fire and only count (``matched``) the GETs and HEADs of files in
    ``_delta_log/``: the reads of peers' commits, which grow with the number of drivers. Set
    them right after :func:`hold_one_commit_put` (or any one rule): :func:`requests_per_commit`
    reads them from the second rule on."""
    log_file = r"/_delta_log/[^/]+$"
    return [FaultRule("delay", method=m, path_regex=log_file, rate=0.0) for m in ("GET", "HEAD")]


def requests_per_commit(stats: dict[str, Any], commits: int) -> dict[str, float]:
    """From a proxy's ``stats()`` with rules ``[one rule, *count_log_reads()]``: the S3 requests
    per commit besides reading log files (``own``), and the log-file reads per commit."""
    log_reads = sum(r["matched"] for r in stats["rules"][1:])
    own = sum(stats["by_kind"].values()) - log_reads
    return {"own": round(own / commits, 2), "log_reads": round(log_reads / commits, 2)}


#: A conditional PutItem (a claim) of a DynamoDB commit entry of a version >= 1; its groups
#: (``tablePath``, ``fileName``) are the hold key. The SDKs and boto3 write compact or spaced
#: JSON, attributes in any order.
DYNAMODB_CLAIM_BODY_REGEX = (
    r'^(?=.*"ConditionExpression"\s*:\s*"attribute_not_exists\(fileName\)")'
    r'(?=.*"tablePath"\s*:\s*\{\s*"S"\s*:\s*"([^"]+)")'
    rf'(?=.*"fileName"\s*:\s*\{{\s*"S"\s*:\s*"(?!{re.escape(commit_file_name(0))})'
    rf"({COMMIT_FILE_PATTERN})\")"
)


def hold_one_dynamodb_claim(timeout_s: float = 300.0) -> FaultRule:
    """Hold the first DynamoDB claim (conditional PutItem) of a version >= 1 until a peer's
    PutItem of the same entry (same table path and version) has been answered, or
    ``timeout_s`` passed."""
    return FaultRule(
        "hold_until_peer",
        method="POST",
        target="PutItem",
        body_regex=DYNAMODB_CLAIM_BODY_REGEX,
        times=1,
        delay_s=timeout_s,
    )


def raw_commit_tags(s3: Any, bucket: str, table_key: str) -> dict[int, str | None]:
    """Per commit file ``<table_key>/_delta_log/<N>.json`` in ``bucket``: version -> the
    ``commitInfo.userMetadata`` of its JSON lines (None without one), through ``s3`` (a boto3
    client) and ``json`` only. Raises ValueError for a commit file that is not JSON lines."""
    prefix = f"{table_key.strip('/')}/_delta_log/"
    out: dict[int, str | None] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            name = obj["Key"][len(prefix) :]
            if not re.fullmatch(r"\d{20}\.json", name):
                continue
            body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read().decode("utf-8")
            tag = None
            for line in body.splitlines():
                if line.strip():
                    action = json.loads(line)
                    if "commitInfo" in action:
                        tag = action["commitInfo"].get("userMetadata")
            out[int(name[:20])] = tag
    return out
