"""The synthetic-inventory bench (``bench/orphans_synthetic.py``, issue 22's 10M point) at
2,000 files: the table has a real log and no data file, the inventory names every data file
the log describes plus the generated orphans, and the local engine's ``--inventory`` scan finds
exactly those orphans (so it never needed a data file). No Spark; a few seconds."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import unquote

import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench import orphans_synthetic
from bench.orphans_engines import DAY_MS, PARTITIONS, inventory_of
from deltaguard.tools.orphans import scan
from deltaguard.tools.orphans.classify import FileClass
from deltaguard.tools.orphans.inventory import INVENTORY_COLUMNS
from deltaguard.tools.orphans.inventory_read import open_inventory
from deltaguard.tools.storage import S3Options, open_table

FILES = 2_000


def _live(root: Path) -> set[str]:
    """The data files the log's commit adds (decoded, relative to the root)."""
    lines = (root / "_delta_log" / f"{1:020d}.json").read_text().splitlines()
    return {unquote(a["add"]["path"]) for a in map(json.loads, lines) if "add" in a}


def test_scan_of_the_synthetic_inventory_finds_exactly_the_generated_orphans(
    tmp_path: Path,
) -> None:
    root = tmp_path / "synthetic"
    mtime_ms = int(time.time() * 1000) - 10 * DAY_MS
    orphans = orphans_synthetic.build(root, FILES, mtime_ms)
    assert orphans == FILES // 40

    on_disk = [p.relative_to(root) for p in root.rglob("*") if not p.is_dir()]
    assert on_disk and all(p.parts[0] == "_delta_log" for p in on_disk), "a data file on disk"
    assert len([p for p in root.iterdir() if p.is_dir()]) == PARTITIONS + 1

    inventory = pq.read_table(inventory_of(root))
    assert inventory.column_names == list(INVENTORY_COLUMNS)
    prefix = f"file:{root}/"
    files = inventory.filter(pc.invert(inventory["isDir"]))["path"].to_pylist()
    data = {p.removeprefix(prefix) for p in files if not p.startswith(f"{prefix}_delta_log/")}
    assert len(data) == FILES
    live = _live(root)
    assert live < data and len(live) == FILES - orphans
    generated = data - live

    source = open_inventory(str(inventory_of(root)), S3Options(), None)
    result = scan(open_table(str(root)), retention_ms=0, inventory=source)
    assert sorted(c.path for c in result.candidates) == sorted(generated)
    assert {c.file_class for c in result.candidates} == {FileClass.ORPHAN}
    assert result.inventory is not None
    assert result.inventory.rows_read == inventory.num_rows - PARTITIONS - 1  # less directories
    assert result.listed_files == FILES


def test_the_section_measures_one_run_and_deletes_its_artifacts(tmp_path: Path) -> None:
    section = orphans_synthetic.run(tmp_path, (FILES,))
    entry = section["sizes"][str(FILES)]
    assert entry["inventory"]["found"] == [entry["orphans"]] == [FILES // 40]
    assert entry["mode"] == orphans_synthetic.MODE
    assert entry["disk"]["table"]["inodes"] > PARTITIONS and not entry["disk"]["kept"]
    assert not (tmp_path / f"synthetic-{FILES}").exists()
    assert not inventory_of(tmp_path / f"synthetic-{FILES}").exists()
    text = "\n".join(orphans_synthetic.markdown(section))
    assert f"| {FILES:,} ({orphans_synthetic.MODE};" in text
