"""Runs N concurrent Spark driver processes appending to one Delta table, then checks the result.

This is the one orchestration of the append workload; the demo, the tests and the benchmarks
call :func:`run_multi_driver`. Each driver is a separate JVM (a separate "job"), exactly like
independent spark-submit jobs sharing a table, so nothing but the LogStore keeps them apart.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.spark_conf.preset_name import PresetName

RESULT_PREFIX = "DELTAGUARD-RESULT "


class DriverFailedError(RuntimeError):
    """A driver process crashed (not a commit error: those are counted in the result)."""


@dataclass
class MultiDriverResult:
    """What the writers claim against what a reader finds."""

    logstore: str
    writers: int
    appends_per_writer: int
    rows_per_append: int
    run_id: str
    reports: list[dict[str, Any]]
    verified: dict[str, Any]
    wall_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def expected_commits(self) -> int:
        return self.writers * self.appends_per_writer

    @property
    def claimed_tags(self) -> list[str]:
        """Commits whose writer saw success."""
        return [tag for r in self.reports for tag in r["committed"]]

    @property
    def failed_appends(self) -> list[dict[str, str]]:
        """Appends whose writer saw an exception (visible failures, not silent losses)."""
        return [e for r in self.reports for e in r["errors"]]

    @property
    def found_tags(self) -> list[str]:
        """Data commits of this run present in the table's log (one entry per version)."""
        return [
            c["tag"]
            for c in self.verified["commits"]
            if c["tag"] and str(c["tag"]).startswith(self.run_id + "/")
        ]

    @property
    def lost_tags(self) -> list[str]:
        """Commits a writer was told succeeded that no version of the table holds."""
        found = set(self.found_tags)
        return sorted(t for t in self.claimed_tags if t not in found)

    @property
    def duplicated_tags(self) -> list[str]:
        """Commits present at more than one version (a retried append applied twice)."""
        tags = self.found_tags
        return sorted({t for t in tags if tags.count(t) > 1})

    @property
    def expected_rows(self) -> int:
        return len(self.claimed_tags) * self.rows_per_append

    @property
    def found_rows(self) -> int:
        return int(self.verified["rows"])

    @property
    def commits_per_second(self) -> float:
        """Data commits found / the span from the first append start to the last append end."""
        span = max(r["last_append_at"] for r in self.reports) - min(
            r["first_append_at"] for r in self.reports
        )
        return len(self.found_tags) / span if span > 0 else 0.0

    @property
    def versions_contiguous(self) -> bool:
        versions = self.verified["versions"]
        return bool(versions == list(range(len(versions))))

    def summary(self) -> dict[str, Any]:
        return {
            "logstore": self.logstore,
            "writers": self.writers,
            "appends_per_writer": self.appends_per_writer,
            "data_commits_expected": self.expected_commits,
            "data_commits_claimed_by_writers": len(self.claimed_tags),
            "appends_failed_visibly": len(self.failed_appends),
            "data_commits_found": len(self.found_tags),
            "commits_lost": len(self.lost_tags),
            "commits_duplicated": len(self.duplicated_tags),
            "rows_expected": self.expected_rows,
            "rows_found": self.found_rows,
            "rows_lost": self.expected_rows - self.found_rows,
            "versions": len(self.verified["versions"]),
            "versions_contiguous": self.versions_contiguous,
            "wall_s": round(self.wall_s, 1),
        }


def driver_env(endpoint: Endpoint | None = None, python: str | None = None) -> dict[str, str]:
    """The environment of a Spark driver process: loopback only, ``python`` (another Spark
    line's interpreter, see spark_line_venvs) or else this interpreter for Python workers, and
    ``endpoint``'s credentials when given."""
    env = dict(os.environ)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"  # bind and advertise loopback only
    if python is not None:
        env["PYSPARK_PYTHON"] = python
        env.pop("SPARK_HOME", None)  # the line's own pyspark finds its own jars
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    if endpoint is not None:
        env.update(endpoint.credentials_env())
    return env


def _failure_summary(log: str, tail: int = 20) -> str:
    """The first exception message in a driver log (the cause, not the JVM stack), then the
    log's last lines."""
    lines = log.splitlines()
    # Exception lines start with a class name; Py4J prefixes the Java one with ": ".
    causes = [ln for ln in lines if re.match(r"^(: )?[\w.$]+(Exception|Error): ", ln)]
    java = [ln for ln in causes if ln.startswith(": ")]
    cause = java[0][2:] if java else (causes[-1] if causes else "")
    head = f"cause: {cause}\n" if cause else ""
    return head + "\n".join(lines[-tail:])


def start_job(
    args: list[str],
    log_path: Path,
    module: str = "deltaguard.localstack.append_job",
    python: str | None = None,
) -> subprocess.Popen[str]:
    """Starts ``python -m MODULE ARGS`` as a Spark driver process on loopback (stdout piped,
    stderr to ``log_path``) and returns at once; the caller owns the process (wait for it, or
    kill it). ``python``: another Spark line's interpreter (default: this one)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        return subprocess.Popen(
            [python or sys.executable, "-m", module, *args],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=driver_env(python=python),
        )


def kill_when(
    proc: subprocess.Popen[str], condition: Callable[[], bool], log_path: Path, timeout_s: float
) -> None:
    """SIGKILLs ``proc`` as soon as ``condition()`` holds (e.g. the fault proxy froze its commit);
    if ``proc`` leads its own process group (started with ``start_new_session``, like
    spark-submit with its JVM and Python driver), the whole group.
    Raises DriverFailedError if the process ends first or the condition never holds."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.communicate()
            raise DriverFailedError(
                f"the condition to kill on never held (exit {proc.returncode}); log {log_path}\n"
                f"{_failure_summary(log_path.read_text(errors='replace'))}"
            )
        time.sleep(0.1)
    _kill(proc)
    proc.communicate(timeout=30)


def _kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL to ``proc``, or to its whole process group if it leads one."""
    if os.getpgid(proc.pid) == proc.pid:
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        proc.send_signal(signal.SIGKILL)


def job_result(
    proc: subprocess.Popen[str],
    log_path: Path,
    timeout_s: float,
    *,
    name: str,
    prefix: str = RESULT_PREFIX,
    exit_codes: tuple[int, ...] = (0,),
) -> tuple[int, dict[str, Any]]:
    """Waits for a job process; returns its exit code and the JSON of its last ``prefix`` line.
    Raises DriverFailedError (with the cause from its log) if it runs over ``timeout_s`` (it is
    killed), exits with a code not in ``exit_codes``, or prints no result."""
    try:
        stdout, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.communicate()
        raise DriverFailedError(
            f"{name} did not finish in {timeout_s:.0f} s; log {log_path}"
        ) from None
    results = [line for line in stdout.splitlines() if line.startswith(prefix)]
    if proc.returncode not in exit_codes or not results:
        raise DriverFailedError(
            f"{name} exited with {proc.returncode}; log {log_path}\n"
            f"{_failure_summary(log_path.read_text(errors='replace'))}"
        )
    return proc.returncode, dict(json.loads(results[-1][len(prefix) :]))


def _run_job(
    args: list[str], log_path: Path, timeout_s: float, python: str | None = None
) -> dict[str, Any]:
    name = f"append_job {' '.join(args[:3])}"
    proc = start_job(args, log_path, python=python)
    return job_result(proc, log_path, timeout_s, name=name)[1]


def _store_args(logstore: PresetName, dynamodb_table: str | None) -> list[str]:
    args = ["--logstore", logstore.value]
    if logstore is PresetName.S3_DYNAMODB:
        if not dynamodb_table:
            raise ValueError("the s3-dynamodb LogStore needs dynamodb_table")
        args += ["--dynamodb-table", dynamodb_table]
    return args


def _create_table_with_python(
    table: str, endpoint_url: str | None, logstore: PresetName, dynamodb_table: str | None
) -> None:
    from deltaguard.localstack.append_job import arrow_schema, python_log_store
    from deltaguard.localstack.delta_append import create_table

    if not endpoint_url:
        raise ValueError("deltaguard's Python writer commits to S3 only: give an endpoint")
    store = python_log_store(endpoint_url, logstore, dynamodb_table or "delta_log")
    create_table(store, table, arrow_schema())


def verify_table(
    table: str,
    endpoint_url: str | None,
    workdir: Path,
    run_tag: str = "verify",
    timeout_s: float = 600,
    store_args: list[str] | None = None,
    python: str | None = None,
) -> dict[str, Any]:
    """Reads the table back with Spark Delta in a fresh driver, through the same LogStore as the
    writers (so a reader's recovery runs as it would in production); see append_job.verify.
    ``python``: the reader's Spark line interpreter (default: this one)."""
    args = ["verify", "--table", table, "--local-dir", str(workdir / "spark-verify")]
    args += store_args or []
    if endpoint_url:
        args += ["--endpoint", endpoint_url]
    return _run_job(args, workdir / f"{run_tag}.log", timeout_s, python)


def run_multi_driver(
    table: str,
    *,
    writer_endpoint_url: str | None,
    reader_endpoint_url: str | None,
    logstore: PresetName,
    writers: int,
    appends: int,
    rows: int = 10,
    workdir: Path,
    python_writers: int = 0,
    dynamodb_table: str | None = None,
    timeout_s: float = 1200,
    pythons: list[str] | None = None,
    verify_python: str | None = None,
) -> MultiDriverResult:
    """Starts ``writers`` Spark driver processes (and ``python_writers`` processes committing
    with deltaguard's Python writer) at once, waits for all, then verifies the table.
    Writer 0 creates the table: a Spark driver if ``writers`` > 0, else deltaguard's Python
    writer, in this process, before the writers start.

    Writers reach S3 through ``writer_endpoint_url`` (e.g. a fault proxy); the verifier reads
    through ``reader_endpoint_url`` (the emulator itself). Raises DriverFailedError if a
    driver process crashes; commit exceptions are part of the result instead.

    ``pythons[i]`` is Spark writer i's interpreter (another Spark line's, see
    spark_line_venvs; default: this one), ``verify_python`` the reader's.
    """
    run_id = uuid.uuid4().hex[:8]
    started = time.monotonic()
    store_args = _store_args(logstore, dynamodb_table)
    if writers == 0:
        _create_table_with_python(table, writer_endpoint_url, logstore, dynamodb_table)

    def one(writer: int) -> dict[str, Any]:
        engine = "spark" if writer < writers else "python"
        args = [
            "append",
            "--engine",
            engine,
            "--table",
            table,
            *store_args,
            "--writer",
            str(writer),
            "--appends",
            str(appends),
            "--rows",
            str(rows),
            "--run-id",
            run_id,
            "--local-dir",
            str(workdir / f"spark-w{writer}"),
        ]
        if writer_endpoint_url:
            args += ["--endpoint", writer_endpoint_url]
        python = pythons[writer] if pythons and writer < writers else None
        return _run_job(args, workdir / f"{run_id}-writer{writer}.log", timeout_s, python)

    total = writers + python_writers
    with ThreadPoolExecutor(max_workers=total) as pool:
        futures = [pool.submit(one, w) for w in range(total)]
        reports = [f.result() for f in futures]  # every future is read: no failure is hidden
    verified = verify_table(
        table,
        reader_endpoint_url,
        workdir,
        f"{run_id}-verify",
        store_args=store_args,
        python=verify_python,
    )
    return MultiDriverResult(
        logstore=logstore.value,
        writers=total,
        appends_per_writer=appends,
        rows_per_append=rows,
        run_id=run_id,
        reports=reports,
        verified=verified,
        wall_s=time.monotonic() - started,
    )
