"""One Spark driver of tests/test_commit_metrics_spark.py: a session of deltaguard's
``--logstore`` (``s3-conditional``, or ``s3-dynamodb-transition`` with ``--dynamodb-table`` on
the same endpoint) with the presets' Prometheus servlet (and the UI, which serves it), Spark's
JMX sink and its CSV sink (into ``--local-dir``/metrics) on, appends ``--appends`` one-row
batches to an existing table, then reads the source ``deltaguard`` through each sink and prints
``DELTAGUARD-RESULT {json}``: the app id, every line of the source in a scrape of its own driver
UI's ``/metrics/prometheus`` over HTTP, its MBeans in the platform MBean server by object name
(:func:`~deltaguard.localstack.spark_metrics.jmx_metrics`), and the last row of each of its CSV
files after a forced report (:func:`~deltaguard.localstack.spark_metrics.csv_report`).

Run as ``python tests/commit_metrics_driver.py --table s3a://... --endpoint URL --writer W
--appends N --local-dir DIR [--logstore PRESET --dynamodb-table NAME]``.
"""

from __future__ import annotations

import argparse
import json
import urllib.request
from pathlib import Path

from deltaguard.localstack.append_job import SCHEMA_DDL
from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.multi_driver import RESULT_PREFIX
from deltaguard.localstack.spark_driver import build_test_session
from deltaguard.localstack.spark_metrics import (
    JMX_SINK_CONF,
    csv_report,
    csv_sink_conf,
    jmx_metrics,
)
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.presets import PROMETHEUS_SERVLET_CONF
from deltaguard.spark_conf.session import DynamoDBCommitTableSpec


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", required=True)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--writer", type=int, required=True)
    parser.add_argument("--appends", type=int, required=True)
    parser.add_argument("--local-dir", type=Path, required=True)
    parser.add_argument("--logstore", type=PresetName, default=PresetName.S3_CONDITIONAL)
    parser.add_argument("--dynamodb-table")
    args = parser.parse_args()
    endpoint = Endpoint(url=args.endpoint)
    dynamodb = None
    if args.logstore.uses_dynamodb:
        dynamodb = DynamoDBCommitTableSpec(
            table_name=args.dynamodb_table, region=endpoint.region, endpoint=endpoint.url
        )
    csv_dir = args.local_dir / "metrics"
    csv_dir.mkdir(parents=True, exist_ok=True)
    sinks = {**PROMETHEUS_SERVLET_CONF, **JMX_SINK_CONF, **csv_sink_conf(csv_dir)}
    spark = build_test_session(
        endpoint.s3_storage(),
        args.logstore,
        app_name=f"metrics-w{args.writer}",
        local_dir=args.local_dir,
        dynamodb=dynamodb,
        extra_conf={**sinks, "spark.ui.enabled": "true", "spark.ui.port": "0"},
    )
    for batch in range(args.appends):
        rows = [(args.writer, batch, 0, "x")]
        spark.createDataFrame(rows, SCHEMA_DDL).write.format("delta").mode("append").save(
            args.table
        )
    url = f"{spark.sparkContext.uiWebUrl}/metrics/prometheus"
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode("utf-8")
    lines = [line for line in text.splitlines() if "_driver_deltaguard_" in line]
    result = {
        "app_id": spark.sparkContext.applicationId,
        "url": url,
        "lines": lines,
        "jmx": jmx_metrics(spark),
        "csv": csv_report(spark, csv_dir),
    }
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
