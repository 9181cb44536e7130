"""Where to cut a large S3 directory of the table into key ranges, so that it is listed by
several workers at once (ListObjectsV2 ``start-after``; threads of the local engine, tasks of
``--engine spark``) instead of one stream of 1,000-key pages.

The cuts come from the Delta log: a sample of the paths of the snapshot's files (the local
engine samples its reference set; the Spark engine the checkpoint it has cached,
:mod:`.spark.key_ranges`). A directory the sample says holds at least ``2 * range_files`` files
is cut at evenly spaced sampled names into ranges of about ``range_files`` files. Files the log
does not name (the orphans this command looks for) fall into whichever range their names sort
into: the cuts decide only how evenly the work is spread, never what is listed. Why every key
and every sub-directory is listed exactly once, whatever the cuts (names without a ``/``): the
javadoc of ``io.deltaguard.logstore.S3KeyRangeListing``; which entries a range holds:
:func:`~deltaguard.tools.storage.in_key_range`.

A table whose files are not on S3 gets no cuts (a directory read is one request there).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict

import pyarrow as pa

from deltaguard.tools.orphans.pathset import PathUnion

#: Files per range by default: 20 pages of ListObjectsV2 (one to two seconds on AWS S3).
DEFAULT_RANGE_FILES = 20_000
#: Sampled names per range: enough to place a cut within a few percent of its ideal rank.
SAMPLES_PER_RANGE = 64
#: The seed of the samples, so a run's cuts can be reproduced.
SEED = 22
#: The local engine's most ranges of one directory.
LOCAL_MAX_RANGES = 64


def _utf8(name: str) -> bytes:
    return name.encode("utf-8", "surrogatepass")


def sample_fraction(range_files: int) -> float:
    """The share of the paths to sample for ranges of ``range_files`` files."""
    return min(1.0, SAMPLES_PER_RANGE / range_files)


def cuts_of(
    sample: list[str], fraction: float, range_files: int, max_ranges: int
) -> dict[str, list[str]]:
    """The cuts per directory (relative path, ``""`` for the root) from ``sample``, relative
    decoded file paths drawn with probability ``fraction``: for each directory whose estimated
    file count (sampled files / ``fraction``) is at least ``2 * range_files``, the sampled
    names that cut it into ``min(ceil(count / range_files), max_ranges)`` ranges, strictly
    increasing in S3's key order (UTF-8 bytes). Every cut is a file name: no ``/``."""
    names: dict[str, list[str]] = defaultdict(list)
    for path in sample:
        directory, _, name = path.rpartition("/")
        if name:
            names[directory].append(name)
    cuts: dict[str, list[str]] = {}
    for directory, found in names.items():
        estimate = len(found) / fraction
        if estimate < 2 * range_files:
            continue
        ranges = min(math.ceil(estimate / range_files), max_ranges)
        ordered = sorted(set(found), key=_utf8)
        chosen = sorted({ordered[len(ordered) * i // ranges] for i in range(1, ranges)}, key=_utf8)
        if chosen:
            cuts[directory] = chosen
    return cuts


def reference_cuts(paths: PathUnion, range_files: int, max_ranges: int) -> dict[str, list[str]]:
    """:func:`cuts_of` from a random sample of ``paths`` (relative, decoded: the local
    engine's reference set); only the sampled paths become Python strings."""
    if range_files <= 0 or len(paths) < 2 * range_files:
        return {}
    fraction = sample_fraction(range_files)
    rng = random.Random(SEED)
    sample: list[str] = []
    for layer in paths.layers:
        size = len(layer)
        picks = sorted(rng.sample(range(size), round(size * fraction)))
        if picks:
            sample += layer.paths.take(pa.array(picks, pa.int64())).to_pylist()
    return cuts_of(sample, fraction, range_files, max_ranges)
