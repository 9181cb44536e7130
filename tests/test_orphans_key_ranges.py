"""Where the Spark engine cuts a large S3 directory into key ranges
(:mod:`deltaguard.tools.orphans.spark.key_ranges`): the cuts are file names in S3's key order,
one directory's ranges hold about ``range_files`` files each, and small directories are not
cut. That the ranges list every key exactly once is the JVM lister's contract
(``S3KeyRangeListingTest``) and the Spark engine's LocalStack test
(``test_spark_engine_lists_a_large_s3_directory_in_key_ranges``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from deltaguard.tools.orphans.spark.key_ranges import cuts_of


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
