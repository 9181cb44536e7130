"""Does Delta on Spark accept the ``N.crc`` that deltaguard's Python committer writes? One
driver process of any Spark line (run with that line's interpreter, ``python -m
deltaguard.localstack.checksum_check TABLE ENDPOINT APPENDS``; prints a JSON report):

1. a Spark driver with the ``s3-conditional`` preset and
   ``spark.databricks.delta.checksum.mismatch.fatal=true`` creates ``TABLE`` and appends once
   (Spark writes ``0.crc`` and ``1.crc``);
2. deltaguard's Python committer (:class:`~deltaguard.localstack.delta_append.BlindAppender`)
   appends ``APPENDS`` times through the Python conditional store, each leaving its checksum;
3. the driver loads the newest snapshot and validates its checksum against a full state
   reconstruction (``Snapshot.validateChecksum``: with the fatal setting, a mismatch raises);
4. the driver appends once more; the report lists that append's Spark jobs by description,
   so a caller can see whether Delta rebuilt the state (``Delta: Compute snapshot``);
5. a fresh load validates that append's checksum, which the conditional store wrote right
   after the commit (derived from the Python committer's; ``CommitChecksums.java``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

FATAL = "spark.databricks.delta.checksum.mismatch.fatal"


def run(table: str, endpoint_url: str, appends: int, local_dir: Path) -> dict[str, Any]:
    """Steps 1-4 of the module docstring; ``table`` is an ``s3a://`` URI."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyarrow as pa

    from deltaguard.localstack.delta_append import BlindAppender, checksum_uri
    from deltaguard.localstack.endpoints import Endpoint
    from deltaguard.localstack.spark_driver import build_test_session, job_descriptions
    from deltaguard.logstore.preset_name import PresetName
    from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
    from deltaguard.logstore.s3_location import S3Location

    endpoint = Endpoint(url=endpoint_url)
    spark = build_test_session(
        endpoint.s3_storage(),
        PresetName.S3_CONDITIONAL,
        extra_conf={FATAL: "true"},
        local_dir=local_dir,
    )
    rows = spark.range(10).selectExpr("id", "'spark' as tag")
    rows.write.format("delta").save(table)
    rows.write.format("delta").mode("append").save(table)

    s3 = endpoint.s3_client()

    def put(uri: str, data: bytes) -> None:
        loc = S3Location.parse(uri)
        s3.put_object(Bucket=loc.bucket, Key=loc.key, Body=data)

    py_table = "s3://" + table.removeprefix("s3a://")
    appender = BlindAppender(S3ConditionalLogStore(s3), put, py_table)
    batch = pa.table({"id": pa.array([1, 2], pa.int64()), "tag": ["python", "python"]})
    python_versions = [appender.append(batch) for _ in range(appends)]
    python_checksums = []
    for version in python_versions:
        loc = S3Location.parse(checksum_uri(py_table, version))
        listed = s3.list_objects_v2(Bucket=loc.bucket, Prefix=loc.key).get("KeyCount", 0)
        python_checksums.append(version if listed else None)

    count = spark.read.format("delta").load(table).count()
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "a classic (py4j) Spark session has a JVM gateway"
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, table)
    snapshot = log.unsafeVolatileSnapshot()
    has_checksum = bool(snapshot.checksumOpt().isDefined())
    valid = bool(snapshot.validateChecksum(getattr(snapshot, "validateChecksum$default$1")()))

    jobs = job_descriptions(spark)
    before = jobs()
    rows.write.format("delta").mode("append").save(table)
    after = jobs()
    # That append's checksum is the conditional store's (derived from the Python committer's):
    # a fresh load reads it back and validates it the same way.
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    last = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
        spark._jsparkSession, table
    ).unsafeVolatileSnapshot()
    last_valid = bool(last.validateChecksum(getattr(last, "validateChecksum$default$1")()))
    last_has_checksum = bool(last.checksumOpt().isDefined())
    last_version = int(last.version())
    spark.stop()
    return {
        "spark_version": spark.version,
        "python_versions": python_versions,
        "python_checksums": python_checksums,
        "rows": count,
        "snapshot_version": int(snapshot.version()),
        "snapshot_has_checksum": has_checksum,
        "checksum_valid": valid,
        "next_append_jobs": [d for j, d in sorted(after.items()) if j not in before],
        "last_version": last_version,
        "last_has_checksum": last_has_checksum,
        "last_checksum_valid": last_valid,
    }


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="deltaguard-crc-") as tmp:
        report = run(sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(tmp))
    print(json.dumps(report))
