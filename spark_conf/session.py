"""One way to build a SparkSession with Delta for a storage setup and a commit path (preset).

:func:`delta_conf` renders the settings that decide where and how commits land (presets write
the same dict to properties files); :func:`delta_spark_conf` adds the locally cached jars;
:func:`build_spark_session` applies them to a builder. Every user-facing Spark setting is
written here and in :mod:`.presets`; how the test bed tunes its drivers for one small machine
(loopback, JIT, tiny tables) lives in :mod:`deltaguard.localstack.spark_driver`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deltaguard.logstore.jars import plugin_jar
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.jvm_deps import runtime_jars
from deltaguard.spark_conf.request_tuning import fewer_requests_conf
from deltaguard.spark_conf.spark_lines import SparkLine, installed_line
from deltaguard.spark_conf.storage import Storage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


SINGLE_DRIVER_STORE = "io.delta.storage.S3SingleDriverLogStore"
#: The LogStore class each preset puts on s3:// and s3a:// paths (None: Delta's own choice).
LOGSTORE_CLASSES: dict[PresetName, str | None] = {
    PresetName.S3_CONDITIONAL: "io.deltaguard.logstore.S3ConditionalLogStore",
    PresetName.S3_DYNAMODB: "io.deltaguard.logstore.S3DynamoDBLogStore",
    PresetName.S3_DYNAMODB_TRANSITION: "io.deltaguard.logstore.S3TransitionLogStore",
    PresetName.S3_SINGLE_DRIVER: SINGLE_DRIVER_STORE,
    PresetName.LOCAL: None,
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
    storage: Storage,
    logstore: PresetName,
    dynamodb: DynamoDBCommitTableSpec | None = None,
    line: SparkLine | None = None,
) -> dict[str, str]:
    """The portable part: Delta's SQL extension and catalog, how Hadoop reaches ``storage``, and
    which LogStore commits on s3:// and s3a:// paths (with its DynamoDB table for
    ``S3_DYNAMODB`` and ``S3_DYNAMODB_TRANSITION``, which require ``dynamodb``). ``S3_CONDITIONAL`` adds the settings that
    save S3 requests (:mod:`.request_tuning`) which ``line``'s Hadoop reads (default: the
    installed line). No jars, nothing machine-specific."""
    if logstore.uses_dynamodb and dynamodb is None:
        raise ValueError(
            f"the {logstore.value} LogStore needs a DynamoDB table (DynamoDBCommitTableSpec)"
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
    if logstore.uses_dynamodb and dynamodb is not None:
        conf.update(dynamodb.spark_conf())
    if logstore is PresetName.S3_CONDITIONAL:
        conf.update(fewer_requests_conf(line or installed_line()))
    return conf


def class_path(jars: list[Path]) -> str:
    """The class path ``jars`` make, as :func:`local_classpath_conf` sets it."""
    return os.pathsep.join(str(j) for j in jars)


def local_classpath_conf(jars: list[Path]) -> dict[str, str]:
    """Jars from the local cache on the driver and executor class paths (no copy per session,
    unlike ``spark.jars``, which matters for the 686 MB SDK bundle)."""
    classpath = class_path(jars)
    return {"spark.driver.extraClassPath": classpath, "spark.executor.extraClassPath": classpath}


def default_jars() -> list[Path]:
    """The jars a session of the installed pyspark line needs: the line's runtime jars and its
    deltaguard plugin jar."""
    return [*runtime_jars(), plugin_jar(installed_line().sdk)]


def delta_spark_conf(
    storage: Storage,
    logstore: PresetName = PresetName.S3_CONDITIONAL,
    *,
    jars: list[Path] | None = None,
    dynamodb: DynamoDBCommitTableSpec | None = None,
) -> dict[str, str]:
    """:func:`delta_conf` plus the locally cached jars on the class path (default: the installed
    pyspark line's runtime jars plus its deltaguard plugin jar)."""
    if jars is None:
        jars = default_jars()
    return {**delta_conf(storage, logstore, dynamodb), **local_classpath_conf(jars)}


def build_spark_session(
    storage: Storage,
    logstore: PresetName = PresetName.S3_CONDITIONAL,
    *,
    app_name: str = "deltaguard",
    master: str | None = None,
    driver_memory: str | None = None,
    extra_conf: dict[str, str] | None = None,
    dynamodb: DynamoDBCommitTableSpec | None = None,
) -> SparkSession:
    """Builds (or returns the running) SparkSession configured by :func:`delta_spark_conf`,
    then ``extra_conf`` (which wins). ``master``/``driver_memory``: set only when given.

    LogStore settings are static in Spark: they take effect only in a fresh JVM, so call this
    once per process.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    conf = delta_spark_conf(storage, logstore, dynamodb=dynamodb)
    if master is not None:
        conf["spark.master"] = master
    if driver_memory is not None:
        conf["spark.driver.memory"] = driver_memory
    conf.update(extra_conf or {})
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
