"""A columnar set of paths: the local engine's reference sets without a Python string per path.

:class:`PathSet` holds its paths once, in an Arrow string array (unique), plus two Arrow
arrays of 8 bytes per path: each path's ``hash()`` sorted, and where that path sits in the
string array. Membership is a binary search on the hashes (:mod:`bisect`), then an exact
comparison of the strings (a hash match alone never decides: the answer is exact). A million 80-character
paths take about 100 MB, where a Python ``set`` of them takes about 180 MB (and a second set
with the same strings another 40 MB).

:meth:`PathSet.contains_all` answers for a whole batch at once (a hash and a binary search per path,
then one Arrow comparison of the hits): the listing asks it once per directory
(:meth:`~deltaguard.tools.storage.TableStore.children`), the reference collection
once per chunk of a commit. ``in`` answers for one path.

Hashes are Python's own ``hash(str)``: fast and cached on the string, salted per process,
which does not matter since a set never leaves the process that built it.
"""

from __future__ import annotations

import itertools
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Container, Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

#: Paths converted to Python strings at a time (to hash them), bounding the transient memory.
CHUNK = 65_536


def _strings(values: pa.Array | pa.ChunkedArray) -> Iterator[list[str]]:
    for start in range(0, len(values), CHUNK):
        yield values.slice(start, CHUNK).to_pylist()


def _int64s(values: array[int]) -> pa.Array:
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def _strings_of(values: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    """``values`` as chunked strings without nulls (chunks are not copied when they need
    nothing)."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    out = []
    for chunk in chunks:
        if chunk.type != pa.string():
            chunk = chunk.cast(pa.string())
        out.append(chunk.filter(pc.is_valid(chunk)) if chunk.null_count else chunk)
    return pa.chunked_array(out, pa.string())


def chunked(parts: Iterable[pa.Array | pa.ChunkedArray]) -> pa.ChunkedArray:
    """Arrays and chunked arrays of strings as one chunked array (nothing copied)."""
    chunks = [c for p in parts for c in (p.chunks if isinstance(p, pa.ChunkedArray) else [p])]
    return pa.chunked_array(chunks, pa.string())


class PathSet(Container[str]):
    """An immutable set of paths (see the module docstring). ``paths`` is the Arrow array of
    its members, each once, in no particular order; :meth:`index` gives a member's position
    in it (so a caller can keep values aligned with ``paths``, e.g. a tombstone's time).
    Built without copying ``paths`` when they hold no duplicate (duplicates are found by
    sorting on (hash, path), which compares strings only where hashes tie)."""

    def __init__(self, paths: pa.Array | pa.ChunkedArray | None = None) -> None:
        members = _strings_of(paths if paths is not None else pa.array([], pa.string()))
        hashes: array[int] = array("q")
        for chunk in _strings(members):
            hashes.extend(map(hash, chunk))
        unsorted = _int64s(hashes)
        del hashes
        order = pc.sort_indices(
            pa.table({"h": unsorted, "p": members}),
            sort_keys=[("h", "ascending"), ("p", "ascending")],
        ).cast(pa.int64())
        sorted_hashes = pc.take(unsorted, order)
        del unsorted
        if len(order) > 1:
            same_hash = pc.equal(sorted_hashes.slice(1), sorted_hashes.slice(0, len(order) - 1))
            if pc.any(same_hash).as_py():
                ties = pc.indices_nonzero(same_hash)
                later = pc.take(order.slice(1), ties)
                same = pc.equal(pc.take(members, later), pc.take(members, pc.take(order, ties)))
                repeats = pc.filter(pc.add(ties, 1), same)
                if len(repeats):  # keep each path once: members in hash order, order = 0..n
                    keep = pc.invert(
                        pc.is_in(pa.array(range(len(order)), pa.int64()), value_set=repeats)
                    )
                    members = pa.chunked_array([pc.take(members, order.filter(keep))])
                    sorted_hashes = sorted_hashes.filter(keep)
                    order = pa.array(range(len(members)), pa.int64())
        self.paths: pa.ChunkedArray = members
        self._chunks: list[pa.Array] = list(members.chunks) or [pa.array([], pa.string())]
        self._starts: list[int] = list(
            itertools.accumulate((len(c) for c in self._chunks[:-1]), initial=0)
        )
        self._order: pa.Array = order
        self._hash_buffer = sorted_hashes.buffers()[1]
        self._hashes: Sequence[int] = memoryview(self._hash_buffer).cast("q")[
            sorted_hashes.offset : sorted_hashes.offset + len(sorted_hashes)
        ]
        self._order_view: Sequence[int] = memoryview(self._order.buffers()[1]).cast("q")[
            self._order.offset : self._order.offset + len(self._order)
        ]

    def __len__(self) -> int:
        return len(self.paths)

    def __iter__(self) -> Iterator[str]:
        for chunk in _strings(self.paths):
            yield from chunk

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self.index(path) is not None

    def index(self, path: str) -> int | None:
        """The position of ``path`` in :attr:`paths`, or None if it is not a member."""
        h = hash(path)
        hashes = self._hashes
        i = bisect_left(hashes, h)
        while i < len(hashes) and hashes[i] == h:
            at = self._order_view[i]
            if self.paths[at].as_py() == path:
                return at
            i += 1
        return None

    def indexes(self, paths: Sequence[str]) -> list[int]:
        """:meth:`index` for each of ``paths``, -1 for a path that is not a member."""
        out = [-1] * len(paths)
        hashes = self._hashes
        n = len(hashes)
        wanted = list(map(hash, paths))
        slots = [bisect_left(hashes, h) for h in wanted]
        asked = [k for k, i in enumerate(slots) if i < n and hashes[i] == wanted[k]]
        slots = [slots[k] for k in asked]
        if not asked:
            return out
        at = pc.take(self._order, pa.array(slots, pa.int64())).to_pylist()
        same = self._equal(at, [paths[k] for k in asked])
        for k, position, equal in zip(asked, at, same, strict=True):
            if equal:
                out[k] = position
            else:  # another path with the same hash sits first: search its run
                found = self.index(paths[k])
                out[k] = -1 if found is None else found
        return out

    def _equal(self, positions: list[int], values: list[str]) -> list[bool]:
        """Whether the member at each of ``positions`` is the matching one of ``values``:
        one Arrow comparison per chunk of :attr:`paths` (a take across chunks would copy them
        all into one array first)."""
        if len(self._starts) == 1:
            taken = pc.take(self._chunks[0], pa.array(positions, pa.int64()))
            return pc.equal(taken, pa.array(values, pa.string())).to_pylist()  # type: ignore[no-any-return]
        out = [False] * len(positions)
        groups: dict[int, list[int]] = {}
        for k, position in enumerate(positions):
            groups.setdefault(bisect_right(self._starts, position) - 1, []).append(k)
        for c, ks in groups.items():
            start = self._starts[c]
            taken = pc.take(
                self._chunks[c], pa.array([positions[k] - start for k in ks], pa.int64())
            )
            same = pc.equal(taken, pa.array([values[k] for k in ks], pa.string())).to_pylist()
            for k, equal in zip(ks, same, strict=True):
                out[k] = equal
        return out

    def contains_all(self, paths: Sequence[str]) -> list[bool]:
        """Membership of each of ``paths``."""
        return [at >= 0 for at in self.indexes(paths)]


class PathUnion(Container[str]):
    """The union of disjoint :class:`PathSet` layers, none copied: sets that grow from one
    another (the snapshot's live files, then what protects them, then every path the log
    names) share their paths. :meth:`extended` adds a layer of only the paths not yet held."""

    def __init__(self, layers: Iterable[PathSet] = ()) -> None:
        self.layers: tuple[PathSet, ...] = tuple(layer for layer in layers if len(layer))

    def __len__(self) -> int:
        return sum(len(layer) for layer in self.layers)

    def __iter__(self) -> Iterator[str]:
        return itertools.chain.from_iterable(self.layers)

    def __contains__(self, path: object) -> bool:
        return any(path in layer for layer in self.layers)

    def contains_all(self, paths: Sequence[str]) -> list[bool]:
        """Membership of each of ``paths``."""
        if len(self.layers) == 1:
            return self.layers[0].contains_all(paths)
        out = [False] * len(paths)
        for layer in self.layers:
            out = [a or b for a, b in zip(out, layer.contains_all(paths), strict=True)]
        return out

    def new_paths(self, paths: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
        """The paths of ``paths`` this union does not hold (in order, repeats kept)."""
        values = _strings_of(paths)
        kept = [
            piece.filter(pc.invert(pa.array(self.contains_all(piece.to_pylist()), pa.bool_())))
            for piece in (values.slice(start, CHUNK) for start in range(0, len(values), CHUNK))
        ]
        return pa.chunked_array([c for piece in kept for c in piece.chunks], pa.string())

    def extended(self, parts: Iterable[pa.Array | pa.ChunkedArray]) -> PathUnion:
        """This union plus every path of ``parts``: a new layer holding only the new ones
        (this union itself is unchanged and shares its layers)."""
        new = [self.new_paths(part) for part in parts]
        added = PathSet(chunked(new))
        return PathUnion([*self.layers, added])
