"""The rolling migration from DynamoDB to conditional writes under continuous writes, and its
negative control, on LocalStack with DynamoDB Local (docs/guides/migration.md is the runbook it follows;
the protocol argument is the javadoc of ``S3TransitionLogStore``).

:func:`run_rolling_migration`: writer jobs (deltaguard's Python committer, a Spark driver, and
delta-rs from phase 2) append to one table while the phases move on. Phase 1 starts transition
jobs next to the plain DynamoDB jobs, then the plain jobs end; phase 2 starts conditional writers
(Python and delta-rs) next to the transition jobs; phase 3 ends the transition jobs and starts
their replacements on ``s3-conditional``. Each phase waits for commits of named jobs (or of jobs
started after the phase began), never for a time span, so it holds however fast the writers are.
Transition writers are SIGKILLed at each crash point (after the temp file, after the PutItem,
during the create of N.json, before the entry is completed; the last two again in phase 2,
where a conditional writer may take the dead writer's version), and the others recover them.
``migrate status`` is read at every phase. The result counts commits lost (a writer was told
success, no version holds it) and duplicated (one append at two versions) against the raw log:
the commit files listed and parsed with boto3 and ``json`` (:func:`~deltaguard.localstack.race.raw_commit_tags`),
not deltaguard's own log reader.

:func:`run_negative_control`: the staged race of a plain DynamoDB writer and a conditional
writer on one version (the proxy holds the plain writer's copy to N.json until the conditional
writer's PUT of N.json was answered): how many commits the conditional writers lose (the raw
log holds no commit file with their tag). The same
race with the transition store instead loses none.

Run: ``python -m deltaguard.localstack.migration [--long]`` (``make soak`` runs ``--long``).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from deltaguard.localstack.append_job import arrow_schema
from deltaguard.localstack.delta_append import append, create_table
from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.fault_proxy import FaultProxy, FaultRule
from deltaguard.localstack.multi_driver import DriverFailedError, job_result, kill_when, start_job
from deltaguard.localstack.race import hold_one_commit_put, raw_commit_tags
from deltaguard.logstore.preset_name import PresetName
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore
from deltaguard.logstore.s3_location import S3Location
from deltaguard.logstore.s3_transition import S3TransitionLogStore
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.deltalog.findings import Severity
from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
from deltaguard.tools.migrate_status import migrate_status
from deltaguard.tools.storage import open_table

COMMIT_KEY = r"/_delta_log/\d{20}\.json$"

#: Each crash point of the transition store: the fault-proxy rules that freeze a writer there.
CRASH_POINTS: dict[str, list[FaultRule]] = {
    # the temp file landed; the PutItem is held (never lands)
    "after-temp-file": [FaultRule("hang", target="PutItem", times=1, delay_s=120)],
    # the PutItem landed; the create of N.json is held
    "after-putitem": [FaultRule("hang", method="PUT", path_regex=COMMIT_KEY, times=1, delay_s=120)],
    # the create of N.json landed, its answer was lost; the read-back is held
    "during-create": [
        FaultRule("drop_response", method="PUT", path_regex=COMMIT_KEY, times=1),
        FaultRule("hang", method="GET", path_regex=COMMIT_KEY, after=0, times=1, delay_s=120),
    ],
    # N.json holds the commit; marking the entry complete is held (the PUT of N.json only arms
    # the hang: the reads and repairs of the job before it send PutItems and PUTs of their own)
    "before-complete": [
        FaultRule("delay", method="PUT", path_regex=COMMIT_KEY, times=1, delay_s=0),
        FaultRule("hang", target="PutItem", after=0, times=1, delay_s=120),
    ],
}


@dataclass
class MigrationConfig:
    """Sizes of the run: appends per job and phase; ``spark``: a Spark driver on the transition
    preset runs through phases 1 and 2."""

    plain_appends: int = 4
    transition_appends: int = 10
    conditional_appends: int = 8
    deltars_appends: int = 2
    spark_appends: int = 2
    spark: bool = True
    phase2_kills: tuple[str, ...] = ("after-putitem",)


@dataclass
class MigrationResult:
    run_id: str
    claimed: list[str]
    found: list[str]
    failed: list[dict[str, str]]
    kills: list[str]
    statuses: dict[str, dict[str, Any]]
    audit_codes: list[str]
    audit_errors: list[str]
    versions: list[int]
    engines: dict[str, int]
    wall_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def lost(self) -> list[str]:
        found = set(self.found)
        return sorted(t for t in self.claimed if t not in found)

    @property
    def duplicated(self) -> list[str]:
        return sorted({t for t in self.found if self.found.count(t) > 1})

    def summary_line(self) -> str:
        phases = ", ".join(
            f"{k}={v['phase']}{'!' if v['unsafe'] else ''}" for k, v in self.statuses.items()
        )
        return (
            f"rolling migration: {len(self.claimed)} appends claimed by "
            f"{sum(self.engines.values())} writer jobs ({', '.join(f'{e} {n}' for e, n in sorted(self.engines.items()))}), "
            f"{len(self.found)} found, {len(self.lost)} lost, {len(self.duplicated)} duplicated, "
            f"{len(self.failed)} failed visibly; {len(self.kills)} SIGKILLs "
            f"({', '.join(self.kills)}); status: {phases}; audit errors: {len(self.audit_errors)}; "
            f"{self.wall_s:.0f} s"
        )


class _Jobs:
    """Writer job processes of one run (append_job), each with its own writer number."""

    def __init__(self, table: str, commit_table: str, workdir: Path, run_id: str) -> None:
        self.table = table
        self.commit_table = commit_table
        self.workdir = workdir
        self.run_id = run_id
        self.next_writer = 0
        self.running: list[tuple[str, Any, Path]] = []
        self.reports: list[dict[str, Any]] = []
        self.engines: dict[str, int] = {}
        self.writers: dict[Any, int] = {}

    def tag(self, proc: Any) -> str:
        """The user metadata prefix of the commits of the job ``proc`` (``run_id/wN/``)."""
        return f"{self.run_id}/w{self.writers[proc]}/"

    def _args(self, engine: str, preset: PresetName, appends: int, endpoint: str) -> list[str]:
        writer = self.next_writer
        self.next_writer += 1
        args = ["append", "--engine", engine, "--table", self.table]
        args += ["--logstore", preset.value, "--endpoint", endpoint]
        if preset.uses_dynamodb:
            args += ["--dynamodb-table", self.commit_table]
        args += ["--writer", str(writer), "--appends", str(appends), "--rows", "2"]
        args += ["--run-id", self.run_id, "--local-dir", str(self.workdir / f"spark-w{writer}")]
        return args

    def start(self, engine: str, preset: PresetName, appends: int, endpoint: str) -> Any:
        args = self._args(engine, preset, appends, endpoint)
        writer = int(args[args.index("--writer") + 1])
        name = f"{engine}-{preset.value}-w{writer}"
        log = self.workdir / f"{name}.log"
        proc = start_job(args, log)
        self.writers[proc] = writer
        self.running.append((name, proc, log))
        key = f"{engine} {preset.value}"
        self.engines[key] = self.engines.get(key, 0) + 1
        return proc

    def wait(self, procs: list[Any], timeout_s: float = 900) -> None:
        for name, proc, log in [r for r in self.running if r[1] in procs]:
            self.reports.append(job_result(proc, log, timeout_s, name=name)[1])
            self.running = [r for r in self.running if r[1] is not proc]

    def kill_at(self, proxy: FaultProxy, point: str) -> None:
        """A transition job through the proxy, frozen at ``point`` and SIGKILLed there."""
        rules = CRASH_POINTS[point]
        proxy.set_rules(rules)
        proxy.reset_requests()
        args = self._args("python", PresetName.S3_DYNAMODB_TRANSITION, 1, proxy.endpoint.url)
        log = self.workdir / f"killed-{point}-{self.next_writer}.log"
        proc = start_job(args, log)
        want = [1] * len(rules)
        try:
            kill_when(proc, lambda: proxy.fired() == want, log, timeout_s=120)
        except DriverFailedError as exc:
            seen = "\n".join(
                f"  {r['kind']} {r['path']} -> {r['status']}" for r in proxy.requests()
            )
            raise DriverFailedError(
                f"{exc}\nrules fired {proxy.fired()}; requests:\n{seen}"
            ) from exc
        proxy.set_rules([])


def _wait_for_commit_after(s3: Any, table: str, moment: float, timeout_s: float = 300) -> None:
    """Until some commit of ``table`` was written after ``moment`` (epoch s)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        listing = open_table(table, client=s3).list_dir("_delta_log")
        if any(i.path.endswith(".json") and i.mtime_ms / 1000 > moment for i in listing):
            return
        time.sleep(0.5)
    raise TimeoutError(f"no commit of {table} after {moment}")


def _wait_for_commit_by(
    s3: Any,
    bucket: str,
    table_key: str,
    tags: list[str],
    *,
    every: bool = False,
    timeout_s: float = 300,
) -> None:
    """Until a commit file of the table ``table_key`` in ``bucket`` carries user metadata
    starting with one of ``tags`` (a writer's ``run_id/wN/`` prefix; ``every``: one commit for
    each tag), as the raw log says (:func:`raw_commit_tags`): unlike a wall-clock boundary,
    this holds however fast those writers were, even if they have all finished."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = set(raw_commit_tags(s3, bucket, table_key).values())
        seen = [any(m and m.startswith(tag) for m in found) for tag in tags]
        if all(seen) if every else any(seen):
            return
        time.sleep(0.5)
    raise TimeoutError(f"no commit of {table_key} by {'each' if every else 'any'} of {tags}")


def run_rolling_migration(
    endpoint: Endpoint,
    proxy: FaultProxy,
    bucket: str,
    commit_table: str,
    workdir: Path,
    config: MigrationConfig | None = None,
) -> MigrationResult:
    """The whole migration (see the module docstring); writers reach LocalStack directly, the
    jobs killed at crash points go through ``proxy``."""
    config = config or MigrationConfig()
    started = time.monotonic()
    run_id = uuid.uuid4().hex[:8]
    table_key = "migrating"
    table = f"s3a://{bucket}/{table_key}"
    s3, ddb = endpoint.s3_client(), endpoint.dynamodb_client()
    plain_store = S3DynamoDBLogStore(s3, ddb, commit_table)
    create_table(plain_store, table, arrow_schema())
    jobs = _Jobs(table, commit_table, workdir, run_id)
    kills: list[str] = []
    statuses: dict[str, dict[str, Any]] = {}

    def status(name: str, window_s: float | None = None) -> dict[str, Any]:
        st = migrate_status(
            open_table(table, client=s3), ddb, commit_table, (table,), window_s=window_s
        )
        statuses[name] = {"phase": str(st.phase), "unsafe": st.unsafe, "next": st.next_step}
        return statuses[name]

    url = endpoint.url
    status("0-dynamodb")
    plain = [
        jobs.start("python", PresetName.S3_DYNAMODB, config.plain_appends, url) for _ in range(2)
    ]
    _wait_for_commit_after(s3, table, time.time() - 1)
    # phase 1: transition jobs start next to the plain ones, one at a time
    transition = [
        jobs.start("python", PresetName.S3_DYNAMODB_TRANSITION, config.transition_appends, url)
    ]
    if config.spark:
        transition.append(
            jobs.start("spark", PresetName.S3_DYNAMODB_TRANSITION, config.spark_appends, url)
        )
    for point in CRASH_POINTS:
        jobs.kill_at(proxy, point)
        kills.append(f"phase1:{point}")
    status("1-in-progress")
    jobs.wait(plain)
    plain_done = time.time()
    # S3 keeps modification times in whole seconds: a writer that starts 3 s after the phase
    # ended commits after ``plain_done + 2`` even if it finishes within a second.
    time.sleep(3)
    transition.append(
        jobs.start("python", PresetName.S3_DYNAMODB_TRANSITION, config.transition_appends, url)
    )
    _wait_for_commit_after(s3, table, plain_done + 2)
    status("1-done", window_s=time.time() - plain_done - 1)
    # phase 2: conditional writers (deltaguard's and delta-rs) join the transition jobs
    conditional = [
        jobs.start("python", PresetName.S3_CONDITIONAL, config.conditional_appends, url),
        jobs.start("delta-rs", PresetName.S3_CONDITIONAL, config.deltars_appends, url),
    ]
    for point in config.phase2_kills:
        jobs.kill_at(proxy, point)
        kills.append(f"phase2:{point}")
    # A transition writer that starts after the kills commits (its listing first completes
    # any entry a killed writer left), however fast the other jobs were: so no version that a
    # killed writer claimed is first written in phase 3.
    witness = jobs.start("python", PresetName.S3_DYNAMODB_TRANSITION, 2, url)
    transition.append(witness)
    _wait_for_commit_by(
        s3, bucket, table_key, [jobs.tag(p) for p in [*conditional, witness]], every=True
    )
    status("2-mixed", window_s=time.time() - plain_done - 1)
    # phase 3: the transition jobs end and come back on s3-conditional
    jobs.wait(transition)
    transition_done = time.time()
    time.sleep(3)  # whole-second modification times: as in phase 1
    conditional.append(
        jobs.start("python", PresetName.S3_CONDITIONAL, config.conditional_appends, url)
    )
    _wait_for_commit_after(s3, table, transition_done + 2)
    status("3-conditional", window_s=time.time() - transition_done - 1)
    jobs.wait(conditional)
    # a transition reader's listing completes any entry a killed writer left (recovery)
    S3TransitionLogStore(s3, ddb, commit_table).list_from(f"{table}/_delta_log/{0:020d}.json")
    # the oracle: the raw log (boto3 list + GET, JSON parsed here), not a deltaguard reader
    raw = raw_commit_tags(s3, bucket, table_key)
    found = [
        tag for _, tag in sorted(raw.items()) if tag is not None and tag.startswith(run_id + "/")
    ]
    audit = audit_table(
        open_table(table, client=s3), dynamodb=DynamoDBCheck(ddb, commit_table, (table,))
    )
    return MigrationResult(
        run_id=run_id,
        claimed=[t for r in jobs.reports for t in r["committed"]],
        found=found,
        failed=[e for r in jobs.reports for e in r["errors"]],
        kills=kills,
        statuses=statuses,
        audit_codes=sorted({f.code for f in audit.findings}),
        audit_errors=[f.message for f in audit.findings if f.severity is Severity.ERROR],
        versions=sorted(raw),
        engines=jobs.engines,
        wall_s=time.monotonic() - started,
    )


@dataclass
class RaceResult:
    """The staged race, ``rounds`` times: commits the conditional writer was told succeeded
    that no version holds (``lost``), and versions both writers were told they committed."""

    neighbour: str
    rounds: int
    lost: int
    both_claimed_one_version: int

    def line(self) -> str:
        return (
            f"negative control ({self.neighbour} + conditional writer, staged race): "
            f"{self.lost}/{self.rounds} conditional commits lost, "
            f"{self.both_claimed_one_version} versions claimed by both writers"
        )


def _rows(tag: str) -> pa.Table:
    return pa.table({"writer": [0], "batch": [0], "seq": [0], "payload": [tag]}).cast(
        arrow_schema()
    )


def _race_round(
    proxy: FaultProxy, dynamo: Any, conditional: Any, bucket: str, table_key: str, put: Any
) -> tuple[bool, bool]:
    """One staged race on the table ``table_key`` in ``bucket``: (the conditional commit is
    lost from the raw log, both writers were told they committed the same version)."""
    table = f"s3a://{bucket}/{table_key}"
    proxy.set_rules([hold_one_commit_put(timeout_s=60)])
    versions: dict[str, int] = {}
    errors: list[BaseException] = []

    def dynamo_append() -> None:
        try:
            versions["dynamodb"] = append(dynamo, put, table, _rows("d"), user_metadata="d")
        except BaseException as exc:  # reported below
            errors.append(exc)

    held = threading.Thread(target=dynamo_append)
    held.start()
    deadline = time.monotonic() + 60
    while proxy.fired() != [1] and time.monotonic() < deadline:
        time.sleep(0.05)
    versions["conditional"] = append(conditional, put, table, _rows("c"), user_metadata="c")
    held.join(120)
    proxy.set_rules([])
    if errors:
        raise RuntimeError(f"the DynamoDB writer failed: {errors[0]!r}")
    tags = set(raw_commit_tags(conditional.s3, bucket, table_key).values())
    return "c" not in tags, versions["conditional"] == versions["dynamodb"]


def run_negative_control(
    proxy: FaultProxy, bucket: str, commit_table: str, *, rounds: int = 3, transition: bool = False
) -> RaceResult:
    """Per round, a fresh table: a DynamoDB writer (plain, or with ``transition`` the transition
    store) wins the PutItem of version 1 and its create of 1.json is held by the proxy until a
    conditional writer's PUT of 1.json was answered; then both finish. Counts the conditional
    writer's commits that no version holds afterwards."""
    ep = proxy.endpoint
    s3, ddb = ep.s3_client(), ep.dynamodb_client()
    lost = both = 0

    def put(uri: str, data: bytes) -> None:
        loc = S3Location.parse(uri)
        s3.put_object(Bucket=loc.bucket, Key=loc.key, Body=data)

    for r in range(rounds):
        table_key = f"race-{'t' if transition else 'p'}{r}"
        table = f"s3a://{bucket}/{table_key}"
        dynamo: Any = (S3TransitionLogStore if transition else S3DynamoDBLogStore)(
            s3, ddb, commit_table
        )
        create_table(dynamo, table, arrow_schema())
        round_lost, round_both = _race_round(
            proxy, dynamo, S3ConditionalLogStore(s3), bucket, table_key, put
        )
        lost += round_lost
        both += round_both
    return RaceResult(
        "transition store" if transition else "plain DynamoDB store", rounds, lost, both
    )


def main(argv: list[str] | None = None) -> int:
    """The long variant for ``make soak``: a bigger migration and more race rounds."""
    from deltaguard.localstack.localstack_server import LocalStackServer
    from deltaguard.logstore.dynamodb_table import create_table as create_commit_table

    parser = argparse.ArgumentParser(prog="python -m deltaguard.localstack.migration")
    parser.add_argument("--long", action="store_true", help="the soak's sizes")
    parser.add_argument("--workdir", type=Path, default=Path("migration-run"))
    args = parser.parse_args(argv)
    config = (
        MigrationConfig(
            plain_appends=15,
            transition_appends=40,
            conditional_appends=30,
            deltars_appends=10,
            spark_appends=10,
            phase2_kills=tuple(CRASH_POINTS),
        )
        if args.long
        else MigrationConfig()
    )
    args.workdir.mkdir(parents=True, exist_ok=True)
    with LocalStackServer(args.workdir / "localstack") as server:
        ep = server.endpoint
        bucket = f"dg-{uuid.uuid4().hex[:12]}"
        ep.s3_client().create_bucket(Bucket=bucket)
        commit_table = f"delta_log_{uuid.uuid4().hex[:10]}"
        create_commit_table(ep.dynamodb_client(), commit_table)
        with FaultProxy(ep, args.workdir, seed=7) as proxy:
            result = run_rolling_migration(ep, proxy, bucket, commit_table, args.workdir, config)
            rounds = 10 if args.long else 3
            races = [
                run_negative_control(proxy, bucket, commit_table, rounds=rounds),
                run_negative_control(proxy, bucket, commit_table, rounds=rounds, transition=True),
            ]
    print(result.summary_line())
    for race in races:
        print(race.line())
    print(json.dumps({"statuses": result.statuses, "audit_codes": result.audit_codes}))
    bad = result.lost or result.duplicated or result.audit_errors or races[1].lost
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
