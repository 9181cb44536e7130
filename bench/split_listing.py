"""``make bench`` section ``split_listing``: the Spark engine's listing of one flat S3 prefix of
``files`` objects on versitygw, as one ListObjectsV2 stream (the driver lists the root, as the
engine does for a directory it does not cut) and in key ranges listed by several tasks at once
(:mod:`deltaguard.tools.orphans.key_ranges`, the default ``range_files``), in one fresh
Spark process (``local-cluster[2,1,1024]``) per run, the two modes alternating which goes first.

Timed: the listing job alone (``list_table_jvm(...).files.count()``), after a warm-up listing
of a smaller prefix in both modes (class loading and JIT compilation of both code paths). The
cuts come from :func:`~deltaguard.tools.orphans.key_ranges.cuts_of` over a sample of the names
drawn at the engine's rate (the engine draws it from the checkpoint's paths). The session is
the command's own (:func:`~deltaguard.tools.spark_engine.session.engine_session`), without
the test bed's JVM options. Reported: files/s of each
mode (medians), the median of the per-run ratios, the file counts (equal, or the run fails).

versitygw, not LocalStack: LocalStack answers every request in one Python process, so it
cannot serve two listings at once at all. The objects are written into versitygw's POSIX
directory directly (it serves what the directory holds): 100,000 PUTs would take minutes.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from deltaguard.localstack.versitygw_server import VERSITYGW_VERSION, VersityGWServer

from .worker import run_worker

MASTER = "local-cluster[2,1,1024]"
BUCKET = "bench-split-listing"
PREFIX = "lake/flat"
#: A smaller prefix each process lists first, in both modes, so that neither measured mode
#: pays the JIT compilation of the listing code (the mode listed first did: about 2 s).
WARM = "lake/warm"
WARM_FILES = 10_000


def _names(files: int) -> list[str]:
    rng = random.Random(22)
    return [
        f"part-{i % 200:05d}-{uuid.UUID(int=rng.getrandbits(128))}-c000.snappy.parquet"
        for i in range(files)
    ]


def worker(endpoint: str, sample_file: str, order: str, server_pid: int) -> dict[str, Any]:
    """In a fresh process: a session on versitygw, a warm-up, then both modes in ``order``
    (``one,split`` or ``split,one``); returns each mode's files and seconds, the CPU seconds
    versitygw (``server_pid``) spent, and the machine's busy share of its cores."""
    from deltaguard.tools.orphans.key_ranges import DEFAULT_RANGE_FILES, cuts_of
    from deltaguard.tools.spark_engine.session import engine_session
    from deltaguard.tools.spark_engine.store_spec import StoreSpec
    from deltaguard.tools.spark_engine.table_lister import list_table_jvm, max_tasks
    from deltaguard.tools.storage import S3Options

    from .cpu_share import machine_busy_s, tree_cpu_s

    s3 = S3Options(endpoint, "us-east-1", path_style=True)
    spark = engine_session(f"s3a://{BUCKET}/{PREFIX}", s3, master=MASTER)
    warm_spec = StoreSpec(f"s3a://{BUCKET}/{WARM}", s3)
    for warm_cuts in ({}, {"": [_names(WARM_FILES)[WARM_FILES // 2]]}):  # both code paths
        warm = list_table_jvm(spark, warm_spec, [], {}, warm_cuts)
        assert warm is not None, "deltaguard's jar is not on the session's class path"
        warm.files.count()
    doc = json.loads(Path(sample_file).read_text())
    cuts = cuts_of(doc["sample"], doc["fraction"], DEFAULT_RANGE_FILES, max_tasks(spark))
    out: dict[str, Any] = {"ranges": len(cuts.get("", [])) + 1}
    spec = StoreSpec(f"s3a://{BUCKET}/{PREFIX}", s3)
    cores = os.cpu_count() or 1
    for mode in order.split(","):
        busy, server = machine_busy_s(), tree_cpu_s(server_pid)
        started = time.perf_counter()
        listing = list_table_jvm(spark, spec, [], {}, cuts if mode == "split" else {})
        assert listing is not None
        files = listing.files.count()
        wall = time.perf_counter() - started
        out[mode] = {
            "files": files,
            "s": round(wall, 2),
            "server_cpu_s": round(tree_cpu_s(server_pid) - server, 1),
            "machine_busy": round((machine_busy_s() - busy) / (wall * cores), 2),
        }
    spark.stop()
    return out


def run(workdir: Path, files: int = 100_000, runs: int = 3) -> dict[str, Any]:
    """``runs`` runs of both modes on a flat prefix of ``files`` objects (see the module
    docstring)."""
    from deltaguard.tools.orphans.key_ranges import DEFAULT_RANGE_FILES, sample_fraction

    rows: list[dict[str, Any]] = []
    with VersityGWServer(workdir / "versitygw") as server:
        assert server.server is not None  # started by the with
        endpoint = server.endpoint
        client = endpoint.s3_client()
        client.create_bucket(Bucket=BUCKET)
        client.put_object(Bucket=BUCKET, Key=f"{WARM}/marker", Body=b"x")  # the bucket's dirs
        for prefix, count in ((WARM, WARM_FILES), (PREFIX, files)):
            directory = server.data_dir / BUCKET / prefix
            directory.mkdir(parents=True, exist_ok=True)
            for name in _names(count):
                (directory / name).write_bytes(b"x")
        names = _names(files)
        fraction = sample_fraction(DEFAULT_RANGE_FILES)
        rng = random.Random(7)
        sample = [n for n in names if rng.random() < fraction]
        sample_file = workdir / "split-sample.json"
        sample_file.write_text(json.dumps({"fraction": fraction, "sample": sample}))
        os.environ.update(endpoint.credentials_env())  # S3A's default chain in the workers
        for i in range(runs):
            order = "one,split" if i % 2 == 0 else "split,one"
            row = run_worker(
                "bench.split_listing",
                ["worker", endpoint.url, str(sample_file), order, str(server.server.pid)],
                workdir / "split-listing.log",
            )
            row["load_1m"] = round(os.getloadavg()[0], 1)
            print(f"[split_listing] {row}", file=sys.stderr, flush=True)
            if not row["one"]["files"] == row["split"]["files"] == files:
                raise RuntimeError(f"split_listing: file counts differ: {row}")
            rows.append(row)

    def rate(mode: str) -> list[float]:
        return [r[mode]["files"] / r[mode]["s"] for r in rows]

    def med(mode: str, key: str) -> float:
        return round(statistics.median(r[mode][key] for r in rows), 2)

    return {
        "files": files,
        "server": f"versitygw {VERSITYGW_VERSION}",
        "range_files": DEFAULT_RANGE_FILES,
        "ranges": rows[0]["ranges"],
        "one_stream_files_per_s_median": round(statistics.median(rate("one"))),
        "split_files_per_s_median": round(statistics.median(rate("split"))),
        "ratio_median": round(
            statistics.median([s / o for s, o in zip(rate("split"), rate("one"), strict=True)]), 2
        ),
        "one_stream_server_cpu_s_median": med("one", "server_cpu_s"),
        "split_server_cpu_s_median": med("split", "server_cpu_s"),
        "one_stream_machine_busy_median": med("one", "machine_busy"),
        "split_machine_busy_median": med("split", "machine_busy"),
        "load": f"load average {os.getloadavg()[0]:.1f} at the end on {os.cpu_count()} cores",
        "per_run": rows,
    }


def markdown(section: dict[str, Any]) -> list[str]:
    """The section's table (a function of its JSON alone)."""
    lines = [
        "| prefix | server | one stream | key ranges (tasks) | ranges vs one stream: median of per-run ratios | files (each mode) |",
        "|---|---|---|---|---|---|",
        f"| {section['files']:,} objects, flat | {section['server']} | "
        f"{section['one_stream_files_per_s_median']:,} files/s | "
        f"{section['split_files_per_s_median']:,} files/s ({section['ranges']}) | "
        f"{section['ratio_median']:.2f}x | {section['files']:,} |",
        "",
    ]
    if "split_server_cpu_s_median" in section:
        lines += [
            "Where the CPU went (medians): the server's CPU seconds per listing, and the machine's "
            "busy share of its cores while it ran.",
            "",
            "| mode | server CPU | machine busy |",
            "|---|---|---|",
            f"| one stream | {section['one_stream_server_cpu_s_median']:.1f} s | "
            f"{section['one_stream_machine_busy_median']:.0%} |",
            f"| key ranges | {section['split_server_cpu_s_median']:.1f} s | "
            f"{section['split_machine_busy_median']:.0%} |",
            "",
        ]
    return lines


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        print(json.dumps(worker(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))))
