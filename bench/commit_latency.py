"""Median latency of one commit through deltaguard's conditional LogStore against a plain
PutObject of the same bytes, on the same LocalStack, interleaved, in the same run.

JVM: ``io.deltaguard.logstore.tools.CommitLatency`` (the LogStore class Spark uses, with S3A's
own client). Python: ``S3ConditionalLogStore.write`` against ``put_object`` on one client.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pyspark

from deltaguard.logstore.jars import plugin_jar
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.spark_conf.jvm_deps import runtime_jars
from deltaguard.testbed.endpoints import Endpoint

from .stats import summarize

BODY_BYTES = 1024


def _jvm_run(endpoint: Endpoint, bucket: str, commits: int) -> dict[str, float]:
    classpath = ":".join(
        [
            str(Path(pyspark.__file__).parent / "jars" / "*"),
            *(str(j) for j in runtime_jars()),
            str(plugin_jar()),
        ]
    )
    hadoop = {
        k.removeprefix("spark.hadoop."): v for k, v in endpoint.s3_storage().hadoop_conf().items()
    }
    props = [f"-D{k}={v}" for k, v in hadoop.items()]
    table = f"s3a://{bucket}/latency-jvm-{uuid.uuid4().hex[:8]}"
    out = subprocess.run(
        [
            "java",
            *props,
            "-cp",
            classpath,
            "io.deltaguard.logstore.tools.CommitLatency",
            table,
            str(commits),
            str(BODY_BYTES),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "plain_put_ms": statistics.median(result["plain_put_us"]) / 1000,
        "logstore_ms": statistics.median(result["logstore_us"]) / 1000,
    }


def _python_run(endpoint: Endpoint, bucket: str, commits: int) -> dict[str, float]:
    s3 = endpoint.s3_client()
    store = S3ConditionalLogStore(s3)
    table = f"s3://{bucket}/latency-py-{uuid.uuid4().hex[:8]}"
    pad = "x" * (BODY_BYTES - 120)

    def lines() -> list[str]:
        return [
            json.dumps({"commitInfo": {"operation": "WRITE", "txnId": str(uuid.uuid4())}}),
            json.dumps({"add": {"path": f"part-{uuid.uuid4()}", "stats": pad}}),
        ]

    for i in range(20):  # warm-up, including the one-off conditional-write probe
        store.write(f"{table}/_delta_log/{1_000_000 + i:020d}.json", lines())
    plain, ours = [], []
    for i in range(commits):
        actions = lines()
        body = "".join(a + "\n" for a in actions).encode()
        t0 = time.perf_counter()
        store.write(f"{table}/_delta_log/{i:020d}.json", actions)
        t1 = time.perf_counter()
        s3.put_object(
            Bucket=bucket,
            Key=f"{table.split('/', 3)[3]}/_plain_put/{i}",
            Body=body,
            ContentType="application/json",
        )
        t2 = time.perf_counter()
        ours.append((t1 - t0) * 1000)
        plain.append((t2 - t1) * 1000)
    return {"plain_put_ms": statistics.median(plain), "logstore_ms": statistics.median(ours)}


def run(endpoint: Endpoint, bucket: str, runs: int, commits: int) -> dict[str, Any]:
    jvm = [_jvm_run(endpoint, bucket, commits) for _ in range(runs)]
    python = [_python_run(endpoint, bucket, commits) for _ in range(runs)]
    return {
        "what": f"median latency of one {BODY_BYTES}-byte commit vs plain PutObject, {commits} "
        f"interleaved pairs per run",
        "jvm": summarize(jvm, "plain_put_ms", "logstore_ms"),
        "python": summarize(python, "plain_put_ms", "logstore_ms"),
    }
