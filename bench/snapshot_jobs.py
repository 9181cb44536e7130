"""Where a contended Spark append's jobs come from: the Spark jobs one driver runs per Delta
append, alone and with another writer committing right before each of its appends.

The measured driver (the test bed's ``local[1]`` session, run by the line's own interpreter)
appends to an ``s3a://`` table on LocalStack through deltaguard's ``S3ConditionalLogStore``, in
phases of ``appends`` appends each: alone, interleaved (the other writer commits once before
each append), alone again, then the same two phases as idempotent writes (``txnAppId`` /
``txnVersion``, as the fan-out writer and streaming sinks write). The other writer is, per row:

- ``spark``: another Spark driver process of the same line and settings (goal 1 of issue 23);
- ``python``: deltaguard's Python committer (writes ``N.crc`` when ``(N-1).crc`` exists);
- ``delta-rs``: delta-rs (writes no ``N.crc``: a documented cost).

Per phase: the mean Spark jobs per append, grouped by job description (Delta names its state
reconstructions ``Delta: Compute snapshot for version: N``, :data:`~deltaguard.localstack.
spark_driver.SNAPSHOT_JOB`), and CPU seconds per append; and the same mean split by whether the
append wrote Delta's checkpoint (a checkpoint file of a new version appeared in ``_delta_log``
during the append: the other writer is idle then), so the checkpoint's own jobs are told apart
from a contended append's. Each row runs with the shipped
``s3-conditional`` preset and with the preset before issue 23 (``checksums_off_conf``: no
``N.crc``, Spark's rename-based file manager). ``python -m bench.snapshot_jobs worker ...`` is
one row in one process (its interleaver a child process: ``... interleaver ...``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.tools.deltalog.listing import list_log
from deltaguard.tools.storage import TableStore, open_table

from .worker import run_worker

#: The measured phases: (name, another writer commits before each append, idempotent write).
PHASES = (
    ("alone", False, False),
    ("interleaved", True, False),
    ("alone again", False, False),
    ("idempotent alone", False, True),
    ("idempotent interleaved", True, True),
)
INTERLEAVERS = ("spark", "python", "delta-rs")
PRESETS = ("shipped", "checksums-off")
#: Rows per line: the Spark interleaver on every line, the other writers on the newest line.
ROWS = {
    "4.2": [(w, p) for w in INTERLEAVERS for p in PRESETS],
    "4.0": [("spark", p) for p in PRESETS],
    "3.5": [("spark", p) for p in PRESETS],
}


def _session(endpoint: Endpoint, preset: str, local_dir: Path) -> Any:
    from deltaguard.localstack.spark_driver import build_test_session
    from deltaguard.logstore.preset_name import PresetName
    from deltaguard.spark_conf.request_tuning import checksums_off_conf
    from deltaguard.spark_conf.spark_lines import installed_line

    extra = checksums_off_conf(installed_line()) if preset == "checksums-off" else {}
    return build_test_session(
        endpoint.s3_storage(), PresetName.S3_CONDITIONAL, extra_conf=extra, local_dir=local_dir
    )


def _interleaver(kind: str, preset: str, table: str, endpoint_url: str, local_dir: str) -> None:
    """Appends once to ``table`` per ``go`` line on stdin, answering ``ok`` (``ready`` first)."""
    endpoint = Endpoint(url=endpoint_url)
    append: Any
    if kind == "spark":
        spark = _session(endpoint, preset, Path(local_dir))
        rows = spark.range(1).selectExpr("id", "'other' as tag")

        def append() -> None:
            rows.write.format("delta").mode("append").save(table)

    elif kind == "python":
        import pyarrow as pa

        from deltaguard.localstack.delta_append import BlindAppender
        from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
        from deltaguard.logstore.s3_location import S3Location

        s3 = endpoint.s3_client()

        def put(uri: str, data: bytes) -> None:
            loc = S3Location.parse(uri)
            s3.put_object(Bucket=loc.bucket, Key=loc.key, Body=data)

        appender = BlindAppender(S3ConditionalLogStore(s3), put, "s3://" + table[len("s3a://") :])
        batch = pa.table({"id": pa.array([1], pa.int64()), "tag": ["python"]})

        def append() -> None:
            appender.append(batch)

    else:
        import pyarrow as pa
        from deltalake import write_deltalake

        batch = pa.table({"id": pa.array([1], pa.int64()), "tag": ["delta-rs"]})
        options = endpoint.delta_rs_options()

        def append() -> None:
            write_deltalake(
                "s3://" + table[len("s3a://") :],
                batch,
                mode="append",
                storage_options=options,
            )

    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        append()
        print("ok", flush=True)


def _ask(proc: subprocess.Popen[str], expect: str) -> None:
    stdout: IO[str] | None = proc.stdout
    assert stdout is not None
    answer = stdout.readline().strip()
    if answer != expect:
        raise RuntimeError(f"interleaver answered {answer!r}, expected {expect!r}")


def _checkpoint_versions(store: TableStore) -> set[int]:
    """The versions that have checkpoint files in the table's ``_delta_log`` (complete or not),
    from the project's own log listing through boto3: no Spark job, nothing in the driver's
    Delta state."""
    listing = list_log(store)
    return {c.version for c in [*listing.checkpoints, *listing.incomplete_checkpoints]}


def _split_mean(jobs: list[int], wrote_checkpoint: list[bool]) -> dict[str, Any]:
    """The mean jobs of the appends that wrote no checkpoint, and of those that did (None where
    a phase has no such append), with how many wrote one."""
    plain = [n for n, cp in zip(jobs, wrote_checkpoint, strict=True) if not cp]
    checkpoint = [n for n, cp in zip(jobs, wrote_checkpoint, strict=True) if cp]
    return {
        "checkpoint_appends": len(checkpoint),
        "jobs_per_append_mean_without_checkpoint": sum(plain) / len(plain) if plain else None,
        "jobs_per_checkpoint_append_mean": (
            sum(checkpoint) / len(checkpoint) if checkpoint else None
        ),
    }


def _worker(
    kind: str, preset: str, appends: int, endpoint_url: str, bucket: str, workdir: Path
) -> dict[str, Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from deltaguard.localstack.spark_driver import (
        SNAPSHOT_JOB,
        driver_cpu_seconds,
        job_descriptions,
    )

    endpoint = Endpoint(url=endpoint_url)
    spark = _session(endpoint, preset, workdir / "spark")
    cpu_s, jobs = driver_cpu_seconds(spark), job_descriptions(spark)
    table = f"s3a://{bucket}/jobs-{kind}-{preset}-{uuid.uuid4().hex[:6]}"
    rows = spark.range(10).selectExpr("id", "'spark' as tag")
    rows.write.format("delta").save(table)
    store = open_table(table, client=endpoint.s3_client())
    child = subprocess.Popen(
        [
            *(sys.executable, "-m", "bench.snapshot_jobs", "interleaver", kind, preset),
            *(table, endpoint_url, str(workdir / "other")),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    phases = []
    try:
        _ask(child, "ready")
        txn_version = 0
        for name, interleaved, idempotent in PHASES:
            kinds: Counter[str] = Counter()
            cpu = 0.0
            per_append: list[int] = []
            wrote_checkpoint: list[bool] = []
            for _ in range(appends):
                if interleaved:
                    assert child.stdin is not None
                    child.stdin.write("go\n")
                    child.stdin.flush()
                    _ask(child, "ok")
                checkpoints = _checkpoint_versions(store)
                before, cpu_before = jobs(), cpu_s()
                writer = rows.write.format("delta").mode("append")
                if idempotent:
                    txn_version += 1
                    writer = writer.option("txnAppId", "bench").option("txnVersion", txn_version)
                writer.save(table)
                cpu += cpu_s() - cpu_before
                new = [d for j, d in jobs().items() if j not in before]
                kinds.update(new)
                per_append.append(len(new))
                wrote_checkpoint.append(bool(_checkpoint_versions(store) - checkpoints))
            phases.append(
                {
                    "phase": name,
                    "jobs_per_append_mean": sum(kinds.values()) / appends,
                    "snapshot_jobs_per_append_mean": kinds[SNAPSHOT_JOB] / appends,
                    "cpu_s_per_append_mean": cpu / appends,
                    "jobs_by_description_mean": {d: n / appends for d, n in kinds.most_common()},
                    **_split_mean(per_append, wrote_checkpoint),
                }
            )
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=300)
        spark.stop()
    return {
        "spark_version": spark.version,
        "interleaver": kind,
        "preset": preset,
        "appends_per_phase": appends,
        "phases": phases,
    }


def run(
    endpoint: Endpoint,
    bucket: str,
    workdir: Path,
    pythons: dict[str, str],
    appends: int = 6,
    presets: tuple[str, ...] = PRESETS,
    earlier: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every row of :data:`ROWS` for the lines in ``pythons`` (line name -> its interpreter),
    one fresh process each (their logs: ``workdir``), each row stamped with when it was measured.
    Rows of a preset not in ``presets`` are not measured: they are kept from ``earlier`` (an
    earlier result of this function) with their own stamps, where it has them (a change of the
    shipped preset re-measures its rows and keeps the unchanged baseline's)."""
    out: dict[str, Any] = {"what": __doc__.split("\n\n")[0].replace("\n", " "), "rows": []}
    kept = {
        (r["line"], r["interleaver"], r["preset"]): {
            "measured_at": (earlier or {}).get("measured_at", "?"),
            **r,
        }
        for r in (earlier or {}).get("rows", [])
    }
    for line, python in pythons.items():
        for kind, preset in ROWS[line]:
            if preset not in presets:
                if (line, kind, preset) in kept:
                    out["rows"].append(kept[(line, kind, preset)])
                continue
            with tempfile.TemporaryDirectory(prefix="deltaguard-jobs-") as tmp:
                result = run_worker(
                    "bench.snapshot_jobs",
                    ["worker", kind, preset, str(appends), endpoint.url, bucket, tmp],
                    workdir / "snapshot-jobs.log",
                    python=python,
                )
            now = datetime.now(UTC).isoformat(timespec="seconds")
            out["rows"].append({"line": line, "measured_at": now, **result})
    return out


def _split_cell(phase: dict[str, Any]) -> str:
    """``without / with (k writing one)``: the mean jobs of the appends that wrote no checkpoint
    and of those that did, or ``-`` for rows measured before the split existed."""
    if "checkpoint_appends" not in phase:
        return "-"

    def mean(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    without = mean(phase["jobs_per_append_mean_without_checkpoint"])
    with_cp = mean(phase["jobs_per_checkpoint_append_mean"])
    return f"{without} / {with_cp} ({phase['checkpoint_appends']} writing one)"


def markdown(section: dict[str, Any]) -> list[str]:
    lines = [
        "| line | other writer | preset | phase | Spark jobs per append (mean) | of which "
        "`Delta: Compute snapshot` | appends without a checkpoint / writing one: jobs (mean) | "
        "CPU s per append (mean) | jobs by description (mean) | measured |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in section["rows"]:
        for phase in row["phases"]:
            by = "; ".join(f"{d}: {n:.1f}" for d, n in phase["jobs_by_description_mean"].items())
            lines.append(
                f"| {row['line']} | {row['interleaver']} | {row['preset']} | {phase['phase']} | "
                f"{phase['jobs_per_append_mean']:.2f} | "
                f"{phase['snapshot_jobs_per_append_mean']:.2f} | {_split_cell(phase)} | "
                f"{phase['cpu_s_per_append_mean']:.2f} | {by} | "
                f"{row.get('measured_at', section.get('measured_at', '?'))} |"
            )
    return [*lines, ""]


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "worker":
        kind, preset, appends, url, bucket, work = sys.argv[2:]
        print(json.dumps(_worker(kind, preset, int(appends), url, bucket, Path(work))))
    elif len(sys.argv) == 7 and sys.argv[1] == "interleaver":
        _interleaver(*sys.argv[2:])
    else:
        sys.exit(
            "usage: python -m bench.snapshot_jobs worker KIND PRESET APPENDS ENDPOINT BUCKET DIR"
        )
