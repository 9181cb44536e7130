"""The fan-out example job on the test bed: its input, spark-submit with a preset, and a reader.

:func:`write_input` writes raw JSON-lines batches; :func:`properties_file` renders the
``s3-conditional`` preset for the endpoint (jars from the local cache, a local master) as a
``--properties-file``; :func:`start_job` starts ``spark-submit`` on
:mod:`deltaguard.tools.fanout.example_job` in its own process group (so
:func:`deltaguard.localstack.multi_driver.kill_when` kills its JVM and Python driver together);
:func:`job_result` reads the job's JSON line; :func:`run_trap` runs the trap driver
(:mod:`deltaguard.localstack.fanout_trap`); :func:`count_commits` counts the tables' commits on
S3; :func:`read_tables` reads the tables back with delta-rs (not Spark: an independent reader)
and reports rows and distinct keys per table.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deltaguard.localstack import multi_driver
from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.spark_driver import local_driver_conf, master_conf, small_tables_conf
from deltaguard.logstore.jars import plugin_jar
from deltaguard.logstore.s3_location import S3Location
from deltaguard.spark_conf.jvm_deps import runtime_jars
from deltaguard.spark_conf.presets import PresetName, PresetOptions, render, to_properties
from deltaguard.spark_conf.session import local_classpath_conf
from deltaguard.spark_conf.spark_lines import installed_line
from deltaguard.tools.fanout import example_job

SPARK_SUBMIT = Path(sys.executable).with_name("spark-submit")


def write_input(directory: Path, batches: Sequence[Sequence[dict[str, Any]]]) -> Path:
    """Writes ``batch-<n>.jsonl`` per batch of records into ``directory``; returns it."""
    directory.mkdir(parents=True, exist_ok=True)
    for n, records in enumerate(batches):
        lines = "".join(json.dumps(r) + "\n" for r in records)
        (directory / f"batch-{n:03d}.jsonl").write_text(lines)
    return directory


def properties_file(path: Path, endpoint: Endpoint, table_root: str, local_dir: Path) -> Path:
    """The ``s3-conditional`` preset for ``endpoint`` (``deltaguard conf render s3-conditional
    --endpoint URL --path-style --jars none``), plus this machine's cached jars and a local
    master: what a cluster's spark-defaults would add."""
    conf = render(
        PresetName.S3_CONDITIONAL,
        PresetOptions(table_root=table_root, endpoint=endpoint.url, path_style=True, jars="none"),
    )
    conf |= local_classpath_conf([*runtime_jars(), plugin_jar(installed_line().sdk)])
    conf |= local_driver_conf(local_dir) | master_conf("local[2]") | small_tables_conf()
    path.write_text(to_properties(conf, "deltaguard s3-conditional preset for the test bed"))
    return path


def start_job(properties: Path, endpoint: Endpoint, args: list[str], log_path: Path) -> Any:
    """``spark-submit --properties-file PROPERTIES example_job.py ARGS`` in a new process group,
    credentials in the environment (S3A's default chain), stderr to ``log_path``."""
    env = multi_driver.driver_env(endpoint) | {"PYSPARK_DRIVER_PYTHON": sys.executable}
    command = [str(SPARK_SUBMIT), "--properties-file", str(properties), example_job.__file__]
    with log_path.open("w") as log:
        return subprocess.Popen(
            [*command, *args],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=env,
            start_new_session=True,
        )


def job_result(proc: Any, log_path: Path, timeout_s: float = 900) -> tuple[int, dict[str, Any]]:
    """Waits for the job; returns its exit code (0, or 1 when a write failed) and its JSON
    summary. Raises DriverFailedError for anything else (a crash, bad input, no summary)."""
    return multi_driver.job_result(
        proc,
        log_path,
        timeout_s,
        name="the fan-out job",
        prefix=example_job.RESULT_PREFIX,
        exit_codes=(0, 1),
    )


def run_trap(
    endpoint: Endpoint, table_root: str, workdir: Path, python: str | None = None
) -> dict[str, Any]:
    """Runs :mod:`deltaguard.localstack.fanout_trap` in one driver (on another Spark line's
    interpreter ``python``, default this one); returns its report."""
    log = workdir / "trap.log"
    args = ["--endpoint", endpoint.url, "--table-root", table_root]
    args += ["--local-dir", str(workdir / "spark-trap")]
    with log.open("w") as err:
        proc = subprocess.Popen(
            [python or sys.executable, "-m", "deltaguard.localstack.fanout_trap", *args],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=multi_driver.driver_env(python=python),
            cwd=workdir,
        )
    return multi_driver.job_result(proc, log, 600, name="the fan-out trap")[1]


def count_commits(endpoint: Endpoint, table_root: str) -> int:
    """Commit files (``_delta_log/<n>.json``) of all tables under ``table_root``."""
    loc = S3Location.parse(table_root.rstrip("/") + "/")
    paginator = endpoint.s3_client().get_paginator("list_objects_v2")
    return sum(
        1
        for page in paginator.paginate(Bucket=loc.bucket, Prefix=loc.key)
        for obj in page.get("Contents", [])
        if "/_delta_log/" in obj["Key"]
        and obj["Key"].rsplit("/", 1)[1][:20].isdigit()
        and obj["Key"].endswith(".json")
    )


def read_tables(endpoint: Endpoint, tables: list[str], key_columns: list[str]) -> dict[str, Any]:
    """Reads ``tables`` back with delta-rs, a reader independent of Spark: per table rows,
    distinct ``key_columns`` tuples, columns, and the number of versions."""
    from deltalake import DeltaTable

    report: dict[str, Any] = {}
    for table in tables:
        delta = DeltaTable(
            table.replace("s3a://", "s3://", 1), storage_options=endpoint.delta_rs_options()
        )
        data = delta.to_pyarrow_table()
        keys = data.select(key_columns).group_by(key_columns).aggregate([])
        report[table] = {
            "rows": data.num_rows,
            "distinct_keys": keys.num_rows,
            "columns": sorted(data.column_names),
            "versions": delta.version() + 1,
        }
    return report
