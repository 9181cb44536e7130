"""Spark jobs that fail half way and leave files behind, and Spark's own VACUUM as reference.

Delta writes data files under their final names and its abort hooks do nothing, so a job that
fails (an exception in one task) or dies (the driver killed) leaves the files its finished
tasks wrote. Subcommands of ``python -m deltaguard.localstack.failed_job``:

``fixture OUTDIR``
    writes ``OUTDIR/events`` with a history (partitioned appends, an overwrite, deletion
    vectors, change data), then a job that fails half way, then a driver SIGKILLed mid-write,
    then runs ``VACUUM ... RETAIN 0 HOURS DRY RUN`` and writes ``OUTDIR/expected.json``:
    ``failed_job_files``, ``killed_job_files`` (relative paths they left) and
    ``vacuum_dry_run`` (absolute paths Spark reported).
``fail-half-way TABLE [--endpoint URL]``
    one successful append, then one whose last task raises: the earlier tasks' files stay
    (used by ``make demo``).
``slow-append TABLE``
    an append slow enough to be killed mid-write.
``vacuum TABLE [--endpoint URL] [--runs N]``
    times ``VACUUM ... RETAIN 0 HOURS DRY RUN`` ``N`` times in one session and prints JSON
    ``{"seconds": [...], "paths": [...]}`` (the last run's paths, sorted). With
    ``--endpoint`` the session uses deltaguard's conditional-write LogStore, through which
    VACUUM lists the table (used by the benchmark and the S3 test).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.multi_driver import driver_env, kill_when, start_job
from deltaguard.localstack.spark_driver import build_test_session
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.storage import LocalStorage, S3Storage

#: VACUUM below the table's retention needs this check off (Spark refuses otherwise).
#: A local driver lists with a few tasks, not Spark's default of up to 10,000.
VACUUM_CONF = {
    "spark.databricks.delta.retentionDurationCheck.enabled": "false",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
}
FAILING_PARTITIONS = 6


class DeliberateFailure(RuntimeError):
    """Raised inside the last task of :func:`fail_half_way`."""


def session(endpoint: str | None, local_dir: Path | None = None, master: str = "local[1]") -> Any:
    storage: LocalStorage | S3Storage = (
        Endpoint(url=endpoint).s3_storage() if endpoint else LocalStorage()
    )
    return build_test_session(
        storage,
        PresetName.S3_CONDITIONAL if endpoint else PresetName.LOCAL,
        app_name="deltaguard-failed-job",
        master=master,
        local_dir=local_dir,
        extra_conf=VACUUM_CONF,
    )


def write_history(spark: Any, path: str) -> None:
    """Appends, an overwrite of one partition, a DELETE with deletion vectors and an UPDATE
    with change data feed: live files, tombstones, DV files and ``_change_data`` files."""
    df = spark.range(0, 40, 1, 2).selectExpr("id", "CAST(id % 2 AS STRING) AS p")
    df.write.format("delta").partitionBy("p").save(path)
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', "
        "'delta.enableChangeDataFeed' = 'true')"
    )
    spark.range(40, 60, 1, 2).selectExpr("id", "CAST(id % 2 AS STRING) AS p").write.format(
        "delta"
    ).mode("append").save(path)
    spark.range(100, 110, 1, 1).selectExpr("id", "'1' AS p").write.format("delta").mode(
        "overwrite"
    ).option("replaceWhere", "p = '1'").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 4")
    spark.sql(f"UPDATE delta.`{path}` SET id = id + 1000 WHERE id = 6")


def fail_half_way(spark: Any, path: str) -> None:
    """Appends in :data:`FAILING_PARTITIONS` tasks, run one after the other; the last raises
    :class:`DeliberateFailure`, so the job fails after the others wrote their files. Returns
    normally once Spark reported the failure."""
    from pyspark.sql.functions import udf

    last = FAILING_PARTITIONS * 10 - 1

    @udf("long")
    def explode_on_last(i: int) -> int:
        if i == last:
            raise DeliberateFailure("the last task of this job fails on purpose")
        return i

    df = spark.range(0, FAILING_PARTITIONS * 10, 1, FAILING_PARTITIONS).selectExpr(
        "id", "CAST(id % 2 AS STRING) AS p"
    )
    try:
        df.withColumn("id", explode_on_last("id")).write.format("delta").mode("append").save(path)
    except Exception as exc:
        if "DeliberateFailure" not in str(exc):
            raise
        return
    raise RuntimeError("the job meant to fail half way succeeded")


def slow_append(spark: Any, path: str) -> None:
    """An append of 32 tasks that each take about a second: long enough to be killed."""
    from pyspark.sql.functions import udf

    @udf("long")
    def slow(i: int) -> int:
        time.sleep(0.25)
        return i

    df = spark.range(0, 128, 1, 32).selectExpr("id", "CAST(id % 2 AS STRING) AS p")
    df.withColumn("id", slow("id")).write.format("delta").mode("append").save(path)


def vacuum_dry_run(spark: Any, path: str) -> list[str]:
    """The paths Spark's ``VACUUM ... RETAIN 0 HOURS DRY RUN`` reports (files and empty
    directories), as Spark prints them (``file:`` dropped)."""
    rows = spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS DRY RUN").collect()
    return [r.path.removeprefix("file://").removeprefix("file:") for r in rows]


def data_files(table: Path) -> set[str]:
    """Visible files below a local table (no hidden component), relative."""
    out = set()
    for dirpath, dirs, files in os.walk(table):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_")) or d.startswith("_change_data")]
        rel = os.path.relpath(dirpath, table)
        for name in files:
            if not name.startswith((".", "_")):
                out.add(name if rel == "." else f"{rel}/{name}")
    return out


def fixture(out: Path) -> dict[str, Any]:
    """See the module docstring (``fixture``)."""
    table = out / "events"
    spark = session(None, out / "_spark")
    try:
        write_history(spark, str(table))
        before = data_files(table)
        fail_half_way(spark, str(table))
        failed = data_files(table) - before
        before = data_files(table)
        proc = start_job(
            ["slow-append", str(table)],
            out / "slow-append.log",
            module="deltaguard.localstack.failed_job",
        )
        kill_when(proc, lambda: len(data_files(table) - before) >= 3, out / "slow-append.log", 600)
        killed = data_files(table) - before
        expected = {
            "failed_job_files": sorted(failed),
            "killed_job_files": sorted(killed),
            "vacuum_dry_run": sorted(vacuum_dry_run(spark, str(table))),
        }
    finally:
        spark.stop()
    (out / "expected.json").write_text(json.dumps(expected, indent=1))
    return expected


def build_fixture(out: Path, timeout_s: float = 900) -> dict[str, Any]:
    """Runs ``fixture`` in a child process (no JVM stays in the caller). Raises RuntimeError
    with the child's output tail if it fails."""
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "deltaguard.localstack.failed_job", "fixture", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        env=driver_env(),
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"the failed-job fixture failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
        )
    return json.loads((out / "expected.json").read_text())  # type: ignore[no-any-return]


def run_vacuum_dry_run(
    table: str,
    log: Path,
    endpoint: Endpoint | None = None,
    runs: int = 1,
    master: str = "local[2]",
    timeout_s: float = 3600,
) -> dict[str, Any]:
    """Runs the ``vacuum`` subcommand in a child process (its stderr goes to ``log``) and
    returns its JSON: ``{"seconds": [...], "paths": [...]}``. With ``endpoint`` the child gets
    its credentials and reads ``table`` (an ``s3a://`` URI) through deltaguard's conditional
    LogStore. Raises RuntimeError naming ``log`` if Spark fails."""
    args = [sys.executable, "-m", "deltaguard.localstack.failed_job", "vacuum", table]
    args += ["--runs", str(runs), "--master", master]
    if endpoint is not None:
        args += ["--endpoint", endpoint.url]
    with log.open("w") as err:
        proc = subprocess.run(
            args,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=driver_env(endpoint),
            timeout=timeout_s,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"Spark VACUUM DRY RUN failed (exit {proc.returncode}); see {log}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaguard.localstack.failed_job")
    parser.add_argument("command", choices=["fixture", "fail-half-way", "slow-append", "vacuum"])
    parser.add_argument("target")
    parser.add_argument("--endpoint")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--master", default="local[1]")
    args = parser.parse_args(argv)
    if args.command == "fixture":
        fixture(Path(args.target).resolve())
        return 0
    spark = session(args.endpoint, master=args.master)
    try:
        if args.command == "fail-half-way":
            first = spark.range(0, 10, 1, 1).selectExpr("id", "CAST(id % 2 AS STRING) AS p")
            first.write.format("delta").partitionBy("p").mode("append").save(args.target)
            fail_half_way(spark, args.target)
        elif args.command == "slow-append":
            slow_append(spark, args.target)
        else:
            seconds, paths = [], []
            for _ in range(args.runs):
                started = time.perf_counter()
                paths = vacuum_dry_run(spark, args.target)
                seconds.append(time.perf_counter() - started)
            print(json.dumps({"seconds": seconds, "paths": sorted(paths)}))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
