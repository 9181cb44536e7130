"""The SparkSession the CLI runs the Spark engine in: the project's presets, nothing new.

Under ``spark-submit`` (or any process with a running session) the running session is used as
it is: its preset and cluster settings came with the submit (``--properties-file
spark_conf/presets/<name>.properties``). Otherwise a local session is built with
:func:`deltaguard.spark_conf.session.build_spark_session`: the ``local`` preset for a table on
local disk, ``s3-conditional`` with the command's endpoint, region and path-style options for
``s3://``/``s3a://`` tables (credentials: S3A's and boto3's default chains). Either way the
executors list and delete with the S3 settings of the session's Hadoop configuration
(:mod:`.hadoop_s3`).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from deltaguard.logstore.preset_name import PresetName
from deltaguard.logstore.s3_location import S3_SCHEMES
from deltaguard.spark_conf.session import build_spark_session
from deltaguard.spark_conf.storage import LocalStorage, S3Storage
from deltaguard.tools.storage import S3Options

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def session_running() -> bool:
    """True if this process already has a session, or runs under ``spark-submit``: then
    :func:`engine_session` uses it as it is and the command's S3 options configure nothing."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return True
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() is not None


def engine_session(
    table: str, s3: S3Options, *, master: str | None = None, driver_memory: str | None = None
) -> SparkSession:
    """The running session, or a new one configured for ``table`` (see module docstring)."""
    from pyspark.sql import SparkSession

    running = SparkSession.getActiveSession()
    if running is not None:
        return running
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # under spark-submit: its settings, untouched
        return SparkSession.builder.getOrCreate()
    scheme = table.partition("://")[0] if "://" in table else ""
    storage: LocalStorage | S3Storage = LocalStorage()
    preset = PresetName.LOCAL
    if scheme in S3_SCHEMES:
        storage = S3Storage(
            endpoint=s3.endpoint, region=s3.region or "us-east-1", path_style=s3.path_style
        )
        preset = PresetName.S3_CONDITIONAL
    master = master or "local[*]"
    if master.startswith("local"):
        # Python workers of a local master run this interpreter (deltaguard is installed in
        # it); pyspark reads the worker interpreter from the environment, not from the conf.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cores = os.cpu_count() or 2
    # A local session's joins and groupings: a few partitions per core, not Spark's 200.
    extra = {"spark.sql.shuffle.partitions": str(2 * cores)} if master.startswith("local") else {}
    # The command's own output is the report: no progress bars or INFO lines on stderr.
    extra |= {"spark.ui.showConsoleProgress": "false", "spark.log.level": "ERROR"}
    return build_spark_session(
        storage,
        preset,
        app_name="deltaguard-orphans",
        master=master,
        driver_memory=driver_memory,
        extra_conf=extra,
    )
