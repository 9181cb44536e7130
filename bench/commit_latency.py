"""Median latency of one commit through deltaguard's conditional LogStore against a plain
PutObject of the same bytes, and through the DynamoDB LogStore against the conditional one, on
the same LocalStack (S3 and DynamoDB), interleaved, in the same run.

JVM: ``io.deltaguard.logstore.tools.CommitLatency`` (the LogStore classes Spark uses, with
S3A's own client). It is test code of the Maven module (``logstore/src/test``), never in the
plugin jar: ``make bench`` compiles it into ``logstore/target/test-classes``. Python: ``S3ConditionalLogStore.write`` / ``S3DynamoDBLogStore.write``
against ``put_object`` on one client.
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

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.logstore.jars import plugin_jar
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore
from deltaguard.spark_conf.jvm_deps import runtime_jars
from deltaguard.spark_conf.session import DynamoDBCommitTableSpec
from deltaguard.spark_conf.spark_lines import SparkLine, installed_line

from .stats import summarize

BODY_BYTES = 1024
WARMUP = 20  # commits per store before timing; versions 0..WARMUP-1 (the DynamoDB store needs N-1)


# `make bench-classes` compiles the tool with the SDK v2 profile; it uses no SDK class, so the
# same classes run with either plugin jar.
BENCH_CLASSES = (
    Path(__file__).resolve().parents[1] / "logstore" / "target" / "sdk2" / "test-classes"
)


def _jvm_run(
    endpoint: Endpoint,
    bucket: str,
    commits: int,
    ddb_table: str | None,
    line: SparkLine | None = None,
    spark_jars: Path | None = None,
) -> dict[str, float]:
    """One CommitLatency run on ``line`` (default: the installed pyspark's), whose pyspark jars
    are ``spark_jars``; the DynamoDB store only when ``ddb_table`` is given."""
    if not (
        BENCH_CLASSES / "io" / "deltaguard" / "logstore" / "tools" / "CommitLatency.class"
    ).is_file():
        raise FileNotFoundError(
            f"CommitLatency is not compiled in {BENCH_CLASSES}: run `make bench` (it runs "
            "Maven's test-compile of logstore/)"
        )
    line = line or installed_line()
    # The line's jars first: a line's own Hadoop client goes ahead of pyspark's (3.5-hadoop3.4).
    classpath = ":".join(
        [
            *(str(j) for j in runtime_jars(line)),
            str(plugin_jar(line.sdk)),
            str((spark_jars or Path(pyspark.__file__).parent / "jars") / "*"),
            str(BENCH_CLASSES),
        ]
    )
    hadoop = {
        k.removeprefix("spark.hadoop."): v for k, v in endpoint.s3_storage().hadoop_conf().items()
    }
    ddb = (
        DynamoDBCommitTableSpec(ddb_table, endpoint.region, endpoint.url).spark_conf()
        if ddb_table
        else {}
    )
    props = [f"-D{k.removeprefix('spark.')}={v}" for k, v in {**hadoop, **ddb}.items()]
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
        check=False,
        timeout=900,
    )
    if out.returncode != 0:
        raise RuntimeError(
            f"CommitLatency on Spark line {line.name} failed ({out.returncode}):\n"
            f"{out.stderr[-3000:]}"
        )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    medians = {
        "plain_put_ms": statistics.median(result["plain_put_us"]) / 1000,
        "logstore_ms": statistics.median(result["logstore_us"]) / 1000,
    }
    if result["dynamodb_us"]:
        medians["dynamodb_ms"] = statistics.median(result["dynamodb_us"]) / 1000
    return medians


def _python_run(endpoint: Endpoint, bucket: str, commits: int, ddb_table: str) -> dict[str, float]:
    s3 = endpoint.s3_client()
    store = S3ConditionalLogStore(s3)
    dynamo = S3DynamoDBLogStore(s3, endpoint.dynamodb_client(), ddb_table)
    table = f"s3://{bucket}/latency-py-{uuid.uuid4().hex[:8]}"
    ddb_table_uri = f"{table}-ddb"
    pad = "x" * (BODY_BYTES - 120)

    def lines() -> list[str]:
        return [
            json.dumps({"commitInfo": {"operation": "WRITE", "txnId": str(uuid.uuid4())}}),
            json.dumps({"add": {"path": f"part-{uuid.uuid4()}", "stats": pad}}),
        ]

    for i in range(WARMUP):  # warm-up, including the one-off conditional-write probe
        store.write(f"{table}/_delta_log/{i:020d}.json", lines())
        dynamo.write(f"{ddb_table_uri}/_delta_log/{i:020d}.json", lines())
    plain, ours, ddb = [], [], []
    for i in range(commits):
        actions = lines()
        ddb_actions = lines()
        body = "".join(a + "\n" for a in actions).encode()
        t0 = time.perf_counter()
        store.write(f"{table}/_delta_log/{WARMUP + i:020d}.json", actions)
        t1 = time.perf_counter()
        s3.put_object(
            Bucket=bucket,
            Key=f"{table.split('/', 3)[3]}/_plain_put/{i}",
            Body=body,
            ContentType="application/json",
        )
        t2 = time.perf_counter()
        dynamo.write(f"{ddb_table_uri}/_delta_log/{WARMUP + i:020d}.json", ddb_actions)
        t3 = time.perf_counter()
        ours.append((t1 - t0) * 1000)
        plain.append((t2 - t1) * 1000)
        ddb.append((t3 - t2) * 1000)
    return {
        "plain_put_ms": statistics.median(plain),
        "logstore_ms": statistics.median(ours),
        "dynamodb_ms": statistics.median(ddb),
    }


def run(endpoint: Endpoint, bucket: str, runs: int, commits: int, ddb_table: str) -> dict[str, Any]:
    """``ddb_table``: an existing DynamoDB commit table on the same endpoint."""
    jvm = [_jvm_run(endpoint, bucket, commits, ddb_table) for _ in range(runs)]
    python = [_python_run(endpoint, bucket, commits, ddb_table) for _ in range(runs)]
    return {
        "what": f"median latency of one {BODY_BYTES}-byte commit: conditional store vs plain "
        f"PutObject, DynamoDB store vs conditional store; {commits} interleaved triples per run",
        "jvm": summarize(jvm, "plain_put_ms", "logstore_ms"),
        "python": summarize(python, "plain_put_ms", "logstore_ms"),
        "dynamodb_vs_conditional": {
            "jvm": summarize(jvm, "logstore_ms", "dynamodb_ms"),
            "python": summarize(python, "logstore_ms", "dynamodb_ms"),
        },
    }
