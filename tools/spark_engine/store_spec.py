"""How executors reach the table: a picklable description, opened once per Python worker."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from deltaguard.tools.spark_engine.hadoop_s3 import Credentials, session_s3
from deltaguard.tools.storage import S3Options, TableStore, open_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The data-source option that makes ``spark.read`` take each path literally, as Hadoop's
#: ``Path(String)`` does, instead of as a glob: without it a table at ``s3://b/q?x=1`` (or
#: with ``*``, ``[``, ``{`` in its key) would read the log files of ``s3://b/qAx=1`` too.
LITERAL_PATHS = {"__globPaths__": "false"}


@dataclass(frozen=True)
class StoreSpec:
    """The table root, the S3 options and the credentials: what an executor needs to open
    the same :class:`~deltaguard.tools.storage.TableStore` as the driver. Built from
    the session with :meth:`of_session`; ``credentials`` None means boto3's default chain in
    the executor's environment. ``note``: what the report should say about the credentials."""

    uri: str
    s3: S3Options = field(default_factory=S3Options)
    credentials: Credentials | None = None
    note: str | None = field(default=None, compare=False)

    def open(self) -> TableStore:
        return _open(self)

    @classmethod
    def of_session(cls, spark: SparkSession, uri: str, cli: S3Options) -> StoreSpec:
        """The spec whose S3 client matches the session's Hadoop configuration (one I/O stack:
        :mod:`.hadoop_s3`). Raises
        :class:`~deltaguard.tools.spark_engine.hadoop_s3.SessionSettingsConflict` if the
        command's options ``cli`` disagree with it."""
        settings = session_s3(spark, uri, cli)
        if settings is None:
            return cls(uri, cli)
        return cls(uri, settings.s3, settings.credentials, settings.note)


@functools.lru_cache(maxsize=8)
def _open(spec: StoreSpec) -> TableStore:
    if spec.credentials is None:
        return open_table(spec.uri, spec.s3)
    from deltaguard.logstore.clients import ClientPolicy, s3_client

    creds = spec.credentials
    client = s3_client(
        spec.s3.endpoint,
        spec.s3.region,
        creds.access_key,
        creds.secret_key,
        creds.session_token,
        path_style=spec.s3.path_style,
        policy=ClientPolicy.READ,
    )
    return open_table(spec.uri, spec.s3, client=client)
