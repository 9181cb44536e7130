"""The local engine's columnar path sets answer exactly as Python sets of the same strings."""

from __future__ import annotations

import random

import pyarrow as pa

from deltaguard.tools.orphans.pathset import PathSet, PathUnion


def _paths(rng: random.Random, n: int) -> list[str]:
    return [f"p={rng.randrange(50)}/part-{rng.randrange(4 * n):07d}-é %#.parquet" for _ in range(n)]


def test_pathset_matches_a_python_set() -> None:
    rng = random.Random(7)
    members = _paths(rng, 4_000)  # with repeats
    chunks: list[list[str | None]] = [
        [*members[i : i + 900], None] for i in range(0, len(members), 900)
    ]
    pathset = PathSet(pa.chunked_array([pa.array(c, pa.string()) for c in chunks]))
    expected = set(members)
    assert len(pathset) == len(expected) and set(pathset) == expected
    asked = [*_paths(rng, 4_000), *members[:100], ""]
    assert pathset.contains_all(asked) == [p in expected for p in asked]
    assert [p in pathset for p in asked[:500]] == [p in expected for p in asked[:500]]
    for path, at in zip(asked, pathset.indexes(asked), strict=True):
        assert (at >= 0) == (path in expected)
        if at >= 0:
            assert pathset.paths[at].as_py() == path
    assert PathSet().contains_all(asked[:3]) == [False] * 3


def test_pathunion_adds_only_new_paths_and_shares_its_layers() -> None:
    rng = random.Random(8)
    first, second = _paths(rng, 2_000), _paths(rng, 2_000)
    base = PathUnion([PathSet(pa.array(first, pa.string()))])
    grown = base.extended([pa.array(second + first[:10], pa.string())])
    assert grown.layers[0] is base.layers[0]
    assert set(grown.layers[1]) == set(second) - set(first)
    assert set(grown) == set(first) | set(second) and len(grown) == len(set(first) | set(second))
    asked = _paths(rng, 1_000) + second[:50] + first[:50]
    union = set(first) | set(second)
    assert grown.contains_all(asked) == [p in union for p in asked]
