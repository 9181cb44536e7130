"""The soak: mixed writers, faults, kills and cleanup on shared tables for a bounded time, then
invariants checked by readers that did not write (``make soak``; docs/reference/testbed.md).

On one S3 server (LocalStack by default, versitygw or MinIO), on ``--tables`` tables at once:

- writers (:mod:`deltaguard.localstack.soak_worker`): Spark drivers through deltaguard's
  conditional-write LogStore (appends, MERGE, append+DELETE, OPTIMIZE; Delta checkpoints every
  10 commits), deltaguard's Python committer, and delta-rs (conditional PUT, its default: no
  locking provider, no unsafe rename). Each engine reaches S3 through its own fault proxy;
- faults at a seeded random rate (:func:`fault_rules`): 503 SlowDown and 409
  ConditionalRequestConflict on commit PUTs, connection resets, responses dropped after the
  PUT landed, 503 and delays on any request;
- at random moments (seeded) a SIGKILL of one writer's process group, which is then restarted;
- cleanup while the writers write: every ``--orphans-every`` seconds a pass of ``deltaguard
  orphans --delete --yes --retention R --unsafe-retention`` over every table, in the
  background; after the writers stopped, once per table with retention 0.

**Why the cleanup retention R is safe while writers write.** Cleanup never deletes a file
younger than R, and re-reads the log right before deleting
(:mod:`deltaguard.tools.orphans.cleanup`, point 2), so a writer's files are safe if it commits
within R of writing them. Each writer records the start of an operation before it writes
anything (its ledger's ``intent``), and the soak SIGKILLs the process group of any writer whose
operation has run for :attr:`SoakConfig.write_deadline_s` (R minus :func:`settle_margin_s`: the
loop's tick, the proxies' longest injected delay, and an allowance for a request the server
already holds), so no write's commit can land more than R after its first file. Python writers
also abandon one operation in four after writing its data file
(:data:`~deltaguard.localstack.soak_worker.ABANDON_SHARE`), which gives every run files the
passes must delete; the summary counts the files deleted by the orphans runs that ended before
the writers were told to stop.

Then, per table: ``deltaguard audit`` must be healthy, every file any retained log entry names
must exist, and a Spark driver and delta-rs (neither wrote) read the tables; the ledgers are
checked against what they find (:mod:`deltaguard.localstack.soak_check`). The last line printed
is the summary (``soak: <N> commits, <M> faults injected, <K> kills, <D> files deleted while
writing, 0 lost, 0 duplicated, 0 missing files, audit healthy``). Any violation: exit 1, with
the logs and a copy of every table kept under the work directory.

Run: ``python -m deltaguard.localstack.soak [--duration SECONDS] [--seed N] [--server
localstack|versitygw|minio] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.fault_proxy import FaultProxy, FaultRule
from deltaguard.localstack.multi_driver import driver_env, job_result
from deltaguard.localstack.soak_check import Verdict, check
from deltaguard.localstack.soak_ledger import Operation, open_operation_since, read_ledgers
from deltaguard.localstack.soak_worker import arrow_schema
from deltaguard.logstore.commit_names import COMMIT_FILE_PATTERN

DELTAGUARD = str(Path(sys.executable).with_name("deltaguard"))
_COMMIT_PUT_REGEX = rf"/_delta_log/{COMMIT_FILE_PATTERN}$"
#: Seconds between two looks of the soak's loop at its writers (kills, deadlines, cleanup).
_TICK_S = 1.0
#: Seconds allowed for a request the server already holds when its writer is killed: the
#: server stores it well within this (LocalStack and versitygw answer PUTs in milliseconds
#: here), and it only has to be stored before a cleanup pass that started R after the write.
_SERVER_ALLOWANCE_S = 8.0


def _on_commit_puts(rule: FaultRule) -> FaultRule:
    """``rule`` restricted to conditional commit PUTs (``_delta_log/<N>.json``, If-None-Match)."""
    rule.method, rule.path_regex, rule.header_present = "PUT", _COMMIT_PUT_REGEX, "If-None-Match"
    return rule


def fault_rules(rate: float = 1.0, lost_responses: bool = True) -> list[FaultRule]:
    """The soak's faults; ``rate`` scales every probability. Commit PUTs (conditional) get 409,
    503, resets before forwarding and (with ``lost_responses``) lost responses after the PUT
    landed; every request may get a 503 SlowDown or a 1 s delay.

    delta-rs's writers get no lost responses (the rule stays, at rate 0, so rule indexes match):
    delta-rs reports a commit whose response was lost as failed although it landed (measured
    with deltalake 1.6: "Connection reset by peer", and the table has the commit), which a
    retrying job turns into a duplicate. deltaguard's stores settle that case by read-back."""
    lost = 0.03 * rate if lost_responses else 0.0
    return [
        _on_commit_puts(
            FaultRule("error", status=409, code="ConditionalRequestConflict", rate=0.04 * rate)
        ),
        _on_commit_puts(FaultRule("error", status=503, code="SlowDown", rate=0.04 * rate)),
        _on_commit_puts(FaultRule("reset", rate=0.03 * rate)),
        _on_commit_puts(FaultRule("drop_response", rate=lost)),
        FaultRule("error", status=503, code="SlowDown", rate=0.005 * rate),
        FaultRule("delay", delay_s=1.0, rate=0.01 * rate),
    ]


def settle_margin_s() -> float:
    """Seconds between a write's deadline and the retention of the cleanup passes: the loop
    notices an overdue operation within one tick, a request the killed writer already sent may
    wait for the proxies' longest injected delay, then the server stores it (an allowance)."""
    longest_delay = max(rule.delay_s or 0.0 for rule in fault_rules())
    return _TICK_S + longest_delay + _SERVER_ALLOWANCE_S


@dataclass
class SoakConfig:
    duration_s: float = 900.0
    seed: int = 17
    tables: int = 3
    spark_writers: int = 2
    python_writers: int = 2
    deltars_writers: int = 2
    kill_every_s: float = 60.0
    orphans_every_s: float = 60.0
    #: The retention of the cleanup passes while writers write (seconds; see the module
    #: docstring): each writer's operations are killed at :attr:`write_deadline_s`.
    cleanup_retention_s: float = 180.0
    fault_rate: float = 1.0
    #: Most seconds a Python or delta-rs writer waits between operations (random up to this):
    #: they commit in milliseconds and would otherwise crowd out the Spark drivers on 2 cores.
    light_writer_pause_s: float = 2.0

    @property
    def write_deadline_s(self) -> float:
        """The longest a writer's operation may run before the soak kills its writer."""
        deadline = self.cleanup_retention_s - settle_margin_s()
        if deadline <= 0:
            raise ValueError(
                f"cleanup retention {self.cleanup_retention_s:g} s leaves no time to write: "
                f"it must exceed {settle_margin_s():g} s"
            )
        return deadline


@dataclass
class _Worker:
    name: str
    engine: str
    args: list[str]
    log: Path
    ledger: Path
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    #: Epoch seconds of the latest start: older intents in the ledger are a killed process's.
    started_at: float = 0.0

    def start(self) -> None:
        self.starts += 1
        self.started_at = time.time()
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "deltaguard.localstack.soak_worker", *self.args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=driver_env(),
                start_new_session=True,
            )

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def kill_if_overdue(self, deadline_s: float) -> float | None:
        """Kills the writer if its running operation has taken more than ``deadline_s``;
        returns how long it had run (None: nothing killed)."""
        if self.process is None or self.process.poll() is not None:
            return None
        since = open_operation_since(self.ledger)
        if since is None or since < self.started_at:
            return None  # between operations, or an intent a killed process left
        running = time.time() - since
        if running <= deadline_s:
            return None
        self.kill()
        return running


@dataclass
class SoakResult:
    commits: int
    faults: int
    kills: int
    #: Files the cleanup passes deleted while the writers were writing.
    deleted_while_writing: int
    missing_files: int
    audit_healthy: bool
    verdict: Verdict
    problems: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (
            self.verdict.ok and not self.problems and self.audit_healthy and not self.missing_files
        )

    def summary_line(self) -> str:
        audit = "audit healthy" if self.audit_healthy else "audit NOT healthy"
        return (
            f"soak: {self.commits} commits, {self.faults} faults injected, {self.kills} kills, "
            f"{self.deleted_while_writing} files deleted while writing, "
            f"{self.verdict.lost} lost, {self.verdict.duplicated} duplicated, "
            f"{self.missing_files} missing files, {audit}"
        )


def _cli(*args: str, endpoint: Endpoint, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``deltaguard *args`` against ``endpoint``."""
    return subprocess.run(
        [
            DELTAGUARD,
            *args,
            "--endpoint",
            endpoint.url,
            "--path-style",
            "--region",
            endpoint.region,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env={**os.environ, **endpoint.credentials_env()},
    )


def _create_tables(endpoint: Endpoint, bucket: str, count: int) -> list[str]:
    from deltaguard.localstack.delta_append import create_table
    from deltaguard.logstore.s3_conditional import S3ConditionalLogStore

    endpoint.s3_client().create_bucket(Bucket=bucket)
    store = S3ConditionalLogStore(endpoint.s3_client())
    tables = [f"s3://{bucket}/soak{i}" for i in range(count)]
    for table in tables:
        create_table(store, table, arrow_schema())
    return tables


def _missing_files(endpoint: Endpoint, table: str) -> list[str]:
    """Files any retained log entry of ``table`` names that are not in the bucket."""
    from deltaguard.logstore.clients import ClientPolicy, s3_client
    from deltaguard.tools.deltalog.snapshot import load_snapshot
    from deltaguard.tools.orphans.references import collect_references
    from deltaguard.tools.storage import open_table

    client = s3_client(
        endpoint.url,
        endpoint.region,
        endpoint.access_key,
        endpoint.secret_key,
        path_style=True,
        policy=ClientPolicy.READ,
    )
    store = open_table(table, client=client)
    refs = collect_references(load_snapshot(store), cutoff_ms=0)
    present = {info.path for info in store.walk()}
    return sorted(set(refs.named_in_log) - present)


def _deltars_read(endpoint: Endpoint, tables: list[str]) -> dict[str, dict[str, Any]]:
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    report = {}
    for table in tables:
        dt = DeltaTable(table, storage_options=endpoint.delta_rs_options())
        data = dt.to_pyarrow_table(columns=["append_id"])
        counts = pc.value_counts(data["append_id"]).to_pylist()
        report[table] = {
            "versions": sorted(int(h["version"]) for h in dt.history()),
            "rows": data.num_rows,
            "per_append": {c["values"]: int(c["counts"]) for c in counts},
        }
    return report


def _spark_read(endpoint: Endpoint, tables: list[str], workdir: Path) -> dict[str, dict[str, Any]]:
    log = workdir / "reader-spark.log"
    args = [
        "--engine",
        "spark",
        "--read",
        "--writer",
        "reader",
        "--tables",
        ",".join(tables),
        "--endpoint",
        endpoint.url,
        "--ledger",
        str(workdir / "reader.unused"),
        "--stop-file",
        str(workdir / "reader.unused"),
        "--local-dir",
        str(workdir / "spark-reader"),
    ]
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "deltaguard.localstack.soak_worker", *args],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=driver_env(endpoint),
        )
    return job_result(proc, log, 900, name="soak Spark reader")[1]


def _copy_tables(endpoint: Endpoint, bucket: str, target: Path) -> None:
    """Every object of the soak's bucket, to ``target`` (kept for inspection)."""
    s3 = endpoint.s3_client()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            path = target / obj["Key"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read())


def _say(message: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", flush=True)


@dataclass
class _PassResult:
    """One cleanup pass: per table run, when it ended (monotonic) and the files it deleted."""

    runs: list[tuple[float, int]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _cleanup_pass(
    tables: list[str], endpoint: Endpoint, retention_s: float, manifests: Path
) -> _PassResult:
    """``orphans --delete --yes`` at ``retention_s`` on every table, one after the other."""
    result = _PassResult()
    for table in tables:
        manifest = manifests / f"{time.time_ns()}-{table.rsplit('/', 1)[-1]}"
        out = _cli(
            "orphans",
            table,
            "--delete",
            "--yes",
            "--retention",
            repr(retention_s / 3600),
            "--unsafe-retention",
            "--json",
            "--manifest",
            str(manifest),
            endpoint=endpoint,
        )
        if out.returncode != 0:
            result.problems.append(f"orphans {table} exited {out.returncode}: {out.stderr[-500:]}")
            continue
        cleanup = json.loads(out.stdout).get("cleanup") or {}
        count = cleanup["counts"]["deleted"] if cleanup else 0
        result.runs.append((time.monotonic(), count))
        _say(f"orphans --delete --yes --retention {retention_s:g}s {table}: {count} deleted")
    return result


def _longest_operations(ops: dict[str, Operation]) -> dict[str, float]:
    """Per engine, the longest operation that recorded its outcome (seconds)."""
    longest: dict[str, float] = {}
    for op in ops.values():
        if op.seconds is not None:
            longest[op.engine] = max(longest.get(op.engine, 0.0), op.seconds)
    return {engine: round(seconds, 1) for engine, seconds in sorted(longest.items())}


@dataclass
class _Writing:
    """The soak's writers while they write, and what the writing and stopping phases of
    :func:`run_soak` leave for the checks: problems, kills, the cleanup passes."""

    config: SoakConfig
    tables: list[str]
    proxies: dict[str, FaultProxy]
    workers: list[_Worker]
    workdir: Path
    stop_file: Path
    #: :attr:`SoakConfig.write_deadline_s`, read once the writers started.
    write_deadline_s: float
    problems: list[str] = field(default_factory=list)
    #: The random kills (not the deadline kills).
    kills: int = 0
    deadline_kills: int = 0
    passes: list[_PassResult] = field(default_factory=list)
    #: The cleanup pass running in the background, if any.
    cleaning: Future[_PassResult] | None = None

    def write(self, rng: random.Random, cleanup: ThreadPoolExecutor) -> None:
        """The writing phase, ``config.duration_s`` long: every tick, restarts writers that
        exited and kills those past the write deadline; kills a random writer at exponential
        gaps; starts a cleanup pass on ``cleanup`` every ``orphans_every_s``."""
        config = self.config
        started = time.monotonic()
        deadline = started + config.duration_s
        # Exponential gaps (mean kill_every_s); the first kill is in the first half of the run,
        # so every run, however short, kills at least one writer.
        next_kill = started + min(rng.expovariate(1 / config.kill_every_s), config.duration_s / 2)
        next_orphans = started + config.orphans_every_s
        while time.monotonic() < deadline:
            time.sleep(_TICK_S)
            now = time.monotonic()
            self._restart_exited_and_overdue()
            if now >= next_kill:
                self._kill_at_random(rng)
                next_kill = now + rng.expovariate(1 / config.kill_every_s)
            self._collect_pass()
            if self.cleaning is None and now >= next_orphans:
                self.cleaning = cleanup.submit(
                    _cleanup_pass,
                    self.tables,
                    self.proxies["tools"].endpoint,
                    config.cleanup_retention_s,
                    self.workdir / "manifests",
                )
                next_orphans = now + config.orphans_every_s

    def stop(self) -> float:
        """Tells the writers to stop and waits for them and for a cleanup pass still running
        (the write deadline still holds; after 300 s every writer is killed), then records
        writers that exited with an error. Returns when the stop was given (monotonic)."""
        self.stop_file.touch()
        stopped_at = time.monotonic()
        _say("stop: waiting for the writers to finish their current operation")
        # The write deadline holds here too, so that no operation ever outlives it; a cleanup
        # pass still running goes on next to the writers' last operations.
        stop_by = time.monotonic() + 300
        while self.cleaning is not None or any(
            w.process is not None and w.process.poll() is None for w in self.workers
        ):
            time.sleep(_TICK_S)
            self._collect_pass()
            for w in self.workers:
                running_s = w.kill_if_overdue(self.write_deadline_s)
                if running_s is not None:
                    self.deadline_kills += 1
                    _say(f"SIGKILL {w.name}: its operation ran {running_s:.0f} s (stopping)")
            if time.monotonic() > stop_by:
                self.problems.append("writers did not stop within 300 s; killed")
                for w in self.workers:
                    w.kill()
                stop_by = float("inf")
        for w in self.workers:
            assert w.process is not None
            if w.process.returncode not in (0, -signal.SIGKILL):
                self.problems.append(f"{w.name} exited with {w.process.returncode}; log {w.log}")
        return stopped_at

    def _restart_exited_and_overdue(self) -> None:
        """One tick's look at every writer: one that exited by itself is a problem and is
        restarted; one whose operation ran past the write deadline is killed and restarted."""
        for w in self.workers:
            if w.process is not None and w.process.poll() is not None:
                self.problems.append(
                    f"{w.name} exited by itself with {w.process.returncode}; log {w.log}"
                )
                w.start()
            running_s = w.kill_if_overdue(self.write_deadline_s)
            if running_s is not None:
                self.deadline_kills += 1
                _say(f"SIGKILL {w.name}: its operation ran {running_s:.0f} s; restarting it")
                w.start()

    def _kill_at_random(self, rng: random.Random) -> None:
        victim = rng.choice(self.workers)
        victim.kill()
        self.kills += 1
        _say(f"SIGKILL {victim.name} (kill {self.kills}); restarting it")
        victim.start()

    def _collect_pass(self) -> None:
        """Keeps the result of the background cleanup pass, once it is done."""
        if self.cleaning is not None and self.cleaning.done():
            self.passes.append(self.cleaning.result())
            self.cleaning = None


def _start_writing(
    stack: ExitStack, upstream: Endpoint, config: SoakConfig, tables: list[str], workdir: Path
) -> _Writing:
    """One fault proxy per engine and one for the tools, then every writer started (all
    stopped with ``stack``)."""
    engines = {
        "spark": config.spark_writers,
        "python": config.python_writers,
        "deltars": config.deltars_writers,
    }
    proxies: dict[str, FaultProxy] = {}
    for i, engine in enumerate([*engines, "tools"]):
        proxy = stack.enter_context(FaultProxy(upstream, workdir, seed=config.seed * 10 + i))
        proxy.set_rules(fault_rules(config.fault_rate, lost_responses=engine != "deltars"))
        proxies[engine] = proxy
    stop_file = workdir / "STOP"
    ledgers = workdir / "ledgers"
    workers = [
        _Worker(
            f"{engine}{n}",
            engine,
            [
                "--engine",
                engine,
                "--writer",
                f"{engine}{n}",
                "--tables",
                ",".join(tables),
                "--endpoint",
                proxies[engine].endpoint.url,
                "--ledger",
                str(ledgers / f"{engine}{n}.jsonl"),
                "--stop-file",
                str(stop_file),
                "--seed",
                str(config.seed),
                "--pause",
                str(0.2 if engine == "spark" else config.light_writer_pause_s),
                "--local-dir",
                str(workdir / f"spark-{engine}{n}"),
            ],
            workdir / f"{engine}{n}.log",
            ledgers / f"{engine}{n}.jsonl",
        )
        for engine, count in engines.items()
        for n in range(count)
    ]
    for w in workers:
        stack.callback(w.kill)
    for w in workers:
        w.start()
    writing = _Writing(
        config, tables, proxies, workers, workdir, stop_file, config.write_deadline_s
    )
    _say(
        f"{len(workers)} writers on {len(tables)} tables for {config.duration_s:.0f} s; "
        f"cleanup retention {config.cleanup_retention_s:g} s, write deadline "
        f"{writing.write_deadline_s:g} s"
    )
    return writing


def _final_cleanup(upstream: Endpoint, tables: list[str], problems: list[str]) -> None:
    """Once the writers stopped: ``orphans --delete --yes`` at retention 0 on every table."""
    for table in tables:
        out = _cli(
            "orphans",
            table,
            "--delete",
            "--yes",
            "--retention",
            "0",
            "--unsafe-retention",
            endpoint=upstream,
        )
        _say(f"orphans --retention 0 --delete --yes {table}: exit {out.returncode}")
        if out.returncode != 0:
            problems.append(f"final orphans {table} exited {out.returncode}: {out.stderr[-500:]}")


def _audit(upstream: Endpoint, tables: list[str], problems: list[str]) -> tuple[bool, list[str]]:
    """``deltaguard audit`` on every table, and the files retained log entries name that are
    missing: (every audit healthy, the missing files as ``<table>/<path>``)."""
    audit_healthy = True
    missing: list[str] = []
    for table in tables:
        out = _cli("audit", table, "--json", endpoint=upstream)
        if out.returncode != 0:
            audit_healthy = False
            problems.append(
                f"audit {table} exited {out.returncode}: {out.stdout[-1500:]}{out.stderr[-500:]}"
            )
        gone = _missing_files(upstream, table)
        missing += [f"{table}/{p}" for p in gone]
    return audit_healthy, missing


def run_soak(upstream: Endpoint, config: SoakConfig, workdir: Path) -> SoakResult:
    """Runs the soak against ``upstream`` (a running S3 server); see the module docstring."""
    rng = random.Random(config.seed)
    bucket = f"soak-{uuid.uuid4().hex[:8]}"
    tables = _create_tables(upstream, bucket, config.tables)
    with ExitStack() as stack:
        writing = _start_writing(stack, upstream, config, tables, workdir)
        writing.write(rng, stack.enter_context(ThreadPoolExecutor(max_workers=1)))
        stopped_at = writing.stop()
        passes, problems = writing.passes, writing.problems
        # Counted only from table runs that ended before the stop: all writers were writing.
        deleted_while_writing = sum(n for p in passes for end, n in p.runs if end <= stopped_at)
        deleted_by_passes = sum(n for p in passes for _, n in p.runs)
        problems += [problem for p in passes for problem in p.problems]
        faults = sum(sum(proxy.fired()) for proxy in writing.proxies.values())
        fault_stats = {e: p.fired() for e, p in writing.proxies.items()}
    _say(f"writers stopped; faults fired per proxy (rule order of fault_rules): {fault_stats}")

    _final_cleanup(upstream, tables, problems)
    audit_healthy, missing = _audit(upstream, tables, problems)
    readers = {
        "spark": _spark_read(upstream, tables, workdir),
        "delta-rs": _deltars_read(upstream, tables),
    }
    ops = read_ledgers(sorted((workdir / "ledgers").glob("*.jsonl")))
    verdict = check(ops, readers, tables)
    longest = _longest_operations(ops)
    write_deadline_s = writing.write_deadline_s
    if longest and max(longest.values()) > write_deadline_s + _TICK_S:
        problems.append(
            f"an operation ran {max(longest.values())} s, past the write deadline of "
            f"{write_deadline_s:g} s: the cleanup retention no longer covers every write"
        )
    commits = sum(len(readers["delta-rs"][t]["versions"]) - 1 for t in tables)
    result = SoakResult(
        commits=commits,
        faults=faults,
        kills=writing.kills,
        deleted_while_writing=deleted_while_writing,
        missing_files=len(missing),
        audit_healthy=audit_healthy,
        verdict=verdict,
        problems=problems + [f"missing file: {m}" for m in missing],
        details={
            "outcomes": dict(sorted(verdict.outcomes.items())),
            "faults_per_proxy": fault_stats,
            "writer_starts": {w.name: w.starts for w in writing.workers},
            "cleanup_retention_s": config.cleanup_retention_s,
            "write_deadline_s": write_deadline_s,
            "longest_operation_s": longest,
            "deadline_kills": writing.deadline_kills,
            "cleanup_passes": len(passes),
            "deleted_by_passes_in_all": deleted_by_passes,
            "rows": {t: readers["spark"][t]["rows"] for t in tables},
            "versions": {t: len(readers["spark"][t]["versions"]) for t in tables},
        },
    )
    (workdir / "soak-result.json").write_text(
        json.dumps(
            {**result.details, "violations": verdict.violations, "problems": result.problems},
            indent=2,
        )
    )
    if not result.ok:
        _copy_tables(upstream, bucket, workdir / "tables")
    return result


@contextmanager
def _server(kind: str, workdir: Path) -> Iterator[Endpoint]:
    if kind == "versitygw":
        from deltaguard.localstack.versitygw_server import VersityGWServer

        with VersityGWServer(workdir / "versitygw") as server:
            yield server.endpoint
    elif kind == "minio":
        from deltaguard.localstack.minio_server import MinIOServer

        with MinIOServer(workdir / "minio") as minio:
            yield minio.endpoint
    else:
        from deltaguard.localstack.localstack_server import LocalStackServer

        with LocalStackServer(workdir / "localstack", services="s3") as ls:
            yield ls.endpoint


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaguard.localstack.soak")
    parser.add_argument(
        "--duration", type=float, default=900.0, help="seconds of writing (default 900)"
    )
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument(
        "--server", choices=["localstack", "versitygw", "minio"], default="localstack"
    )
    parser.add_argument("--tables", type=int, default=3)
    parser.add_argument("--spark-writers", type=int, default=2, help="Spark driver JVMs at once")
    parser.add_argument("--python-writers", type=int, default=2)
    parser.add_argument("--deltars-writers", type=int, default=2)
    parser.add_argument("--kill-every", type=float, default=60.0, help="mean seconds between kills")
    parser.add_argument(
        "--orphans-every", type=float, default=60.0, help="seconds between cleanup passes"
    )
    parser.add_argument(
        "--cleanup-retention",
        type=float,
        default=180.0,
        help="seconds: the retention of the cleanup passes while writers write; an operation "
        f"running longer than this minus {settle_margin_s():g} s has its writer killed "
        "(default 180)",
    )
    parser.add_argument("--fault-rate", type=float, default=1.0, help="scales every fault rate")
    parser.add_argument("--workdir", type=Path, help="logs, ledgers (default: a new temp dir)")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="deltaguard-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    config = SoakConfig(
        duration_s=args.duration,
        seed=args.seed,
        tables=args.tables,
        spark_writers=args.spark_writers,
        python_writers=args.python_writers,
        deltars_writers=args.deltars_writers,
        kill_every_s=args.kill_every,
        orphans_every_s=args.orphans_every,
        cleanup_retention_s=args.cleanup_retention,
        fault_rate=args.fault_rate,
    )
    _say(f"server {args.server}, seed {args.seed}, work directory {workdir}")
    with _server(args.server, workdir) as endpoint:
        result = run_soak(endpoint, config, workdir)
    _say(f"outcomes: {result.details['outcomes']}")
    for line in result.verdict.violations[:50] + result.problems[:50]:
        print(f"VIOLATION: {line}", flush=True)
    if result.ok:
        shutil.rmtree(workdir / "tables", ignore_errors=True)
    else:
        print(f"soak: FAILED; logs, ledgers and a copy of the tables kept in {workdir}", flush=True)
    print(result.summary_line(), flush=True)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
