"""Where to cut a large S3 directory of the table into key ranges, so that several Spark tasks
list it at once (ListObjectsV2 ``start-after``) instead of one stream of 1,000-key pages.

The cuts come from the Delta log: a sample of the file paths of the snapshot's checkpoint
(already read and cached by the scan), decoded and made relative by the local engine's path
rule (:func:`~deltaguard.tools.deltalog.paths.relative_to_root`). A directory the sample says
holds at least ``2 * range_files`` files is cut at evenly spaced sampled names into ranges of
about ``range_files`` files. Files the log does not name (the orphans this command looks for)
fall into whichever range their names sort into: the cuts decide only how evenly the work is
spread, never what is listed. Why every key is listed exactly once, whatever the cuts (names
without a ``/``): the javadoc of ``io.deltaguard.logstore.S3KeyRangeListing``; the listing
itself: ``io.deltaguard.orphans.TableLister``.

A table without a checkpoint, or whose files are not on S3, gets no cuts (each directory is one
stream, as before).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING

from deltaguard.tools.deltalog.actions import decode_path
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.deltalog.storage import TableStore

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Files per range by default: 20 pages of ListObjectsV2 (one to two seconds on AWS S3).
DEFAULT_RANGE_FILES = 20_000
#: Sampled names per range: enough to place a cut within a few percent of its ideal rank.
SAMPLES_PER_RANGE = 64
#: The seed of the sample, so a run's cuts can be reproduced.
_SEED = 22


def _utf8(name: str) -> bytes:
    return name.encode("utf-8", "surrogatepass")


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


def range_cuts(
    checkpoint: list[DataFrame], store: TableStore, range_files: int, max_ranges: int
) -> dict[str, list[str]]:
    """:func:`cuts_of` for the table, from a sample of the ``add`` paths of ``checkpoint``
    (the snapshot's checkpoint parts as the scan cached them); one Spark job, whose rows (about
    :data:`SAMPLES_PER_RANGE` per ``range_files`` files) reach the driver. Paths outside the
    root are left out."""
    from pyspark.sql import functions as F

    if not checkpoint or range_files <= 0:
        return {}
    paths = None
    for part in checkpoint:
        added = part.where(F.col("add").isNotNull()).select(F.col("add.path").alias("path"))
        paths = added if paths is None else paths.unionByName(added)
    assert paths is not None
    fraction = min(1.0, SAMPLES_PER_RANGE / range_files)
    sample: list[str] = []
    for row in paths.sample(fraction=fraction, seed=_SEED).collect():
        relative = relative_to_root(decode_path(row.path), store)
        if relative is not None:
            sample.append(relative)
    return cuts_of(sample, fraction, range_files, max_ranges)
