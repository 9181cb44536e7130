"""One way to build a SparkSession with Delta for a storage setup and a LogStore.

:func:`delta_spark_conf` renders every Spark setting as a plain dict (presets write the same
dict to properties files); :func:`build_spark_session` applies it to a builder. The demo, the
tests and the benchmarks all go through here: there is no second copy of Spark configuration.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from deltaguard.logstore.jars import plugin_jar
from deltaguard.spark_conf.jvm_deps import runtime_jars
from deltaguard.spark_conf.spark_lines import installed_line
from deltaguard.spark_conf.storage import Storage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class LogStoreChoice(StrEnum):
    """Which LogStore commits ``_delta_log/N.json`` on s3:// and s3a:// paths."""

    #: deltaguard's conditional-write store: safe for many drivers.
    S3_CONDITIONAL = "s3-conditional"
    #: deltaguard's DynamoDB store (Delta's S3DynamoDBLogStore protocol): safe for many drivers
    #: on stores without working conditional writes.
    S3_DYNAMODB = "s3-dynamodb"
    #: Delta's default for S3 (``S3SingleDriverLogStore``): safe for ONE driver only.
    DELTA_DEFAULT = "delta-default"


LOGSTORE_CLASSES: dict[LogStoreChoice, str | None] = {
    LogStoreChoice.S3_CONDITIONAL: "io.deltaguard.logstore.S3ConditionalLogStore",
    LogStoreChoice.S3_DYNAMODB: "io.deltaguard.logstore.S3DynamoDBLogStore",
    LogStoreChoice.DELTA_DEFAULT: None,
}


@dataclass(frozen=True)
class DynamoDBCommitTableSpec:
    """Where the DynamoDB LogStore keeps its entries. Every writer of a table must use the same
    table and region. ``endpoint`` overrides the AWS endpoint (LocalStack, VPC endpoints)."""

    table_name: str = "delta_log"
    region: str = "us-east-1"
    endpoint: str | None = None
    ttl_seconds: int = 86400
    credentials_provider: str | None = None

    def spark_conf(self) -> dict[str, str]:
        prefix = "spark.io.delta.storage.S3DynamoDBLogStore."
        conf = {
            prefix + "ddb.tableName": self.table_name,
            prefix + "ddb.region": self.region,
            prefix + "ddb.ttl": str(self.ttl_seconds),
        }
        if self.endpoint:
            conf[prefix + "ddb.endpoint"] = self.endpoint
        if self.credentials_provider:
            conf[prefix + "credentials.provider"] = self.credentials_provider
        return conf


def delta_conf(
    storage: Storage, logstore: LogStoreChoice, dynamodb: DynamoDBCommitTableSpec | None = None
) -> dict[str, str]:
    """The portable part: Delta's SQL extension and catalog, how Hadoop reaches ``storage``, and
    which LogStore commits on s3:// and s3a:// paths (with its DynamoDB table for
    ``S3_DYNAMODB``, which requires ``dynamodb``). No jars, nothing machine-specific."""
    if logstore is LogStoreChoice.S3_DYNAMODB and dynamodb is None:
        raise ValueError(
            "the s3-dynamodb LogStore needs a DynamoDB table (DynamoDBCommitTableSpec)"
        )
    conf = {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        **storage.hadoop_conf(),
    }
    store_class = LOGSTORE_CLASSES[logstore]
    if store_class is not None:
        for scheme in ("s3", "s3a"):
            conf[f"spark.delta.logStore.{scheme}.impl"] = store_class
    if logstore is LogStoreChoice.S3_DYNAMODB and dynamodb is not None:
        conf.update(dynamodb.spark_conf())
    return conf


def local_classpath_conf(jars: list[Path]) -> dict[str, str]:
    """Jars from the local cache on the driver and executor class paths (no copy per session,
    unlike ``spark.jars``, which matters for the 686 MB SDK bundle)."""
    classpath = os.pathsep.join(str(j) for j in jars)
    return {"spark.driver.extraClassPath": classpath, "spark.executor.extraClassPath": classpath}


def local_driver_conf(local_dir: Path | None = None) -> dict[str, str]:
    """Settings for drivers run by the demo, the tests and the benchmarks on this machine:
    loopback only, no UI, small shuffles, scratch space where asked."""
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


def delta_spark_conf(
    storage: Storage,
    logstore: LogStoreChoice = LogStoreChoice.S3_CONDITIONAL,
    *,
    jars: list[Path] | None = None,
    local_dir: Path | None = None,
    dynamodb: DynamoDBCommitTableSpec | None = None,
) -> dict[str, str]:
    """All Spark settings for a driver of the test bed: :func:`delta_conf`, the cached jars
    (default: the installed pyspark line's runtime jars plus its deltaguard plugin jar) and
    :func:`local_driver_conf`."""
    if jars is None:
        jars = [*runtime_jars(), plugin_jar(installed_line().sdk)]
    return {
        **delta_conf(storage, logstore, dynamodb),
        **local_classpath_conf(jars),
        **local_driver_conf(local_dir),
    }


def master_conf(master: str, driver_memory: str = "1g") -> dict[str, str]:
    """The master, the driver memory, and for a ``local[...]`` master the settings that suit
    short-lived drivers on a small machine (used by :func:`build_spark_session` and by
    properties files for spark-submit)."""
    conf = {"spark.master": master, "spark.driver.memory": driver_memory}
    if master.startswith("local"):
        # A local driver has one or two cores: Delta's default of 50 partitions for snapshot
        # state reconstruction costs seconds per commit there, and the progress bar is noise.
        conf["spark.databricks.delta.snapshotPartitions"] = "2"
        conf["spark.ui.showConsoleProgress"] = "false"
        # Short-lived local drivers, often several per machine: C1-only JIT and the serial GC
        # start faster and leave the cores to the work instead of to compiler and GC threads.
        conf["spark.driver.extraJavaOptions"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    return conf


def small_tables_conf() -> dict[str, str]:
    """For test drivers that write many tiny tables on a small shared machine: one task per
    snapshot state reconstruction (Delta runs one for every write that carries ``txnAppId``) and
    per small input scan, and warnings only in the driver log."""
    return {
        "spark.databricks.delta.snapshotPartitions": "1",
        "spark.sql.files.minPartitionNum": "1",
        "spark.log.level": "WARN",
    }


def build_spark_session(
    storage: Storage,
    logstore: LogStoreChoice = LogStoreChoice.S3_CONDITIONAL,
    *,
    app_name: str = "deltaguard",
    master: str = "local[1]",
    driver_memory: str = "1g",
    extra_conf: dict[str, str] | None = None,
    local_dir: Path | None = None,
    dynamodb: DynamoDBCommitTableSpec | None = None,
) -> SparkSession:
    """Builds (or returns the running) SparkSession configured by :func:`delta_spark_conf`.

    LogStore settings are static in Spark: they take effect only in a fresh JVM, so call this
    once per process.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).master(master)
    conf = delta_spark_conf(storage, logstore, local_dir=local_dir, dynamodb=dynamodb)
    conf.update(master_conf(master, driver_memory))
    conf.update(extra_conf or {})
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
