"""Where a contended Spark append's CPU goes: the Spark jobs one driver runs per Delta append,
with and without another writer committing between its appends.

One Spark driver (the test bed's ``local[1]`` session, ``s3-conditional`` preset settings, on
local disk: which jobs Delta runs does not depend on the LogStore) appends to a table in phases
of ``appends`` appends each, alternating: alone, then with one delta-rs commit landing before
each of its appends (what every other driver's commits do to it under contention). Per phase:
the driver's Spark jobs per append, grouped by job description (Delta names its snapshot state
reconstruction jobs ``Delta: Compute snapshot for version: N``), and its CPU seconds per
append. Run with checksum files off (the shipped preset) and on (Delta's default), one process
each (``python -m bench.snapshot_jobs worker CHECKSUM APPENDS DIR``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from .worker import run_worker

CHECKSUM_KEY = "spark.databricks.delta.writeChecksumFile.enabled"
PHASES = (("alone", False), ("interleaved", True), ("alone", False), ("interleaved", True))


def _worker(checksum: str, appends: int, workdir: Path) -> dict[str, Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    import pyarrow as pa
    from deltalake import write_deltalake

    from deltaguard.localstack.spark_driver import build_test_session, driver_cpu_seconds
    from deltaguard.spark_conf.preset_name import PresetName
    from deltaguard.spark_conf.storage import LocalStorage

    spark = build_test_session(
        LocalStorage(),
        PresetName.S3_CONDITIONAL,
        extra_conf={CHECKSUM_KEY: checksum},
        local_dir=workdir / "spark",
    )
    cpu_s = driver_cpu_seconds(spark)
    status = spark.sparkContext._jsc.sc().statusStore()

    def jobs() -> dict[int, str]:
        listed = status.jobsList(None)
        out: dict[int, str] = {}
        for i in range(listed.size()):
            job = listed.apply(i)
            text = job.description()
            out[int(job.jobId())] = str(text.get() if text.isDefined() else job.name())
        return out

    table = str(workdir / f"table-checksum-{checksum}")
    rows = spark.range(10).selectExpr("id", "'spark' as tag")
    rows.write.format("delta").save(table)
    other = pa.table({"id": pa.array([1], pa.int64()), "tag": ["delta-rs"]})
    phases = []
    for name, interleaved in PHASES:
        kinds: Counter[str] = Counter()
        cpu = 0.0
        for _ in range(appends):
            if interleaved:
                write_deltalake(table, other, mode="append")
            before, cpu_before = jobs(), cpu_s()
            rows.write.format("delta").mode("append").save(table)
            cpu += cpu_s() - cpu_before
            kinds.update(re.sub(r"\d+", "N", d) for j, d in jobs().items() if j not in before)
        phases.append(
            {
                "phase": name,
                "jobs_per_append": sum(kinds.values()) / appends,
                "snapshot_jobs_per_append": sum(
                    n for d, n in kinds.items() if d.startswith("Delta: Compute snapshot")
                )
                / appends,
                "cpu_s_per_append": cpu / appends,
                "jobs_by_description": {d: n / appends for d, n in kinds.most_common()},
            }
        )
    spark.stop()
    return {"checksum_files": checksum == "true", "appends_per_phase": appends, "phases": phases}


def run(workdir: Path, appends: int = 6) -> dict[str, Any]:
    """Both checksum settings, one fresh process each (their logs: ``workdir``)."""
    out: dict[str, Any] = {"what": __doc__.split("\n\n")[0].replace("\n", " "), "settings": []}
    for checksum in ("false", "true"):
        with tempfile.TemporaryDirectory(prefix="deltaguard-jobs-") as tmp:
            result = run_worker(
                "bench.snapshot_jobs",
                ["worker", checksum, str(appends), tmp],
                workdir / "snapshot-jobs.log",
            )
            out["settings"].append(result)
    return out


def markdown(section: dict[str, Any]) -> list[str]:
    lines = [
        "| checksum files | phase | Spark jobs per append | of which `Delta: Compute snapshot` | CPU s per append |",
        "|---|---|---|---|---|",
    ]
    for run_ in section["settings"]:
        for phase in run_["phases"]:
            lines.append(
                f"| {'on' if run_['checksum_files'] else 'off (shipped preset)'} | "
                f"{phase['phase']} | {phase['jobs_per_append']:.1f} | "
                f"{phase['snapshot_jobs_per_append']:.1f} | {phase['cpu_s_per_append']:.2f} |"
            )
    return [*lines, ""]


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "worker":
        print(json.dumps(_worker(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))))
    else:
        with tempfile.TemporaryDirectory(prefix="deltaguard-jobs-") as logs:
            print("\n".join(markdown(run(Path(logs)))))
