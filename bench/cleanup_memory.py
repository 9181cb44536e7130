"""Peak RSS of a local-engine ``deltaguard orphans --delete --yes`` run (issue 22, goal 2).

Builds a synthetic table of ``--files`` files of which ``--orphans`` are orphans
(:func:`bench.orphans_engines.build_table`, topped up with extra orphan files), runs the
command (terminal output, no ``--json``) in a child process with the default retention (the
files are 30 days old), first as a dry run (``--delete``: the scan alone) and then with
``--yes``, and prints one JSON line: the files, the orphans deleted, each child's peak RSS
(its own ``VmHWM``: :mod:`bench.peak_rss`) and wall time, the load average at the start, and
the manifest's size on disk. ``--heap`` adds an in-process measure on a second copy of the table: RSS after the
scan, peak RSS after the cleanup, and the Python heap's peak during the cleanup
(tracemalloc): the cleanup's own share, which the process's peak (set by the scan and the
re-read of the log) hides. The tables and the manifests are deleted afterwards. ``--manifest-name m.json`` runs it
against a deltaguard from before issue 26 (a single-file manifest).

    .venv/bin/python -m bench.cleanup_memory --files 200000 --orphans 100000
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import orjson

from bench.orphans_engines import PARTITIONS, _touch, build_table
from bench.peak_rss import measured_cli
from bench.worker import REPO


def build(root: Path, files: int, orphans: int, mtime_ms: int) -> int:
    """A table of ``files`` files, ``orphans`` of them orphans (at least ``files // 40``).
    Returns the orphan count."""
    live = files - orphans
    built = next(f for f in range(live, files + 1) if f - f // 40 == live)
    found = build_table(root, built, mtime_ms)
    stamp = (mtime_ms * 1_000_000, mtime_ms * 1_000_000)
    for i in range(files - built):
        _touch(root / f"p={i % PARTITIONS}/extra-{i:06d}-{uuid.uuid4()}.parquet", stamp)
    return found + files - built


@dataclass(frozen=True)
class _Run:
    code: int
    stdout: bytes
    peak_mib: int | None
    wall_s: float


def _run(argv: list[str], out: Path) -> _Run:
    """Runs ``deltaguard`` with ``argv`` as a child process; its exit code, stdout and own
    peak RSS (:mod:`bench.peak_rss`: ``wait4``'s ``ru_maxrss`` would start from this process's
    peak, the built table's)."""
    peak = out.with_suffix(".peak")
    started = time.monotonic()
    with out.open("wb") as sink:
        child = subprocess.run(
            [*measured_cli(peak), *argv], stdout=sink, stderr=subprocess.STDOUT, cwd=REPO
        )
    wall = round(time.monotonic() - started, 1)
    # no file: the child died before its exit (a signal, the OOM killer); its code says so
    peak_mib = int(peak.read_text()) if peak.exists() else None
    return _Run(child.returncode, out.read_bytes(), peak_mib, wall)


#: The child of ``--heap``: a scan, then ``execute`` under tracemalloc; prints the RSS after
#: the scan, the peak RSS (VmHWM) after the cleanup and the Python heap's peak during it.
_HEAP_CHILD = """
import sys, tracemalloc
from pathlib import Path
from deltaguard.tools.storage import open_table
from deltaguard.tools.orphans import execute, scan
from deltaguard.tools.orphans.memory import use_jemalloc

def kib(field):
    status = Path("/proc/self/status").read_text().splitlines()
    return int(next(line for line in status if line.startswith(field)).split()[1])

use_jemalloc()
store = open_table(sys.argv[1])
result = scan(store)
after_scan = kib("VmRSS:")
tracemalloc.start()
execute(store, result, manifest_path=Path(sys.argv[2]))
print(after_scan // 1024, kib("VmHWM:") // 1024, tracemalloc.get_traced_memory()[1] >> 20)
"""


def heap(work: Path, files: int, orphans: int, mtime_ms: int, manifest_name: str) -> dict[str, int]:
    """The cleanup's own share, in-process (``--heap``): RSS after the scan, peak RSS after
    ``execute`` (the re-read of the log included), and the Python heap's peak during it."""
    build(work / "t2", files, orphans, mtime_ms)
    out = subprocess.run(
        [sys.executable, "-c", _HEAP_CHILD, str(work / "t2"), str(work / f"h-{manifest_name}")],
        capture_output=True,
        check=True,
    )
    scan_mib, peak_mib, python_mib = (int(v) for v in out.stdout.split())
    return {
        "inproc_rss_after_scan_mib": scan_mib,
        "inproc_peak_rss_mib": peak_mib,
        "execute_python_heap_peak_mib": python_mib,
    }


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--orphans", type=int, default=5_000)
    parser.add_argument("--manifest-name", default="manifest", help="the --manifest path's name")
    parser.add_argument("--heap", action="store_true", help="also measure in-process (a 2nd table)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cleanup-memory-"))
    try:
        table = work / "t"
        mtime_ms = int(time.time() * 1000) - 30 * 86_400_000
        orphans = build(table, args.files, args.orphans, mtime_ms)
        command = ["orphans"]
        manifest = work / args.manifest_name
        load = os.getloadavg()
        dry = _run([*command, str(table), "--delete"], work / "dry.out")
        done = _run(
            [*command, str(table), "--delete", "--yes", "--manifest", str(manifest)],
            work / "delete.out",
        )
        if dry.code != 1 or done.code != 0:
            print(dry, done, file=sys.stderr)
            return 1
        deleted = re.search(rb"deleted (\d+) files", done.stdout)
        row = {
            "files": args.files,
            "orphans": orphans,
            "deleted": int(deleted.group(1)) if deleted else None,
            "dry_run_peak_rss_mib": dry.peak_mib,
            "delete_peak_rss_mib": done.peak_mib,
            "dry_run_wall_s": dry.wall_s,
            "delete_wall_s": done.wall_s,
            "loadavg_1m": round(load[0], 2),
            "manifest_bytes": _size(manifest),
        }
        if args.heap:
            row.update(heap(work, args.files, args.orphans, mtime_ms, args.manifest_name))
        print(orjson.dumps(row).decode())
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
