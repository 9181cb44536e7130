"""``deltaguard conf check A.properties B.properties ...``: the findings no single file shows.

One rule, ``mixed-commit-protocols``: a bucket that some files give to a plain DynamoDB LogStore
(Delta's ``io.delta.storage.S3DynamoDBLogStore`` or deltaguard's) and others to a conditional
store (``S3ConditionalLogStore``). A plain DynamoDB writer copies its commit to N.json by
checking that it is absent and then writing it without a condition, so it can overwrite a
conditional writer's N.json: those two must never write one table at once (the safety argument
is in the javadoc of ``io.deltaguard.logstore.S3TransitionLogStore``; the way from one to the
other is docs/guides/migration.md). The transition store is safe next to either, so it never conflicts.

A file's buckets are those of ``spark.deltaguard.multiWriterBuckets`` (every preset rendered with
``--table-root`` records them); a file without it is taken to cover every bucket.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from deltaguard.spark_conf.conf_check import Entry, Finding
from deltaguard.spark_conf.presets import MULTI_WRITER_BUCKETS_KEY

ANY_BUCKET = "*"


class CommitProtocol(StrEnum):
    PLAIN_DYNAMODB = "plain DynamoDB"
    TRANSITION = "transition"
    CONDITIONAL = "conditional"


#: LogStore class -> the protocol its commits follow (other classes are not compared here).
STORE_PROTOCOLS: dict[str, CommitProtocol] = {
    "io.delta.storage.S3DynamoDBLogStore": CommitProtocol.PLAIN_DYNAMODB,
    "io.deltaguard.logstore.S3DynamoDBLogStore": CommitProtocol.PLAIN_DYNAMODB,
    "io.deltaguard.logstore.S3TransitionLogStore": CommitProtocol.TRANSITION,
    "io.deltaguard.logstore.S3ConditionalLogStore": CommitProtocol.CONDITIONAL,
}


@dataclass(frozen=True)
class BucketUse:
    """One file's commit protocol for one bucket, and the line that sets it."""

    path: str
    bucket: str
    protocol: CommitProtocol
    entry: Entry


def _value(entries: dict[str, Entry], plain: str) -> Entry | None:
    return entries.get(f"spark.{plain}") or entries.get(plain)


def bucket_uses(path: str, entries: dict[str, Entry]) -> list[BucketUse]:
    """What ``path`` commits to each of its buckets with (s3a:// first, then s3://, then
    ``spark.delta.logStore.class``)."""
    store = (
        _value(entries, "delta.logStore.s3a.impl")
        or _value(entries, "delta.logStore.s3.impl")
        or _value(entries, "delta.logStore.class")
    )
    if store is None or store.value not in STORE_PROTOCOLS:
        return []
    marked = _value(entries, MULTI_WRITER_BUCKETS_KEY[len("spark.") :])
    buckets = [b.strip() for b in marked.value.split(",") if b.strip()] if marked else []
    protocol = STORE_PROTOCOLS[store.value]
    return [BucketUse(path, b, protocol, store) for b in buckets or [ANY_BUCKET]]


def check_across(files: dict[str, dict[str, Entry]]) -> list[tuple[str, Finding]]:
    """``(path, finding)`` for each file whose conditional store shares a bucket with another
    file's plain DynamoDB store (and the reverse), naming both files and lines."""
    uses = [use for path, entries in files.items() for use in bucket_uses(path, entries)]
    out: list[tuple[str, Finding]] = []
    seen: set[tuple[str, int, str]] = set()
    for use in uses:
        for other in uses:
            if other.path == use.path or {use.protocol, other.protocol} != {
                CommitProtocol.PLAIN_DYNAMODB,
                CommitProtocol.CONDITIONAL,
            }:
                continue
            if ANY_BUCKET not in (use.bucket, other.bucket) and use.bucket != other.bucket:
                continue
            bucket = use.bucket if use.bucket != ANY_BUCKET else other.bucket
            if (use.path, use.entry.line, other.path) in seen:
                continue
            seen.add((use.path, use.entry.line, other.path))
            where = "every bucket" if bucket == ANY_BUCKET else f"bucket {bucket}"
            message = (
                f"{where}: {use.protocol} store here, {other.protocol} store "
                f"({other.entry.value}) in {other.path}:{other.entry.line}; a plain DynamoDB "
                "writer can overwrite a conditional writer's commit. Move the DynamoDB jobs to "
                "s3-dynamodb-transition first (docs/guides/migration.md)"
            )
            out.append(
                (
                    use.path,
                    Finding("mixed-commit-protocols", use.entry.line, use.entry.key, message),
                )
            )
    return out
