"""Committed versions per second with 1, 4 and 8 concurrent writers on one table, through
deltaguard's conditional LogStore and through its DynamoDB LogStore, on the same LocalStack in
the same run: Python writers and Spark drivers, each a separate process
(:func:`deltaguard.localstack.multi_driver.run_multi_driver`).

Writers reach LocalStack through a counting :class:`FaultProxy` with no rules, so every
request they make (commits, listings, reads, DynamoDB calls) is counted by kind; the table's
verification reads LocalStack directly and is not counted. Runs alternate the two stores (and
their order) so both see the same machine state.
"""

from __future__ import annotations

import statistics
import tempfile
import uuid
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.fault_proxy import FaultProxy
from deltaguard.localstack.multi_driver import run_multi_driver
from deltaguard.spark_conf.preset_name import PresetName

STORES = (PresetName.S3_CONDITIONAL, PresetName.S3_DYNAMODB)


def _counts(proxy: FaultProxy) -> dict[str, int]:
    return dict(proxy.stats()["by_kind"])


def _one(
    endpoint: Endpoint,
    proxy: FaultProxy,
    bucket: str,
    engine: str,
    store: PresetName,
    writers: int,
    appends: int,
    ddb_table: str,
) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="deltaguard-bench-"))
    before = _counts(proxy)
    result = run_multi_driver(
        f"s3a://{bucket}/tput-{engine}-{store.value}-{writers}-{uuid.uuid4().hex[:6]}",
        writer_endpoint_url=proxy.endpoint.url,
        reader_endpoint_url=endpoint.url,
        logstore=store,
        writers=writers if engine == "spark" else 0,
        python_writers=writers if engine == "python" else 0,
        appends=appends,
        workdir=workdir,
        dynamodb_table=ddb_table if store is PresetName.S3_DYNAMODB else None,
    )
    if result.lost_tags or result.duplicated_tags or result.failed_appends:
        raise AssertionError(f"benchmark run lost or failed commits: {result.summary()}")
    after = _counts(proxy)
    commits = len(result.found_tags)
    by_kind = {
        k: (after[k] - before.get(k, 0)) / commits for k in after if after[k] != before.get(k, 0)
    }
    return {
        "commits_per_s": result.commits_per_second,
        "commits": commits,
        "requests_per_commit": sum(by_kind.values()),
        "s3_requests_per_commit": sum(v for k, v in by_kind.items() if k.startswith("s3 ")),
        "dynamodb_requests_per_commit": sum(
            v for k, v in by_kind.items() if k.startswith("dynamodb ")
        ),
        "by_kind": by_kind,
    }


def run(
    endpoint: Endpoint,
    bucket: str,
    engine: str,
    runs: int,
    appends: int,
    ddb_table: str,
    workdir: Path,
    writer_counts: tuple[int, ...] = (1, 4, 8),
) -> dict[str, Any]:
    """Per store and writer count: medians over ``runs`` runs of ``appends`` appends per writer
    of commits/s and requests per committed version (total, S3, DynamoDB, by kind); per writer
    count, the median of the per-run ratios DynamoDB/conditional commits/s."""
    rows: dict[str, Any] = {store.value: {} for store in STORES}
    ratios: dict[str, Any] = {}
    with FaultProxy(endpoint, workdir) as proxy:
        for writers in writer_counts:
            samples: dict[PresetName, list[dict[str, Any]]] = {s: [] for s in STORES}
            for i in range(runs):
                order = STORES if i % 2 == 0 else tuple(reversed(STORES))
                for store in order:
                    samples[store].append(
                        _one(endpoint, proxy, bucket, engine, store, writers, appends, ddb_table)
                    )
            for store in STORES:
                s = samples[store]
                kinds = sorted({k for x in s for k in x["by_kind"]})
                rows[store.value][str(writers)] = {
                    "commits_per_s_median": statistics.median(x["commits_per_s"] for x in s),
                    "requests_per_commit_median": statistics.median(
                        x["requests_per_commit"] for x in s
                    ),
                    "s3_requests_per_commit_median": statistics.median(
                        x["s3_requests_per_commit"] for x in s
                    ),
                    "dynamodb_requests_per_commit_median": statistics.median(
                        x["dynamodb_requests_per_commit"] for x in s
                    ),
                    "by_kind_median": {
                        k: statistics.median(x["by_kind"].get(k, 0.0) for x in s) for k in kinds
                    },
                    "appends_per_writer": appends,
                    "runs": [round(x["commits_per_s"], 3) for x in s],
                }
            per_run = [
                d["commits_per_s"] / c["commits_per_s"]
                for c, d in zip(samples[STORES[0]], samples[STORES[1]], strict=True)
            ]
            ratios[str(writers)] = {
                "dynamodb_over_conditional_median": statistics.median(per_run),
                "min": min(per_run),
                "max": max(per_run),
            }
    return {"stores": rows, "commits_per_s_ratio": ratios}
