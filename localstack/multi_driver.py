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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.logstore.preset_name import PresetName

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
    def append_span(self) -> tuple[float, float]:
        """The first append's start and the last append's end, over all writers (``time.time()``
        values)."""
        return (
            min(r["first_append_at"] for r in self.reports),
            max(r["last_append_at"] for r in self.reports),
        )

    @property
    def commits_per_second(self) -> float:
        """Data commits found / the :attr:`append_span`."""
        start, end = self.append_span
        span = end - start
        return len(self.found_tags) / span if span > 0 else 0.0

    @property
    def commit_call_s(self) -> list[float]:
        """The wall time of every append's commit call, all writers (see append_job)."""
        return [t for r in self.reports for t in r.get("commit_call_s", [])]

    @property
    def append_cpu_s_per_append(self) -> list[float]:
        """Per writer: its process CPU seconds over its appends / its appends (the JVM's and
        the interpreter's for a Spark driver)."""
        return [
            r["append_cpu_s"] / len(r["commit_call_s"])
            for r in self.reports
            if r.get("commit_call_s")
        ]

    @property
    def spark_jobs_per_append(self) -> list[float]:
        """Per Spark driver: the Spark jobs its appends ran / its appends."""
        return [
            r["spark_jobs"] / len(r["commit_call_s"])
            for r in self.reports
            if r.get("commit_call_s") and "spark_jobs" in r
        ]

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
            report, _ = proc.communicate()
            raise DriverFailedError(
                f"the condition to kill on never held (exit {proc.returncode}); log {log_path}\n"
                f"{_failure_summary(log_path.read_text(errors='replace'))}\n"
                f"its report: {report[-2000:]}"
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
    if logstore.uses_dynamodb:
        if not dynamodb_table:
            raise ValueError(f"the {logstore.value} LogStore needs dynamodb_table")
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


def _release_rounds(
    barrier_dir: Path,
    writers: int,
    rounds: int,
    futures: list[Future[dict[str, Any]]],
    timeout_s: float,
    on_all_ready: Callable[[], None] | None,
) -> None:
    """The orchestrator's side of the start barrier, per round: once all ``writers`` files
    ``ready-r<round>-w*`` exist, runs ``on_all_ready`` and writes ``go-r<round>``. A writer
    that ends first (a crash) is raised through its future, after ``abort`` tells the waiting
    writers to give up."""
    deadline = time.monotonic() + timeout_s
    try:
        for round_no in range(rounds):
            while len(list(barrier_dir.glob(f"ready-r{round_no}-w*"))) < writers:
                ended = [f for f in futures if f.done()]
                if ended:
                    ended[0].result()  # raises the writer's failure
                    raise DriverFailedError(
                        f"a writer finished before every writer was ready ({barrier_dir})"
                    )
                if time.monotonic() > deadline:
                    raise DriverFailedError(
                        f"writers not ready within {timeout_s:.0f} s ({barrier_dir})"
                    )
                time.sleep(0.05)
            if on_all_ready is not None:
                on_all_ready()
            (barrier_dir / f"go-r{round_no}").touch()
    except BaseException:
        (barrier_dir / "abort").touch()  # the waiting writers give up at once
        raise


def verify_table_deltars(table: str, endpoint_url: str) -> dict[str, Any]:
    """:func:`verify_table`'s account read by delta-rs in this process (no JVM start: for
    benchmarks that verify many tables): versions, data commits per tag, rows, rows per
    (writer, batch)."""
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    dt = DeltaTable(
        table.replace("s3a://", "s3://", 1),
        storage_options=Endpoint(url=endpoint_url).delta_rs_options(),
    )
    history = dt.history()
    data = dt.to_pyarrow_table(columns=["writer", "batch"])
    per_batch = data.group_by(["writer", "batch"]).aggregate([([], "count_all")])
    return {
        "versions": sorted(int(h["version"]) for h in history),
        "commits": [
            {
                "version": int(h["version"]),
                "operation": h.get("operation"),
                "tag": h.get("userMetadata"),
            }
            for h in history
        ],
        "rows": data.num_rows,
        "rows_per_batch": {
            f"w{w}/b{b}": int(n)
            for w, b, n in zip(
                per_batch["writer"].to_pylist(),
                per_batch["batch"].to_pylist(),
                pc.cast(per_batch["count_all"], "int64").to_pylist(),
                strict=True,
            )
        },
    }


def run_multi_driver(table: str, **kwargs: Any) -> MultiDriverResult:
    """One round of :func:`run_multi_driver_rounds` (see there) on ``table`` itself."""
    return run_multi_driver_rounds(table, rounds=1, **kwargs)[0]


def run_multi_driver_rounds(
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
    deltars_writers: int = 0,
    spark_conf: dict[str, str] | None = None,
    start_together: bool = False,
    on_all_ready: Callable[[], None] | None = None,
    rounds: int = 1,
    verify_with_deltars: bool = False,
) -> list[MultiDriverResult]:
    """Starts ``writers`` Spark driver processes (and ``python_writers`` processes committing
    with deltaguard's Python writer, and ``deltars_writers`` committing with delta-rs) at once,
    waits for all, then verifies the table.
    Writer 0 creates the table: a Spark driver if ``writers`` > 0, else deltaguard's Python
    writer, in this process, before the writers start.

    ``rounds``: the writers append ``rounds`` times, each round to its own table
    (``append_job.round_tables``), in the same processes; one result per round.
    ``spark_conf``: the Spark drivers' whole commit path as explicit settings instead of
    ``logstore``'s preset (e.g. a frozen earlier preset; the verifier still uses the preset).
    ``start_together``: a start barrier per round (see append_job): every writer gets ready
    (a Spark driver started and warmed), then ``on_all_ready()`` runs (e.g. a request-counter
    reading) and all start appending at once. ``verify_with_deltars``: the verifier is
    :func:`verify_table_deltars` instead of a Spark driver.

    Writers reach S3 through ``writer_endpoint_url`` (e.g. a fault proxy); the verifier reads
    through ``reader_endpoint_url`` (the emulator itself). Raises DriverFailedError if a
    driver process crashes; commit exceptions are part of the result instead.

    ``pythons[i]`` is Spark writer i's interpreter (another Spark line's, see
    spark_line_venvs; default: this one), ``verify_python`` the reader's.
    """
    from deltaguard.localstack.append_job import round_tables

    run_id = uuid.uuid4().hex[:8]
    started = time.monotonic()
    store_args = _store_args(logstore, dynamodb_table)
    tables = round_tables(table, rounds)
    if writers == 0:
        for t in tables:
            _create_table_with_python(t, writer_endpoint_url, logstore, dynamodb_table)
    barrier_dir = workdir / f"{run_id}-barrier"
    if start_together:
        barrier_dir.mkdir(parents=True)
    plan = _WriterPlan(
        table=table,
        run_id=run_id,
        store_args=store_args,
        conf_args=_spark_conf_args(spark_conf, workdir / f"{run_id}-spark-conf.json"),
        barrier_dir=barrier_dir if start_together else None,
        writer_endpoint_url=writer_endpoint_url,
        spark_writers=writers,
        python_writers=python_writers,
        deltars_writers=deltars_writers,
        appends=appends,
        rows=rows,
        rounds=rounds,
        workdir=workdir,
        timeout_s=timeout_s,
        pythons=pythons,
    )
    reports = _run_writers(plan, on_all_ready)
    results = []
    for round_no, round_table in enumerate(tables):
        round_reports = [r["rounds"][round_no] if rounds > 1 else r for r in reports]
        if verify_with_deltars:
            verified = _verify_round_deltars(round_table, reader_endpoint_url)
        else:
            verified = verify_table(
                round_table,
                reader_endpoint_url,
                workdir,
                f"{run_id}-r{round_no}-verify",
                store_args=store_args,
                python=verify_python,
            )
        results.append(
            MultiDriverResult(
                logstore=logstore.value,
                writers=plan.total,
                appends_per_writer=appends,
                rows_per_append=rows,
                run_id=run_id,
                reports=round_reports,
                verified=verified,
                wall_s=time.monotonic() - started,
            )
        )
    return results


def _verify_round_deltars(table: str, reader_endpoint_url: str | None) -> dict[str, Any]:
    if not reader_endpoint_url:
        raise ValueError("the delta-rs verifier reads S3 only: give reader_endpoint_url")
    return verify_table_deltars(table, reader_endpoint_url)


def _spark_conf_args(spark_conf: dict[str, str] | None, conf_path: Path) -> list[str]:
    """The Spark writers' arguments for explicit settings (none without ``spark_conf``): the
    settings are written to ``conf_path`` as JSON, which ``--conf-json`` names."""
    if spark_conf is None:
        return []
    conf_path.parent.mkdir(parents=True, exist_ok=True)
    conf_path.write_text(json.dumps(spark_conf, indent=1))
    return ["--conf-json", str(conf_path)]


@dataclass(frozen=True)
class _WriterPlan:
    """What every writer process of one :func:`run_multi_driver_rounds` call runs: writers
    ``0 .. spark_writers-1`` are Spark drivers, the next ``python_writers`` commit with
    deltaguard's Python writer, the last ``deltars_writers`` with delta-rs."""

    table: str
    run_id: str
    store_args: list[str]
    #: Extra arguments of the Spark writers only (``--conf-json``).
    conf_args: list[str]
    #: The start barrier's directory, or None without one.
    barrier_dir: Path | None
    writer_endpoint_url: str | None
    spark_writers: int
    python_writers: int
    deltars_writers: int
    appends: int
    rows: int
    rounds: int
    workdir: Path
    timeout_s: float
    #: ``pythons[i]``: Spark writer i's interpreter (None: this one).
    pythons: list[str] | None

    @property
    def total(self) -> int:
        return self.spark_writers + self.python_writers + self.deltars_writers

    def engine(self, writer: int) -> str:
        if writer < self.spark_writers:
            return "spark"
        if writer < self.spark_writers + self.python_writers:
            return "python"
        return "delta-rs"

    def args(self, writer: int) -> list[str]:
        """``append_job append``'s arguments for ``writer``."""
        engine = self.engine(writer)
        args = [
            "append",
            "--engine",
            engine,
            "--table",
            self.table,
            *self.store_args,
            "--writer",
            str(writer),
            "--appends",
            str(self.appends),
            "--rows",
            str(self.rows),
            "--rounds",
            str(self.rounds),
            "--run-id",
            self.run_id,
            "--local-dir",
            str(self.workdir / f"spark-w{writer}"),
        ]
        if self.writer_endpoint_url:
            args += ["--endpoint", self.writer_endpoint_url]
        if engine == "spark":
            args += self.conf_args
        if self.barrier_dir is not None:
            args += ["--barrier-dir", str(self.barrier_dir)]
        return args

    def run(self, writer: int) -> dict[str, Any]:
        """Runs ``writer``'s process to its end; its report."""
        python = self.pythons[writer] if self.pythons and writer < self.spark_writers else None
        log_path = self.workdir / f"{self.run_id}-writer{writer}.log"
        return _run_job(self.args(writer), log_path, self.timeout_s, python)


def _run_writers(
    plan: _WriterPlan, on_all_ready: Callable[[], None] | None
) -> list[dict[str, Any]]:
    """Every writer of ``plan`` at once (released round by round through the start barrier,
    if it has one); their reports, in writer order."""
    with ThreadPoolExecutor(max_workers=plan.total) as pool:
        futures = [pool.submit(plan.run, w) for w in range(plan.total)]
        if plan.barrier_dir is not None:
            _release_rounds(
                plan.barrier_dir, plan.total, plan.rounds, futures, plan.timeout_s, on_all_ready
            )
        return [f.result() for f in futures]  # every future is read: no failure is hidden
