"""Driver peak RSS and wall time of ``deltaguard orphans`` local engine vs Spark engine.

``python -m bench.orphans_engines FILES [FILES ...]`` synthesizes the orphans bench table
(:func:`deltaguard.localstack.synthetic_table.build_wide_table`: 200 partitions, 2.5% orphans,
ten days old) per size and scans it once per engine, each in a fresh process (``engine`` mode
of this module). Reported per run: wall seconds (Spark: session start included), the Python
driver's peak RSS, and for the Spark engine the peak RSS of its local JVM (driver *and*
executors in local mode, so an upper bound for a cluster driver). One JSON line per run.
Not yet part of ``make bench`` (issue 16: to add with VACUUM DRY RUN at 1M files).
"""

from __future__ import annotations

import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DAY_MS = 86_400_000


def _jvm_peak_mib() -> int | None:
    """VmHWM of the JVM child of this process (pyspark's gateway), in MiB."""
    for status in glob.glob("/proc/[0-9]*/status"):
        try:
            text = Path(status).read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
        if fields.get("PPid", "").strip() == str(os.getpid()) and fields["Name"] == "java":
            return int(fields["VmHWM"].split()[0]) // 1024
    return None


def engine_run(engine: str, table: str) -> dict[str, Any]:
    """One scan at retention 0 in this process."""
    started = time.monotonic()
    jvm = None
    if engine == "local":
        from deltaguard.tools.deltalog import open_table
        from deltaguard.tools.orphans import scan

        result = scan(open_table(table), retention_ms=0)
        listed, found = result.listed_files, len(result.candidates)
    else:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        from deltaguard.localstack.spark_driver import build_test_session
        from deltaguard.spark_conf.preset_name import PresetName
        from deltaguard.spark_conf.storage import LocalStorage
        from deltaguard.tools.orphans.spark.scan import scan_spark
        from deltaguard.tools.orphans.spark.store_spec import StoreSpec

        spark = build_test_session(
            LocalStorage(),
            PresetName.LOCAL,
            master="local[2]",
            driver_memory="2g",
            extra_conf={"spark.sql.shuffle.partitions": "8"},
        )
        done = scan_spark(
            spark, StoreSpec(table), f"{table}-report", retention_ms=0, max_report_files=0
        )
        listed, found = done.result.listed_files, done.candidate_count
        jvm = _jvm_peak_mib()
    return {
        "engine": engine,
        "listed": listed,
        "candidates": found,
        "wall_s": round(time.monotonic() - started, 1),
        "python_peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "jvm_peak_rss_mib": jvm,
    }


def main(argv: list[str]) -> int:
    if argv[:1] == ["engine"]:
        print(json.dumps(engine_run(argv[1], argv[2])))
        return 0
    from deltaguard.localstack.synthetic_table import build_wide_table

    with tempfile.TemporaryDirectory(prefix="orphans-engines-") as tmp:
        for files in (int(a) for a in argv):
            table = Path(tmp) / f"t{files}"
            now = int(time.time() * 1000)
            build_wide_table(table, files, 200, now - 10 * DAY_MS, files // 40)
            for engine in ("local", "spark"):
                out = subprocess.run(
                    [sys.executable, "-m", "bench.orphans_engines", "engine", engine, str(table)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                print(out.stdout.strip().splitlines()[-1], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
