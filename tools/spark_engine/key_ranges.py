"""The key-range cuts of a large S3 directory for ``--engine spark``
(:mod:`deltaguard.tools.orphans.key_ranges`), from the snapshot's checkpoint that the scan has
cached: a sample of its ``add`` paths, decoded and made relative by the local engine's path
rule (:func:`~deltaguard.tools.deltalog.paths.relative_to_root`). The listing of the ranges:
``io.deltaguard.orphans.TableLister``. A table without a checkpoint gets no cuts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deltaguard.tools.deltalog.actions import decode_path
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.orphans.key_ranges import SEED, cuts_of, sample_fraction
from deltaguard.tools.storage import TableStore

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def range_cuts(
    checkpoint: list[DataFrame],
    rows: int,
    store: TableStore,
    range_files: int,
    max_ranges: int,
) -> dict[str, list[str]]:
    """:func:`~deltaguard.tools.orphans.key_ranges.cuts_of` for the table, from a sample of
    the ``add`` paths of ``checkpoint`` (the snapshot's checkpoint parts as the scan cached
    them, ``rows`` actions in all); one Spark job, whose rows (about
    :data:`~deltaguard.tools.orphans.key_ranges.SAMPLES_PER_RANGE` per ``range_files`` files)
    reach the driver, and none when the checkpoint is too small for any directory to be cut.
    Paths outside the root are left out."""
    from pyspark.sql import functions as F

    if not checkpoint or range_files <= 0 or rows < 2 * range_files:
        return {}
    paths = None
    for part in checkpoint:
        added = part.where(F.col("add").isNotNull()).select(F.col("add.path").alias("path"))
        paths = added if paths is None else paths.unionByName(added)
    assert paths is not None
    fraction = sample_fraction(range_files)
    sample: list[str] = []
    for row in paths.sample(fraction=fraction, seed=SEED).collect():
        relative = relative_to_root(decode_path(row.path), store)
        if relative is not None:
            sample.append(relative)
    return cuts_of(sample, fraction, range_files, max_ranges)
