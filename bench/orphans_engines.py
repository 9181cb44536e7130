"""``make bench`` section ``orphans_engines``: the local engine, the local engine reading an
inventory instead of listing (``--inventory``: a Parquet ``USING INVENTORY`` table of every
file, written next to the table by :func:`build_inventory`), the Spark engine and Spark's
``VACUUM ... RETAIN 0 HOURS DRY RUN`` per table size: wall time and the driver's peak RSS.

Tables: the orphans bench layout (:func:`deltaguard.localstack.synthetic_table.build_wide_table`:
empty files in 200 partitions, one commit and a checkpoint naming the live ones, 2.5%
uncommitted, ten days old), written by :func:`build_table` as a stream (the 4M-file table's
actions never sit in one list). Every run is a fresh process (``engine`` mode of this module):
wall seconds of the whole process (a Spark session's start included) and of the scan alone.

Driver memory: the Spark runs use a ``local-cluster[2,1,1024]`` master, so the executors are
two separate JVMs (children of the driver JVM) and the driver JVM's peak RSS (``VmHWM`` of the
Python driver's ``java`` child) is the driver's alone; the standalone master and worker of
``local-cluster`` run inside the driver JVM (a few MiB of threads). The executors run the
test bed's JVM options (the serial GC and C2 for hot code only:
:data:`~deltaguard.localstack.spark_driver.EXECUTOR_JIT_GC_OPTIONS`; the drivers' class
archive: :func:`~deltaguard.localstack.spark_driver.build_test_session`), for the Spark engine
and VACUUM alike. Reported per run: the Python driver's peak RSS, the driver
JVM's, and the largest executor JVM's. The local engine is one Python process (its peak RSS
is all of it).
"""

from __future__ import annotations

import glob
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .peak_rss import peak_rss_mib, proc_status
from .worker import run_worker

DAY_MS = 86_400_000
PARTITIONS = 200
MASTER = "local-cluster[2,1,1024]"
DRIVER_MEMORY = "1g"
ENGINES = ("local", "inventory", "spark", "vacuum")
LABELS = {
    "local": "deltaguard orphans (local engine)",
    "inventory": "deltaguard orphans --inventory (local engine, Parquet inventory)",
    "spark": "deltaguard orphans --engine spark",
    "vacuum": "Spark VACUUM RETAIN 0 HOURS DRY RUN",
}


def build_table(
    root: Path,
    files: int,
    mtime_ms: int,
    *,
    data_files: bool = True,
    on_file: Callable[[str], None] | None = None,
) -> int:
    """The bench table with ``files`` files (2.5% of them orphans), streamed to disk: the
    same names, commit and checkpoint as ``build_wide_table``. ``data_files``: create the
    (empty) data files too; without them only the log and the partition directories are on
    disk. ``on_file``: called with every data file's path relative to ``root``, live files
    first, then the orphans. Returns the orphan count."""
    import orjson
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltaguard.localstack.synthetic_table import CHECKPOINT_SCHEMA, SyntheticTable

    def data_file(rel: str) -> None:
        if data_files:
            _touch(root / rel, stamp)
        if on_file is not None:
            on_file(rel)

    orphans = files // 40
    live = files - orphans
    table = SyntheticTable(root)
    table.create(mtime_ms)
    stamp = (mtime_ms * 1_000_000, mtime_ms * 1_000_000)
    for p in range(PARTITIONS):
        (root / f"p={p}").mkdir(parents=True, exist_ok=True)
    log = root / "_delta_log"
    head = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {**table._metadata(), "configuration": []}},
    ]
    writer = pq.ParquetWriter(  # page checksums, as Spark writes its checkpoints
        log / f"{1:020d}.checkpoint.parquet", CHECKPOINT_SCHEMA, write_page_checksum=True
    )
    batch: list[dict[str, Any]] = list(head)
    with (log / f"{1:020d}.json").open("wb") as commit:
        commit.write(orjson.dumps({"commitInfo": {"timestamp": mtime_ms, "operation": "WRITE"}}))
        commit.write(b"\n")
        for i in range(live):
            rel = f"p={i % PARTITIONS}/part-{i:06d}-{uuid.UUID(int=i)}.c000.snappy.parquet"
            data_file(rel)
            add = SyntheticTable.add_action(rel, mtime_ms)
            commit.write(orjson.dumps({"add": add}) + b"\n")
            batch.append({"add": {**add, "partitionValues": list(add["partitionValues"].items())}})
            if len(batch) >= 100_000:
                writer.write_table(pa.Table.from_pylist(batch, schema=CHECKPOINT_SCHEMA))
                batch = []
    if batch:
        writer.write_table(pa.Table.from_pylist(batch, schema=CHECKPOINT_SCHEMA))
    writer.close()
    for name in (f"{1:020d}.json", f"{1:020d}.checkpoint.parquet"):
        os.utime(log / name, ns=stamp)
    (log / "_last_checkpoint").write_text(json.dumps({"version": 1, "size": live + 2}))
    for i in range(orphans):
        data_file(f"p={i % PARTITIONS}/part-{i:06d}-{uuid.uuid4()}.c000.snappy.parquet")
    return orphans


def inventory_of(root: Path) -> Path:
    """Where :func:`build_inventory` writes the inventory of the table at ``root``."""
    return root.with_name(f"{root.name}-inventory")


class InventoryWriter:
    """One Parquet file of ``USING INVENTORY`` rows (``path`` a ``file:`` URI, ``length``,
    ``isDir``, ``modificationTime`` in epoch ms), written in batches of 100,000 rows, so
    memory holds one batch whatever the row count. Use as a context manager: the file is
    complete once it exits; its modification time is the inventory's date
    (:func:`engine_run`)."""

    _BATCH = 100_000

    def __init__(self, out: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from deltaguard.tools.orphans.inventory import INVENTORY_COLUMNS

        out.parent.mkdir(parents=True, exist_ok=True)
        types = (pa.string(), pa.int64(), pa.bool_(), pa.int64())
        self._schema = pa.schema(list(zip(INVENTORY_COLUMNS, types, strict=True)))
        self._writer = pq.ParquetWriter(out, self._schema)
        self._rows: dict[str, list[Any]] = {name: [] for name in self._schema.names}

    def __enter__(self) -> InventoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._flush()
        self._writer.close()

    def add(self, path: str, length: int, is_dir: bool, mtime_ms: int) -> None:
        """One row for the local absolute ``path``."""
        rows = self._rows
        rows["path"].append(f"file:{path}")
        rows["length"].append(length)
        rows["isDir"].append(is_dir)
        rows["modificationTime"].append(mtime_ms)
        if len(rows["path"]) >= self._BATCH:
            self._flush()

    def walk(self, root: Path) -> None:
        """A row for every file and directory below ``root``, as on disk now (stat'ed)."""
        for folder, dirs, files in os.walk(root):
            for name, is_dir in [*((d, True) for d in dirs), *((f, False) for f in files)]:
                path = os.path.join(folder, name)
                st = os.stat(path)
                self.add(path, 0 if is_dir else st.st_size, is_dir, st.st_mtime_ns // 1_000_000)

    def _flush(self) -> None:
        import pyarrow as pa

        self._writer.write_table(pa.table(self._rows, schema=self._schema))
        self._rows = {name: [] for name in self._schema.names}


def build_inventory(root: Path) -> Path:
    """A Parquet ``USING INVENTORY`` table of every file and directory below ``root``, as a
    storage inventory would list them (:class:`InventoryWriter`). Returns its directory."""
    out = inventory_of(root)
    with InventoryWriter(out / "part-0.parquet") as writer:
        writer.walk(root)
    return out


def _touch(path: Path, stamp: tuple[int, int]) -> None:
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
    os.utime(path, ns=stamp)


def _children(ppid: int, name: str) -> list[int]:
    out = []
    for status in glob.glob("/proc/[0-9]*/status"):
        try:
            fields = proc_status(int(status.split("/")[2]))
        except (OSError, ValueError):
            continue
        if fields.get("PPid", "").strip() == str(ppid) and fields.get("Name") == name:
            out.append(int(status.split("/")[2]))
    return out


def _session() -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from deltaguard.localstack.spark_driver import build_test_session
    from deltaguard.logstore.preset_name import PresetName
    from deltaguard.spark_conf.storage import LocalStorage

    return build_test_session(
        LocalStorage(),
        PresetName.LOCAL,
        app_name="bench-orphans-engines",
        master=MASTER,
        driver_memory=DRIVER_MEMORY,
        extra_conf={
            "spark.sql.shuffle.partitions": "8",
            "spark.databricks.delta.retentionDurationCheck.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        },
    )


def engine_run(engine: str, table: str) -> dict[str, Any]:
    """One scan at retention 0 in this process (see the module docstring)."""
    jvm: int | None = None
    executors: int | None = None
    spark = None
    if engine in ("local", "inventory"):
        from deltaguard.tools.orphans import scan
        from deltaguard.tools.orphans.inventory_read import open_inventory
        from deltaguard.tools.storage import S3Options, open_table

        started = time.monotonic()
        source = None
        if engine == "inventory":
            inventory = inventory_of(Path(table))
            date_ms = (inventory / "part-0.parquet").stat().st_mtime_ns // 1_000_000
            source = open_inventory(str(inventory), S3Options(), date_ms)
        result = scan(open_table(table), retention_ms=0, inventory=source)
        found = len(result.candidates)
    else:
        spark = _session()
        started = time.monotonic()
        if engine == "spark":
            from deltaguard.tools.spark_engine.orphans_scan import scan_spark
            from deltaguard.tools.spark_engine.store_spec import StoreSpec

            done = scan_spark(
                spark, StoreSpec(table), f"{table}-report", retention_ms=0, max_report_files=0
            )
            found = done.candidate_count
        else:
            found = spark.sql(f"VACUUM delta.`{table}` RETAIN 0 HOURS DRY RUN").count()
    work = time.monotonic() - started
    if spark is not None:
        (driver,) = _children(os.getpid(), "java")
        jvm = peak_rss_mib(driver)
        executors = max(peak_rss_mib(pid) for pid in _children(driver, "java"))
        spark.stop()
    return {
        "engine": engine,
        "found": found,
        "work_s": round(work, 1),
        "python_peak_rss_mib": peak_rss_mib(),
        "driver_jvm_peak_rss_mib": jvm,
        "executor_jvm_peak_rss_mib": executors,
    }


def _one(engine: str, table: Path, log: Path) -> dict[str, Any]:
    row = run_worker("bench.orphans_engines", ["engine", engine, str(table)], log)
    print(f"[orphans_engines] {table.name}: {row}", file=sys.stderr, flush=True)
    return row


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def med(key: str) -> float | None:
        values = [r[key] for r in rows if r[key] is not None]
        return round(statistics.median(values), 1) if values else None

    return {
        "runs": len(rows),
        "wall_s_median": med("wall_s"),
        "work_s_median": med("work_s"),
        "python_peak_rss_mib_median": med("python_peak_rss_mib"),
        "driver_jvm_peak_rss_mib_median": med("driver_jvm_peak_rss_mib"),
        "executor_jvm_peak_rss_mib_median": med("executor_jvm_peak_rss_mib"),
        "found": sorted({r["found"] for r in rows}),
        "per_run": rows,
    }


def run(
    workdir: Path,
    sizes: tuple[int, ...] = (200_000, 1_000_000),
    spark_only_sizes: tuple[int, ...] = (4_000_000,),
    runs: int = 3,
    spark_only_runs: int = 1,
    progress: Path | None = None,
    only: tuple[str, ...] = ENGINES,
    tables: Path | None = None,
) -> dict[str, Any]:
    """Every engine on each of ``sizes`` (``runs`` runs each; the Spark engine first), the
    Spark engine alone on each of ``spark_only_sizes`` (``spark_only_runs`` runs); each table
    is built, measured and deleted before the next. ``only``: the engines to run (the others'
    rows are left to :func:`merge_sizes`). ``tables``: a directory of built tables to reuse
    (:func:`cached_table`; kept after the runs). With ``progress`` the section so far is
    written there (JSON) after every run, so a run cut short keeps what it measured."""
    import shutil

    out: dict[str, Any] = {
        "what": f"retention-0 scan of a table of N files in {PARTITIONS} partitions (2.5% "
        f"orphans) on local disk, one process per run; Spark: {MASTER} (2 executor JVMs of "
        f"1 GiB), driver memory {DRIVER_MEMORY}",
        "master": MASTER,
        "sizes": {},
    }
    log = workdir / "orphans-engines.log"
    for files, all_engines, n in [
        *((f, ("spark", "local", "inventory", "vacuum"), runs) for f in sizes),
        *((f, ("spark",), spark_only_runs) for f in spark_only_sizes),
    ]:
        engines = tuple(e for e in all_engines if e in only)
        if not engines:
            continue
        started = time.monotonic()
        if tables is not None:
            root, orphans = cached_table(tables, files)
        else:
            root = workdir / f"engines-{files}"
            orphans = build_table(root, files, int(time.time() * 1000) - 10 * DAY_MS)
        entry: dict[str, Any] = {
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "build_s": round(time.monotonic() - started, 1),
        }
        entry["orphans"] = orphans
        if "inventory" in engines and not inventory_of(root).exists():
            built = time.monotonic()
            build_inventory(root)
            entry["inventory_build_s"] = round(time.monotonic() - built, 1)
        out["sizes"][str(files)] = entry
        for engine in engines:
            rows: list[dict[str, Any]] = []
            for _ in range(n):
                rows.append(_one(engine, root, log))
                entry[engine] = _summary(rows)
                if progress is not None:
                    progress.write_text(json.dumps(out, indent=2) + "\n")
        load = os.getloadavg()
        entry["load"] = (
            f"load average at the end of the {files:,}-file runs: {load[0]:.1f} "
            f"(15 min: {load[2]:.1f}) on {os.cpu_count()} cores"
        )
        if tables is None:
            remove_table(root)
        shutil.rmtree(f"{root}-report", ignore_errors=True)
    return out


def remove_table(root: Path) -> None:
    """Deletes a bench table built at ``root`` and its inventory, if there are any."""
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(inventory_of(root), ignore_errors=True)


def cached_table(
    tables: Path,
    files: int,
    name: str = "engines",
    build: Callable[[Path, int, int], int] = build_table,
) -> tuple[Path, int]:
    """The bench table of ``files`` files under ``tables`` (``<name>-<files>``), built by
    ``build(root, files, mtime_ms)`` (returning the orphan count) on first use and reused
    after (a dry run changes nothing in it; its files stay ten days older than the build,
    older than a retention-0 cut-off). A table whose build did not finish (no ``.built``
    marker) is built again, its inventory (:func:`inventory_of`) removed first. Returns its
    root and orphan count."""

    root = tables / f"{name}-{files}"
    marker = tables / f"{name}-{files}.built"
    if marker.exists():
        return root, int(marker.read_text())
    remove_table(root)
    orphans = build(root, files, int(time.time() * 1000) - 10 * DAY_MS)
    marker.write_text(f"{orphans}\n")
    return root, orphans


def merge_sizes(earlier: dict[str, Any], section: dict[str, Any]) -> dict[str, Any]:
    """``section`` with what ``earlier`` (a previous run's section) measured that it did
    not: the sizes it did not measure, and at a size it did, the engines it did not run
    (``--engine-only local`` re-measures one engine's rows and keeps the others). Each kept
    size, and each kept engine row, keeps its own ``measured_at`` (and its size's notes)."""
    stamp = earlier.get("measured_at", "?")
    sizes: dict[str, Any] = {}
    for k, old in earlier.get("sizes", {}).items():
        old = {"measured_at": stamp, "note": earlier.get("note"), **old}
        new = section["sizes"].get(k)
        if new is None:
            sizes[k] = old
            continue
        kept = {
            e: {"measured_at": old["measured_at"], **old[e]}
            for e in ENGINES
            if e in old and e not in new
        }
        if kept:
            notes = [old[n] for n in ("note", "load") if old.get(n)]
            earlier_note = f"rows of {', '.join(kept)} measured {old['measured_at'][:16]}" + (
                f" ({'; '.join(notes)})" if notes else ""
            )
            new = {**new, **kept, "earlier_rows": earlier_note}
        sizes[k] = new
    for k, new in section["sizes"].items():
        sizes.setdefault(k, new)
    return {**section, "sizes": dict(sorted(sizes.items(), key=lambda kv: int(kv[0])))}


def _cell(value: float | None, unit: str) -> str:
    return (
        "-" if value is None else f"{value:.0f} {unit}" if unit == "MiB" else f"{value:.1f} {unit}"
    )


def markdown(section: dict[str, Any]) -> list[str]:
    lines = [
        f"Orphan scan engines: {section['what']}. Wall: the whole process (session start "
        "included), medians; RSS: peak, medians.",
        "",
        "| files (measured) | engine | runs | wall | scan alone | Python driver RSS | driver JVM RSS | "
        "executor JVM RSS (largest) | files found |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    if section.get("note"):
        lines[1:1] = ["", f"Note: {section['note']}"]
    for files, entry in section["sizes"].items():
        for engine in ENGINES:
            if engine not in entry:
                continue
            s = entry[engine]
            lines.append(
                f"| {int(files):,} ({s.get('measured_at', entry.get('measured_at', '?'))[:16]}) | "
                f"{LABELS[engine]} | {s['runs']} | "
                f"{_cell(s['wall_s_median'], 's')} | {_cell(s['work_s_median'], 's')} | "
                f"{_cell(s['python_peak_rss_mib_median'], 'MiB')} | "
                f"{_cell(s['driver_jvm_peak_rss_mib_median'], 'MiB')} | "
                f"{_cell(s['executor_jvm_peak_rss_mib_median'], 'MiB')} | "
                f"{', '.join(str(f) for f in s['found'])} |"
            )
    for files, entry in section["sizes"].items():
        notes = [entry[k] for k in ("note", "load", "earlier_rows") if entry.get(k)]
        if notes:
            lines += ["", f"Note on {int(files):,} files: {'; '.join(notes)}"]
    return [*lines, ""]


def main(argv: list[str]) -> int:
    if argv[:1] == ["engine"]:
        print(json.dumps(engine_run(argv[1], argv[2])))
        return 0
    import tempfile

    engines = next((a.split("=", 1)[1] for a in argv if a.startswith("--engines=")), None)
    sizes = tuple(int(a) for a in argv if not a.startswith("--")) or (200_000,)
    only = tuple(engines.split(",")) if engines else ENGINES
    with tempfile.TemporaryDirectory(prefix="orphans-engines-") as tmp:
        result = run(Path(tmp), sizes, (), runs=1, only=only)
    print("\n".join(markdown(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
