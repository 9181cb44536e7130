"""How the test bed runs Spark drivers on one small shared machine: loopback only, no UI, a
C1-only JIT and the serial GC, tiny shuffles and snapshot partitions.

These are not settings a user needs (their commit path is :mod:`deltaguard.spark_conf`); they
make the demo, the tests and the benchmarks start fast and stay off the network (the
executors of a ``local-cluster`` master: the serial GC and C2 for hot code only, see
:data:`EXECUTOR_JIT_GC_OPTIONS`, and the drivers' class archive, see
:func:`build_test_session`).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from deltaguard.localstack.class_archive import archive_options
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.session import (
    DynamoDBCommitTableSpec,
    build_spark_session,
    class_path,
    default_jars,
)
from deltaguard.spark_conf.storage import Storage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def local_driver_conf(local_dir: Path | None = None) -> dict[str, str]:
    """Loopback only, no UI, small shuffles, scratch space where asked."""
    conf = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
    }
    if local_dir is not None:
        conf["spark.local.dir"] = str(local_dir)
        conf["spark.sql.warehouse.dir"] = str(local_dir / "warehouse")
    return conf


def master_conf(master: str, driver_memory: str = "1g") -> dict[str, str]:
    """The master, the driver memory, and for a ``local[...]`` master the settings that suit
    short-lived drivers on a small machine."""
    conf = {"spark.master": master, "spark.driver.memory": driver_memory}
    if master.startswith("local"):
        # A local driver has one or two cores: Delta's default of 50 partitions for snapshot
        # state reconstruction costs seconds per commit there, and the progress bar is noise.
        conf["spark.databricks.delta.snapshotPartitions"] = "2"
        conf["spark.ui.showConsoleProgress"] = "false"
        # Short-lived local drivers, often several per machine: C1-only JIT and the serial GC
        # start faster and leave the cores to the work instead of to compiler and GC threads.
        conf["spark.driver.extraJavaOptions"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
        if master.startswith("local-cluster"):
            conf["spark.executor.extraJavaOptions"] = " ".join(EXECUTOR_JIT_GC_OPTIONS)
    return conf


#: The JVM options of a ``local-cluster`` master's executors (JVMs of their own on the same
#: cores as the driver), besides the class archive (:func:`build_test_session`). Measured on the
#: Spark orphans scan alone, 2026-11-25, one fresh process per run:
#:
#: * the serial GC: G1's threads took CPU from the tasks (26.3 and 23.8 -> 22.2 and 22.0 s at
#:   200k files, 42.0 -> 37.7 s at 1M);
#: * C2 only for code that stays hot (its thresholds 10x the defaults): a fresh executor spent
#:   most of a 200k-file scan compiling (LogCompilation: 20.9 s of compile-thread time, 17.5 s
#:   of it C2, against a 7-9 s scan once warm), and C2 compiled class loading, task
#:   deserialization and Janino; 21.7 -> 20.0 s at 200k, 37.7 -> 34.2 s at 1M. Not C1 alone:
#:   its code is slower in long tasks (17.5-18.0 s at 200k but 47.4 s at 1M).
EXECUTOR_JIT_GC_OPTIONS = (
    "-XX:+UseSerialGC",
    "-XX:Tier4InvocationThreshold=50000",
    "-XX:Tier4MinInvocationThreshold=6000",
    "-XX:Tier4CompileThreshold=150000",
    "-XX:Tier4BackEdgeThreshold=400000",
)


def small_tables_conf() -> dict[str, str]:
    """For test drivers that write many tiny tables on a small shared machine: one task per
    snapshot state reconstruction (Delta runs one for every write that carries ``txnAppId``) and
    per small input scan, and warnings only in the driver log."""
    return {
        "spark.databricks.delta.snapshotPartitions": "1",
        "spark.sql.files.minPartitionNum": "1",
        "spark.log.level": "WARN",
    }


def build_test_session(
    storage: Storage,
    logstore: PresetName = PresetName.S3_CONDITIONAL,
    *,
    app_name: str = "deltaguard",
    master: str = "local[1]",
    driver_memory: str = "1g",
    extra_conf: dict[str, str] | None = None,
    local_dir: Path | None = None,
    dynamodb: DynamoDBCommitTableSpec | None = None,
) -> SparkSession:
    """:func:`deltaguard.spark_conf.session.build_spark_session` with the test bed's driver
    tuning (:func:`local_driver_conf`, :func:`master_conf`, and for a local master the class
    archive of :mod:`deltaguard.localstack.class_archive`); ``extra_conf`` wins."""
    tuning = {**local_driver_conf(local_dir), **master_conf(master, driver_memory)}
    if master.startswith("local"):
        options = archive_options(class_path(default_jars()))
        if options:
            # a local-cluster master's executors too: their class path starts with the
            # driver's extra class path, so they map the same archive (17.5 s against 20.0 s
            # for the Spark orphans scan at 200k files, 2026-11-25)
            for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
                if key in tuning:
                    tuning[key] = f"{tuning[key]} {options}"
    return build_spark_session(
        storage,
        logstore,
        app_name=app_name,
        extra_conf={**tuning, **(extra_conf or {})},
        dynamodb=dynamodb,
    )


def driver_cpu_seconds(spark: SparkSession) -> Callable[[], float]:
    """A clock of the CPU seconds (user + system) this Python process and ``spark``'s driver
    JVM have used so far (Linux /proc for the JVM): what benchmarks charge to one append."""
    jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]
    ticks = os.sysconf("SC_CLK_TCK")
    stat = Path(f"/proc/{jvm_pid}/stat")

    def cpu_s() -> float:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks + time.process_time()

    return cpu_s


#: Delta's name for a job that rebuilds the table state (``SnapshotState.computedState``).
SNAPSHOT_JOB = "Delta: Compute snapshot for version: N"


def job_descriptions(spark: SparkSession) -> Callable[[], dict[int, str]]:
    """A reader of the Spark jobs ``spark``'s driver has run so far, by job id, each named by
    its description with digits as ``N`` (Delta's job descriptions name where Delta started
    them: :data:`SNAPSHOT_JOB` is a state reconstruction). Benchmarks count the jobs an append
    adds, by trigger."""
    status = spark.sparkContext._jsc.sc().statusStore()

    def jobs() -> dict[int, str]:
        listed = status.jobsList(None)
        out: dict[int, str] = {}
        for i in range(listed.size()):
            job = listed.apply(i)
            text = job.description()
            name = str(text.get() if text.isDefined() else job.name())
            out[int(job.jobId())] = re.sub(r"\d+", "N", name)
        return out

    return jobs
