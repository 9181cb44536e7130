"""Where the Spark engine cuts a large S3 directory into key ranges
(:mod:`deltaguard.tools.orphans.key_ranges`): the cuts are file names in S3's key order,
one directory's ranges hold about ``range_files`` files each, and small directories are not
cut. That the ranges list every key exactly once is the JVM lister's contract
(``S3KeyRangeListingTest``) and the Spark engine's LocalStack test
(``test_spark_engine_lists_a_large_s3_directory_in_key_ranges``); the Python rule of a range
(:func:`~deltaguard.tools.storage.in_key_range`, the local engine's) is tested here
the same way."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaguard.tools.orphans import scan
from deltaguard.tools.orphans.key_ranges import cuts_of
from deltaguard.tools.storage import in_key_range, open_table


def _utf8(name: str) -> bytes:
    return name.encode("utf-8", "surrogatepass")


def test_a_large_directory_is_cut_evenly_and_a_small_one_not() -> None:
    big = [f"part-{i:05d}.parquet" for i in range(10_000)]
    small = [f"p=1/part-{i:05d}.parquet" for i in range(100)]
    cuts = cuts_of(big + small, fraction=1.0, range_files=1_000, max_ranges=100)
    assert list(cuts) == [""]  # the root; p=1 holds fewer than 2 * 1,000 files
    assert cuts[""] == [f"part-{i:05d}.parquet" for i in range(1_000, 10_000, 1_000)]
    # the number of ranges is capped (by the listing's task count)
    assert len(cuts_of(big, 1.0, 1_000, 4)[""]) == 3
    # the estimate scales the sample by the fraction drawn
    assert len(cuts_of(big[::10], 0.1, 1_000, 100)[""]) == 9
    assert cuts_of(big[::10], 0.1, 10_000, 100) == {}


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "p=1", "p=ü/q=2"]),
            st.text(
                st.characters(blacklist_characters="/", blacklist_categories=("Cs",)),
                min_size=1,
                max_size=6,
            ),
        ),
        max_size=300,
    ),
    st.integers(1, 50),
    st.integers(1, 8),
)
def test_cuts_are_names_in_s3_order(
    files: list[tuple[str, str]], range_files: int, max_ranges: int
) -> None:
    sample = [f"{d}/{n}" if d else n for d, n in files]
    cuts = cuts_of(sample, 1.0, range_files, max_ranges)
    for directory, names in cuts.items():
        members = {n for d, n in files if d == directory}
        assert names and all(n in members and "/" not in n for n in names)
        keys = [_utf8(n) for n in names]
        assert keys == sorted(set(keys))  # strictly increasing in UTF-8 byte order
        assert len(names) < max_ranges
        assert len([n for d, n in files if d == directory]) >= 2 * range_files


#: Keys of a directory "t/" whose names sit next to the cuts below (as S3KeyRangeListingTest's).
KEYS = (
    "a.parquet",
    "part-0001.parquet",
    "part-0002.parquet",
    "s",
    "s-x.parquet",
    "s.parquet",
    "s/1.parquet",
    "s/deep/3.parquet",
    "s0.parquet",
    "sub=1/a.parquet",
    "x:y.parquet",
    "ü.parquet",
    "ü/z.parquet",
)
CUT_POOL = ("a.parquet", "part-0002.parquet", "s", "s-", "s-x.parquet", "s.parquet", "s0.parquet",
            "r", "sub=1", "x:y.parquet", "ü.parquet", "ü", "zzz", "0")  # fmt: skip


def test_in_key_range_compares_directories_with_their_slash() -> None:
    # "s-x" sorts between "s" and "s/": the keys of s/ are above it
    assert in_key_range("s", True, "s-x", None) and not in_key_range("s", True, None, "s-x")
    assert in_key_range("s", False, None, "s-x") and not in_key_range("s", False, "s-x", None)
    # UTF-8 bytes, not code points: U+FFFD sorts before U+1F600, as on S3
    assert in_key_range("\U0001f600", False, "\ufffd", None)


@pytest.fixture(scope="module")
def s3_dir(localstack: Any) -> Any:
    client = localstack.endpoint.s3_client()
    bucket = f"ranges-{int(time.time() * 1000)}"
    client.create_bucket(Bucket=bucket)
    for key in KEYS:
        client.put_object(Bucket=bucket, Key=f"tbl/t/{key}", Body=b"x")
    return open_table(f"s3://{bucket}/tbl", client=client)


def _children(store: Any, cuts: list[str]) -> tuple[list[str], list[str]]:
    files: list[str] = []
    dirs: list[str] = []
    edges: list[str | None] = [None, *cuts, None]
    for after, up_to in itertools.pairwise(edges):
        found, subdirs, _ = store.children("t", frozenset(), after, up_to)
        files += [f.path for f in found]
        dirs += subdirs
    return files, dirs


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(CUT_POOL), max_size=4, unique=True))
def test_ranges_of_a_directory_hold_each_entry_once(
    s3_dir: Any, tmp_path_factory: Any, cuts: list[str]
) -> None:
    """The ranges any cuts make list each file and sub-directory exactly once, on S3 (only
    the range requested) and on local disk (read whole, filtered)."""
    cuts = sorted(cuts, key=_utf8)
    assert sorted(_children(s3_dir, cuts)[0]) == sorted(_children(s3_dir, [])[0])
    files, dirs = _children(s3_dir, cuts)
    assert sorted(files) == sorted(f"t/{k}" for k in KEYS if "/" not in k)
    assert sorted(dirs) == ["t/s", "t/sub=1", "t/ü"]
    local = tmp_path_factory.getbasetemp() / "ranges-local"
    on_disk = [k for k in KEYS if k != "s"]  # a file and a directory "s" cannot both exist
    if not local.exists():
        for key in on_disk:
            (local / "t" / key).parent.mkdir(parents=True, exist_ok=True)
            (local / "t" / key).write_bytes(b"x")
    files, dirs = _children(open_table(str(local)), cuts)
    assert sorted(files) == sorted(f"t/{k}" for k in on_disk if "/" not in k)
    assert sorted(dirs) == ["t/s", "t/sub=1", "t/ü"]


def test_local_engine_lists_a_large_s3_directory_in_key_ranges(
    localstack: Any, ls_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local engine on LocalStack with ranges of 50 files: the same files and classes as
    without ranges, and the request log shows one first page per range."""
    from deltaguard.localstack.fault_proxy import FaultProxy, requests_under
    from deltaguard.localstack.synthetic_table import SyntheticTable
    from deltaguard.localstack.table_copies import upload_table
    from deltaguard.tools.storage import S3Options

    root = tmp_path / "flat"
    clock = int(time.time() * 1000) - 100 * 3_600_000
    t = SyntheticTable(root)
    t.create(clock)
    adds = [t.add_action(t.write_file(f"part-{i:05d}.parquet", clock), clock) for i in range(300)]
    t.commit([{"add": a} for a in adds], clock)
    for name in ("part-00000-orphan.parquet", "part-00150-orphan.parquet", "zz-orphan.parquet",
                 "part-00200-d/inside.parquet", "_hidden/x.parquet"):  # fmt: skip
        t.write_file(name, clock)
    client = localstack.endpoint.s3_client()
    upload_table(root, client, ls_bucket, "lake/flat")
    uri = f"s3://{ls_bucket}/lake/flat"
    whole = scan(open_table(uri, client=client), retention_ms=0, range_files=0)
    with FaultProxy(localstack.endpoint, tmp_path, seed=1) as proxy:
        for key, value in proxy.endpoint.credentials_env().items():
            monkeypatch.setenv(key, value)
        store = open_table(uri, S3Options(proxy.endpoint.url, proxy.endpoint.region, True))
        ranged = scan(store, retention_ms=0, now_ms=whole.now_ms, range_files=50)
        log = proxy.requests()
    classified = {(c.path, c.file_class, c.reason) for c in ranged.candidates}
    assert classified == {(c.path, c.file_class, c.reason) for c in whole.candidates}
    assert ranged.listed_files == whole.listed_files == 304
    assert {c.path for c in ranged.candidates} >= {
        "zz-orphan.parquet",
        "part-00200-d/inside.parquet",
    }
    firsts = [
        e["start_after"]
        for e in requests_under(log, ls_bucket, "lake/flat/")
        if e["kind"] == "s3 ListObjects" and e["prefix"] == "lake/flat/" and not e["continued"]
    ]
    assert firsts.count("") == 1 and len(set(firsts)) == len(firsts) >= 5  # 300 files / 50
