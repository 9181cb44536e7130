"""``make bench`` section ``orphans_synthetic``: the local engine's ``--inventory`` dry run at
sizes whose data files this disk cannot hold (issue 22's 10,000,000-file point: the disk has
about 16.7M inodes in all), one run per size, each a fresh process.

**What is built** (:func:`build`, streamed: no list of the table's files is ever held):

* the log of the ``orphans_engines`` bench table of that size
  (:func:`bench.orphans_engines.build_table`: one commit and a classic checkpoint naming the
  live files, ``_last_checkpoint``; the 200 partition directories), **without its data
  files**;
* a Parquet ``USING INVENTORY`` file (:class:`bench.orphans_engines.InventoryWriter`, the
  columns ``build_inventory`` writes) with one row per data file the table would have (the
  live files and 2.5% orphans, the same names, size 0, modified ten days before the build),
  then the rows of what is on disk (``_delta_log`` and its files, the partition directories),
  as an inventory of the real table would hold them.

So the scan reads a real log against an inventory of the table it describes; the files the
inventory names and the log does not are exactly the generated orphans. That the data files
are missing does not change the scan: with ``--inventory`` the local engine lists and reads
only ``_delta_log`` and the inventory, and judges each data file by its inventory row (path,
length, modification time); it never stats or opens a data file (``tools/orphans/classify.py``:
``scan``; ``tests/test_bench_orphans_synthetic.py`` runs it on a table without data files).

**What is measured** per size (:func:`run`): the build (seconds, and the disk it takes: bytes
allocated and inodes, of the table and of the inventory), then one ``engine inventory`` run of
:func:`bench.orphans_engines.engine_run` in a fresh process (wall, the scan alone, peak RSS,
files found) and the load average before and after. The artifacts are deleted after the run
unless ``tables`` caches them (:func:`bench.orphans_engines.cached_table`; then the disk figures
stay in use).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .orphans_engines import (
    DAY_MS,
    PARTITIONS,
    InventoryWriter,
    _one,
    _summary,
    build_table,
    cached_table,
    inventory_of,
    remove_table,
)

#: The mode the rows are labelled with: how they were made.
MODE = "inventory mode: synthetic inventory, no data files on disk"
#: The name of a cached table under ``--engine-tables`` (``synthetic-<files>``).
CACHE_NAME = "synthetic"


def build(root: Path, files: int, mtime_ms: int) -> int:
    """The bench table's log at ``root`` (``files`` files, no data file written) and its
    synthetic inventory at :func:`~bench.orphans_engines.inventory_of` ``(root)``: a row per
    data file (size 0, ``mtime_ms``), then the rows of everything on disk under ``root``.
    Returns the orphan count (the files the inventory names and the log does not)."""
    with InventoryWriter(inventory_of(root) / "part-0.parquet") as inventory:
        orphans = build_table(
            root,
            files,
            mtime_ms,
            data_files=False,
            on_file=lambda rel: inventory.add(f"{root}/{rel}", 0, False, mtime_ms),
        )
        inventory.walk(root)
    return orphans


def _below(top: Path) -> Iterator[str]:
    """``top`` and every file and directory below it."""
    yield str(top)
    for folder, dirs, files in os.walk(top):
        for name in (*dirs, *files):
            yield os.path.join(folder, name)


def disk_usage(*paths: Path) -> dict[str, int]:
    """Bytes allocated on disk (``st_blocks``) and inodes used by ``paths`` and everything
    below them."""
    allocated = inodes = 0
    for top in paths:
        for name in _below(top):
            allocated += os.lstat(name).st_blocks * 512
            inodes += 1
    return {"bytes": allocated, "inodes": inodes}


def _load() -> str:
    one, _five, fifteen = os.getloadavg()
    return f"{one:.1f} (15 min: {fifteen:.1f})"


def run(workdir: Path, sizes: tuple[int, ...], tables: Path | None = None) -> dict[str, Any]:
    """Builds, measures and (without ``tables``) deletes each size in turn (module
    docstring). Returns the section: ``what`` and ``sizes`` as
    :func:`bench.orphans_engines.run` shapes them (so :func:`~bench.orphans_engines.merge_sizes`
    keeps the sizes a later run does not measure), each size with its ``mode``, ``objects``
    (inventory rows of data files), ``orphans``, ``build_s``, ``disk`` and one ``inventory``
    row."""
    out: dict[str, Any] = {
        "what": f"retention-0 dry run of the local engine with --inventory, one process; the "
        f"table: the orphans_engines bench log of N files in {PARTITIONS} partitions (2.5% "
        "orphans) without its data files; the inventory: a Parquet USING INVENTORY file with "
        "a row per data file, then the rows of the log on disk",
        "sizes": {},
    }
    log = workdir / "orphans-synthetic.log"
    for files in sizes:
        started = time.monotonic()
        load_before = _load()
        if tables is not None:
            root, orphans = cached_table(tables, files, CACHE_NAME, build)
        else:
            root = workdir / f"{CACHE_NAME}-{files}"
            orphans = build(root, files, int(time.time() * 1000) - 10 * DAY_MS)
        entry: dict[str, Any] = {
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "mode": MODE,
            "objects": files,
            "orphans": orphans,
            "build_s": round(time.monotonic() - started, 1),
            "disk": {
                "table": disk_usage(root),
                "inventory": disk_usage(inventory_of(root)),
                "kept": tables is not None,
            },
        }
        out["sizes"][str(files)] = entry
        row = _one("inventory", root, log)
        entry["inventory"] = _summary([row])
        entry["load"] = (
            f"load average {load_before} before the build, {_load()} after the run, on "
            f"{os.cpu_count()} cores"
        )
        if tables is None:
            remove_table(root)
    return out


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def markdown(section: dict[str, Any]) -> list[str]:
    """The section's table (one row per size) and a note per size: build, disk, load."""
    lines = [
        f"Orphan scan past this disk's inodes: {section['what']}.",
        "",
        "| files (mode; measured) | engine | runs | wall | scan alone | peak RSS | files found "
        "(orphans generated) |",
        "|---|---|---|---|---|---|---|",
    ]
    for files, entry in section["sizes"].items():
        s = entry["inventory"]
        lines.append(
            f"| {int(files):,} ({entry['mode']}; {entry['measured_at'][:16]}) | "
            f"deltaguard orphans --inventory (local engine) | {s['runs']} | "
            f"{s['wall_s_median']:.1f} s | {s['work_s_median']:.1f} s | "
            f"{s['python_peak_rss_mib_median']:.0f} MiB | "
            f"{', '.join(str(f) for f in s['found'])} ({entry['orphans']}) |"
        )
    for files, entry in section["sizes"].items():
        disk = entry["disk"]
        kept = "kept (cached)" if disk["kept"] else "deleted after the run"
        lines += [
            "",
            f"Note on {int(files):,} files: built (log and inventory) in {entry['build_s']:.0f} s; "
            f"on disk: the table (log only) {_gib(disk['table']['bytes'])} in "
            f"{disk['table']['inodes']} inodes, the inventory {_gib(disk['inventory']['bytes'])} "
            f"in {disk['inventory']['inodes']} inodes, {kept}; {entry['load']}",
        ]
    return [*lines, ""]


def main(argv: list[str]) -> int:
    """``python -m bench.orphans_synthetic SIZE...``: measure outside ``make bench`` and print
    the markdown (nothing written to the results)."""
    import tempfile

    sizes = tuple(int(a) for a in argv) or (10_000_000,)
    with tempfile.TemporaryDirectory(prefix="orphans-synthetic-") as tmp:
        result = run(Path(tmp), sizes)
    print("\n".join(markdown(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
