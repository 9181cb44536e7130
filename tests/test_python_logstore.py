"""The Python conditional-write protocol: behaviour on moto and through the fault proxy,
mutual exclusion on LocalStack."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

from deltaguard.localstack.delta_append import (
    BlindAppender,
    UnsupportedTableError,
    append,
    create_table,
    read_state,
)
from deltaguard.localstack.fault_proxy import FaultRule
from deltaguard.localstack.race import raw_commit_tags
from deltaguard.logstore.errors import (
    CommitOutcomeUnknownError,
    ConditionalWritesNotHonouredError,
    LogFileExistsError,
)
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.logstore.s3_location import S3Location

COMMIT_RE = r"/_delta_log/\d{20}\.json$"


def _commit_uri(bucket: str, version: int, table: str = "t") -> str:
    return f"s3://{bucket}/{table}/_delta_log/{version:020d}.json"


def _body(s3, uri: str) -> bytes:
    loc = S3Location.parse(uri)
    return bytes(s3.get_object(Bucket=loc.bucket, Key=loc.key)["Body"].read())


def _fast(s3, **kw) -> S3ConditionalLogStore:
    return S3ConditionalLogStore(s3, base_delay_s=0.01, max_delay_s=0.05, **kw)


def test_create_then_conflict_on_moto(moto, moto_bucket):
    s3 = moto.endpoint.s3_client()
    store = _fast(s3)
    uri = _commit_uri(moto_bucket, 1)
    store.write(uri, ['{"commitInfo":{"txnId":"a"}}'])
    with pytest.raises(LogFileExistsError, match="another writer"):
        store.write(uri, ['{"commitInfo":{"txnId":"b"}}'])
    assert _body(s3, uri) == b'{"commitInfo":{"txnId":"a"}}\n'
    assert list(store.read(uri)) == ['{"commitInfo":{"txnId":"a"}}']


def test_overwrite_is_plain_put(moto, moto_bucket):
    s3 = moto.endpoint.s3_client()
    store = _fast(s3)
    uri = f"s3://{moto_bucket}/t/_delta_log/_last_checkpoint"
    store.write(uri, ['{"version":1}'], overwrite=True)
    store.write(uri, ['{"version":2}'], overwrite=True)
    assert _body(s3, uri) == b'{"version":2}\n'


def test_list_from_is_ordered_inclusive_and_uses_start_after(moto, moto_bucket):
    s3 = moto.endpoint.s3_client()
    store = _fast(s3)
    for v in (0, 1, 2, 3, 11):
        store.write(_commit_uri(moto_bucket, v), ["{}"])
    store.write(
        f"s3://{moto_bucket}/t/_delta_log/00000000000000000002.checkpoint.parquet",
        ["x"],
        overwrite=True,
    )
    store.write(
        f"s3://{moto_bucket}/t/_delta_log/_commits/00000000000000000009.json", ["x"], overwrite=True
    )
    names = [e.name for e in store.list_from(_commit_uri(moto_bucket, 2))]
    # "...2.checkpoint.parquet" sorts before "...2.json"; "_commits/" is a subdirectory.
    assert names == [
        "00000000000000000002.json",
        "00000000000000000003.json",
        "00000000000000000011.json",
    ]
    names = [
        e.name for e in store.list_from(f"s3://{moto_bucket}/t/_delta_log/00000000000000000002")
    ]
    assert names[0] == "00000000000000000002.checkpoint.parquet"
    with pytest.raises(FileNotFoundError):
        list(store.list_from(f"s3://{moto_bucket}/missing/_delta_log/{0:020d}.json"))


# proves: docs/guides/commit-path.md and docs/guides/streaming.md "a lost response is settled by
# reading it back, never a duplicate"
def test_lost_response_is_success_not_duplicate(ls_proxy, localstack, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    store = _fast(s3)
    store.write(f"s3://{ls_bucket}/t/_delta_log/.warmup", ["x"], overwrite=True)
    _fast(s3).write(_commit_uri(ls_bucket, 0), ["{}"])  # verification done before faults start
    ls_proxy.set_rules([FaultRule("drop_response", method="PUT", path_regex=COMMIT_RE, times=1)])
    uri = _commit_uri(ls_bucket, 1)
    store.write(uri, ['{"commitInfo":{"txnId":"mine"}}'])
    assert ls_proxy.fired() == [1]
    assert _body(localstack.endpoint.s3_client(), uri) == b'{"commitInfo":{"txnId":"mine"}}\n'


@pytest.mark.parametrize(
    ("status", "code"),
    [(409, "ConditionalRequestConflict"), (503, "SlowDown"), (500, "InternalError")],
)
def test_transient_errors_are_retried_conditionally(ls_proxy, ls_bucket, status, code):
    s3 = ls_proxy.endpoint.s3_client()
    store = _fast(s3)
    store.write(_commit_uri(ls_bucket, 0), ["{}"])
    ls_proxy.set_rules(
        [FaultRule("error", method="PUT", path_regex=COMMIT_RE, status=status, code=code, times=3)]
    )
    store.write(_commit_uri(ls_bucket, 1), ['{"a":1}'])
    assert ls_proxy.fired() == [3]
    assert list(store.read(_commit_uri(ls_bucket, 1))) == ['{"a":1}']


def test_connection_reset_is_retried(ls_proxy, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    store = _fast(s3)
    store.write(_commit_uri(ls_bucket, 0), ["{}"])
    ls_proxy.set_rules([FaultRule("reset", method="PUT", path_regex=COMMIT_RE, times=2)])
    store.write(_commit_uri(ls_bucket, 1), ['{"a":1}'])
    assert ls_proxy.fired() == [2]


def test_budget_exhausted_names_key_and_error(ls_proxy, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    store = S3ConditionalLogStore(s3, max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)
    store.write(_commit_uri(ls_bucket, 0), ["{}"])
    ls_proxy.set_rules(
        [FaultRule("error", method="PUT", path_regex=COMMIT_RE, status=503, code="SlowDown")]
    )
    with pytest.raises(CommitOutcomeUnknownError) as err:
        store.write(_commit_uri(ls_bucket, 1), ["{}"])
    assert _commit_uri(ls_bucket, 1) in str(err.value) and "SlowDown" in str(err.value)
    assert ls_proxy.fired() == [3]


def test_access_denied_fails_fast(ls_proxy, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    store = _fast(s3)
    store.write(_commit_uri(ls_bucket, 0), ["{}"])
    ls_proxy.set_rules(
        [FaultRule("error", method="PUT", path_regex=COMMIT_RE, status=403, code="AccessDenied")]
    )
    with pytest.raises(OSError, match="AccessDenied"):
        store.write(_commit_uri(ls_bucket, 1), ["{}"])
    assert ls_proxy.fired() == [1]


def test_probe_survives_lost_response_and_throttling(ls_proxy, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    ls_proxy.set_rules(
        [
            FaultRule("drop_response", method="PUT", path_regex=r"deltaguard-probe", times=1),
            FaultRule(
                "error",
                method="PUT",
                path_regex=r"deltaguard-probe",
                status=503,
                code="SlowDown",
                times=1,
            ),
        ]
    )
    _fast(s3).write(_commit_uri(ls_bucket, 0), ["{}"])
    assert ls_proxy.fired() == [1, 1]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=ls_bucket).get("Contents", [])]
    assert keys == ["t/_delta_log/00000000000000000000.json"], "probe object deleted"


# proves: docs/guides/commit-path.md "a store that ignores If-None-Match is refused before any
# commit"
def test_store_ignoring_if_none_match_is_refused(ls_proxy, localstack, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    ls_proxy.set_rules([FaultRule("strip_header", method="PUT", header="If-None-Match")])
    with pytest.raises(ConditionalWritesNotHonouredError) as err:
        _fast(s3).write(_commit_uri(ls_bucket, 0), ["{}"])
    assert ls_proxy.endpoint.url in str(err.value)
    assert "verifyConditionalWrites" in str(err.value)
    listed = localstack.endpoint.s3_client().list_objects_v2(Bucket=ls_bucket).get("Contents", [])
    assert listed == [], "no commit written and the probe object deleted"


TABLE_SCHEMA = pa.schema(
    [("writer", pa.int32()), ("batch", pa.int32()), ("seq", pa.int64()), ("payload", pa.string())]
)


def _spark_like_table(store: S3ConditionalLogStore, bucket: str, table: str = "t") -> str:
    uri = f"s3://{bucket}/{table}"
    create_table(store, uri, TABLE_SCHEMA)
    return uri


def _rows(writer: int, batch: int, n: int = 5) -> pa.Table:
    return pa.table(
        {
            "writer": [writer] * n,
            "batch": [batch] * n,
            "seq": list(range(n)),
            "payload": [f"w{writer}b{batch}"] * n,
        }
    ).cast(TABLE_SCHEMA)


def _object_writer(s3):
    """The appender's data-file writer: a plain PutObject."""

    def put(target: str, data: bytes) -> None:
        loc = S3Location.parse(target)
        s3.put_object(Bucket=loc.bucket, Key=loc.key, Body=data)

    return put


# proves: README "S3ConditionalLogStore never loses or duplicates a commit"
@pytest.mark.parametrize(
    "appends",
    [pytest.param(8, marks=pytest.mark.slow), pytest.param(15, marks=pytest.mark.long)],
)
def test_python_writers_never_lose_commits_on_localstack(localstack, ls_bucket, appends):
    """8 threads x ``appends`` blind appends: contiguous versions, each append exactly once."""
    s3 = localstack.endpoint.s3_client()
    store = S3ConditionalLogStore(s3)
    uri = _spark_like_table(store, ls_bucket)
    put = _object_writer(s3)

    barrier = threading.Barrier(8)

    def writer(w: int) -> list[int]:
        appender = BlindAppender(store, put, uri)
        barrier.wait()
        return [appender.append(_rows(w, b), user_metadata=f"w{w}/b{b}") for b in range(appends)]

    with ThreadPoolExecutor(8) as pool:
        versions = [v for f in [pool.submit(writer, w) for w in range(8)] for v in f.result()]
    last = 8 * appends
    assert sorted(versions) == list(range(1, last + 1)), "every append got its own version"
    # the oracle: the raw log (boto3 list + GET, JSON parsed there), not the store's read
    raw = raw_commit_tags(s3, ls_bucket, "t")
    assert sorted(raw) == list(range(last + 1)), "one commit file per version, none missing"
    tags = [t for v, t in raw.items() if v > 0]
    assert sorted(tags) == sorted(f"w{w}/b{b}" for w in range(8) for b in range(appends))


class _CountingReads(S3ConditionalLogStore):
    def __init__(self, s3) -> None:
        super().__init__(s3, verify_conditional_writes=False)
        self.reads: list[str] = []

    def read(self, uri: str):
        self.reads.append(uri.rsplit("/", 1)[-1])
        return super().read(uri)


def test_appender_reads_only_commits_it_has_not_seen(moto, moto_bucket):
    s3 = moto.endpoint.s3_client()
    store = _CountingReads(s3)
    uri = _spark_like_table(store, moto_bucket)
    put = _object_writer(s3)

    mine = BlindAppender(store, put, uri)
    for b in range(12):
        mine.append(_rows(0, b))
    commits = [r for r in store.reads if r.endswith(".json")]
    assert commits == [f"{0:020d}.json"], "after the first state read, own commits cost no reads"
    checksums = [r for r in store.reads if r.endswith(".crc")]
    assert len(checksums) <= 12, "at most one read of (N-1).crc per append, for N.crc"
    other = BlindAppender(store, put, uri)
    store.reads.clear()
    for b in range(3):
        other.append(_rows(1, b))
    store.reads.clear()
    assert mine.append(_rows(0, 99)) == 16
    commits = [r for r in store.reads if r.endswith(".json")]
    assert commits == [f"{v:020d}.json" for v in (13, 14, 15)], "only the 3 newer commits"


def test_appender_refuses_unsupported_tables(moto, moto_bucket):
    s3 = moto.endpoint.s3_client()
    store = _fast(s3)
    uri = f"s3://{moto_bucket}/rt"
    store.write(
        f"{uri}/_delta_log/{0:020d}.json",
        [
            json.dumps(
                {
                    "protocol": {
                        "minReaderVersion": 3,
                        "minWriterVersion": 7,
                        "readerFeatures": [],
                        "writerFeatures": ["rowTracking"],
                    }
                }
            ),
            json.dumps(
                {
                    "metaData": {
                        "id": "x",
                        "format": {"provider": "parquet"},
                        "partitionColumns": [],
                        "schemaString": '{"type":"struct","fields":[]}',
                        "configuration": {},
                    }
                }
            ),
        ],
    )
    assert read_state(store, uri).version == 0
    with pytest.raises(UnsupportedTableError, match="rowTracking"):
        append(store, lambda u, d: None, uri, pa.table({"a": [1]}))
