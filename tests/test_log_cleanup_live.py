"""``deltaguard log-cleanup --yes`` next to live writers and readers on LocalStack (issue 51,
"cleanup next to live Spark and delta-rs writers").

Two tables in one bucket: ``s3a://.../conditional``, appended to at once by a Spark driver
committing through the ``s3-conditional`` preset's LogStore and by delta-rs (plain conditional
PUT: no locking provider, no unsafe rename); ``s3://.../dynamodb``, appended to by the same
Spark driver through the ``s3-dynamodb`` preset's LogStore (Delta's ``S3DynamoDBLogStore``
protocol on a DynamoDB table on LocalStack). The Spark driver
(tests/log_cleanup_live_driver.py) and a delta-rs reader thread read a retained version of each
table by time travel after every append while the test, three times, checkpoints each table at
its latest version (delta-rs ``create_checkpoint``; the writers' own interval is 1000), makes
that version the table's floor, waits until no reader or writer operation begun under the old
floor is still running (the retention's promise, made explicit), and runs ``log-cleanup --yes``
on both tables. Every file expires: the run's clock is two days on with a retention of a day
(S3 sets the modification times, and Delta's cut-off is truncated to the UTC day), so each run
truncates at the checkpoint just written: the shortest retention Delta's rule allows.

Then a pending DynamoDB commit is staged by hand, as a ``S3DynamoDBLogStore`` writer that died
right after its commit point leaves it (``.tmp/N.json.<uuid>`` holding the commit, an entry
``complete = false``, no ``N.json``), and cleanup runs twice more on the quiet tables.

Proved: no read of a retained version, by Spark or delta-rs, failed during or after, and each
returned the rows the writers' ledger says (every version is one append of ROWS rows); no
writer failed; each run truncated at the checkpoint just written and removed every commit below
it; every finished temp commit of a removed version of the DynamoDB table went (one of a
retained version is commit-evidence and stays), the pending one survived every run,
and Spark's DynamoDB LogStore then recovered its commit (the latest version holds its rows);
time travel to a removed version fails in Spark with Delta's ``VersionNotFoundException``
("Cannot time travel") and in delta-rs with its own ("No files in log segment"). Last, in the
same Spark driver, Delta's own ``MetadataCleanup`` (``doLogCleanup``) runs on each table with
the clock of deltaguard's last run (a ``ManualClock``) and the tables' retention of a day: the
same cut-off as deltaguard's, every remaining log file older than it, and it removes nothing:
deltaguard left nothing Delta would remove and removed nothing Delta keeps.
"""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake
from dynamodb_entries import put_entry

from deltaguard.localstack.multi_driver import driver_env, job_result

pytestmark = pytest.mark.spark

DRIVER = Path(__file__).with_name("log_cleanup_live_driver.py")
ROWS = 3
DAY_MS = 86_400_000
ROUNDS = 3
TMP = "_delta_log/.tmp/"


def _rows(writer: int, batch: int) -> pa.Table:
    return pa.table(
        {
            "writer": pa.array([writer] * ROWS, pa.int32()),
            "batch": pa.array([batch] * ROWS, pa.int32()),
            "seq": pa.array(range(ROWS), pa.int64()),
        }
    )


def _counts(uri: str, options: dict[str, str], version: int | None) -> dict[str, int]:
    data = DeltaTable(uri, version=version, storage_options=options).to_pyarrow_table(
        columns=["writer", "batch"]
    )
    pairs = set(zip(data["writer"].to_pylist(), data["batch"].to_pylist(), strict=True))
    return {"rows": data.num_rows, "commits": len(pairs)}


def _expected(version: int) -> dict[str, int]:
    """The ledger's account of a version: every version after 0 (the empty create) is one
    append of ROWS rows by one writer's batch."""
    return {"rows": ROWS * version, "commits": version}


class _Floors:
    """The floor each table's cleanup keeps, published generation by generation, and the
    generation each worker last began an operation under."""

    def __init__(self, control: Path, workers: list[str]) -> None:
        self.control = control
        self.lock = threading.Lock()
        self.gen = 0
        self.floor: dict[str, int] = {}
        self.acks = dict.fromkeys(workers, 0)
        self.stop = threading.Event()

    def begin(self, worker: str) -> tuple[int, dict[str, int]]:
        with self.lock:
            self.acks[worker] = self.gen
            return self.gen, dict(self.floor)

    def publish(self, floor: dict[str, int]) -> int:
        with self.lock:
            self.gen += 1
            self.floor = dict(floor)
            doc = {"gen": self.gen, **floor}
        tmp = self.control / "floor.json.tmp"
        tmp.write_text(json.dumps(doc))
        tmp.replace(self.control / "floor.json")
        return self.gen

    def wait_acks(self, gen: int, proc: subprocess.Popen[str], timeout_s: float = 120) -> None:
        """Until every worker (the threads, and the Spark driver's ``ack-spark``) has begun an
        operation under ``gen``: none begun under an older floor is still running."""
        deadline = time.monotonic() + timeout_s
        ack = self.control / "ack-spark"
        while True:
            with self.lock:
                threads = min(self.acks.values())
            spark = int(ack.read_text()) if ack.exists() else 0
            if threads >= gen and spark >= gen:
                return
            assert proc.poll() is None, "the Spark driver ended early"
            assert time.monotonic() < deadline, (self.acks, spark, gen)
            time.sleep(0.05)


def _loop(
    floors: _Floors, worker: str, step: Callable[[int, dict[str, int]], None], errors: list[str]
) -> None:
    while not floors.stop.is_set():
        gen, floor = floors.begin(worker)
        try:
            step(gen, floor)
        except Exception as exc:  # recorded: the test asserts there is none
            errors.append(f"{worker}: {type(exc).__name__}: {exc}")
            return


def _keys(s3: Any, bucket: str, prefix: str) -> set[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return {o["Key"].removeprefix(prefix) for p in pages for o in p.get("Contents", [])}


def _commit_versions(keys: set[str]) -> list[int]:
    return sorted(
        int(k.removeprefix("_delta_log/")[:20])
        for k in keys
        if k.startswith("_delta_log/") and k.endswith(".json") and k.count("/") == 1
    )


def _end(proc: subprocess.Popen[str]) -> None:
    """Kills the driver's process group (its JVM too) if it is still running."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


def _has_log(s3: Any, bucket: str, prefix: str) -> bool:
    return bool(s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}_delta_log/").get("KeyCount"))


def _checkpoint(uris: dict[str, str], options: dict[str, str]) -> dict[str, int]:
    """A checkpoint of each table's latest version, written by delta-rs (with
    ``_last_checkpoint``); the versions. A second after the commit: Delta's cleanup passes over
    a checkpoint not newer than the file before it, and S3 times are in seconds."""
    tables = {n: DeltaTable(u, storage_options=options) for n, u in uris.items()}
    time.sleep(1.1)
    for dt in tables.values():
        dt.create_checkpoint()
    return {n: int(dt.version()) for n, dt in tables.items()}


def _stage_pending_commit(
    s3: Any, ddb: Any, commit_table: str, bucket: str, prefix: str, table_path: str, version: int
) -> str:
    """What an ``S3DynamoDBLogStore`` writer that died right after its commit point leaves:
    the commit in ``.tmp/N.json.<uuid>``, its entry ``complete = false``, no ``N.json``.
    Returns the temp file's key under the table."""
    buf = io.BytesIO()
    pq.write_table(_rows(2, 0), buf)
    data_name = f"part-staged-{uuid.uuid4()}.parquet"
    s3.put_object(Bucket=bucket, Key=prefix + data_name, Body=buf.getvalue())
    now = int(time.time() * 1000)
    actions = [
        {
            "commitInfo": {
                "timestamp": now,
                "operation": "WRITE",
                "operationParameters": {"mode": "Append"},
                "userMetadata": "staged/dynamodb",
                "isBlindAppend": True,
            }
        },
        {
            "add": {
                "path": data_name,
                "partitionValues": {},
                "size": len(buf.getvalue()),
                "modificationTime": now,
                "dataChange": True,
            }
        },
    ]
    name = f"{version:020d}.json"
    temp = f"{name}.{uuid.uuid4()}"
    body = "\n".join(json.dumps(a) for a in actions) + "\n"
    s3.put_object(Bucket=bucket, Key=f"{prefix}_delta_log/.tmp/{temp}", Body=body.encode())
    put_entry(ddb, commit_table, table_path, version, f".tmp/{temp}", complete=False)
    return f"_delta_log/.tmp/{temp}"


# proves: docs/guides/log-cleanup.md "Next to live writers"
def test_log_cleanup_next_to_live_spark_and_delta_rs_writers(
    localstack: Any,
    ls_bucket: str,
    ls_commit_table: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
    from deltaguard.tools.orphans.log_cleanup_run import LogCleanupRequest, run_log_cleanup
    from deltaguard.tools.storage import S3Options

    endpoint = localstack.endpoint
    s3, ddb = endpoint.s3_client(), endpoint.dynamodb_client()
    options = endpoint.delta_rs_options()
    for var, value in endpoint.credentials_env().items():
        monkeypatch.setenv(var, value)
    prefixes = {"conditional": "lake/conditional/", "dynamodb": "lake/dynamodb/"}
    uris = {n: f"s3://{ls_bucket}/{p.rstrip('/')}" for n, p in prefixes.items()}
    control = tmp_path / "control"
    control.mkdir()
    log_path = tmp_path / "driver.log"
    args = ["--endpoint", endpoint.url, "--dynamodb-table", ls_commit_table]
    args += ["--conditional", uris["conditional"].replace("s3://", "s3a://", 1)]
    args += ["--dynamodb", uris["dynamodb"], "--control", str(control)]
    args += ["--local-dir", str(tmp_path / "spark"), "--rows", str(ROWS)]
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, str(DRIVER), *args],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=driver_env(endpoint),
            start_new_session=True,  # its JVM in its group: killed with it
        )
    try:
        floors = _Floors(control, ["delta-rs writer", "delta-rs reader"])
        errors: list[str] = []
        deltars_tags: list[str] = []
        reads: list[dict[str, Any]] = []

        def latest(name: str) -> int:
            return int(DeltaTable(uris[name], storage_options=options).version())

        def write(gen: int, floor: dict[str, int]) -> None:
            tag = f"delta-rs/conditional/{len(deltars_tags)}"
            write_deltalake(
                uris["conditional"],
                _rows(1, len(deltars_tags)),
                mode="append",
                storage_options=options,
                commit_properties=CommitProperties(custom_metadata={"userMetadata": tag}),
            )
            deltars_tags.append(tag)
            time.sleep(0.5)  # a steady writer, not a flood of commits

        def read(gen: int, floor: dict[str, int]) -> None:
            for name, uri in uris.items():
                version = random.randint(floor.get(name, 0), latest(name))
                reads.append({"table": name, "version": version, **_counts(uri, options, version)})
            time.sleep(0.5)

        def table_path() -> str:
            """The ``tablePath`` Spark's DynamoDB LogStore names the table by."""
            paths = {i["tablePath"]["S"] for i in ddb.scan(TableName=ls_commit_table)["Items"]}
            assert len(paths) == 1, paths
            return paths.pop()

        clocks: dict[str, int] = {}  # the clock of each table's last run, and its cut-off
        cutoffs: dict[str, int] = {}

        def cleanup(name: str, floor: int) -> dict[str, Any]:
            clocks[name] = int(time.time() * 1000) + 2 * DAY_MS  # every file older than the cut-off
            check = (
                DynamoDBCheck(ddb, ls_commit_table, (table_path(),)) if name == "dynamodb" else None
            )
            request = LogCleanupRequest(
                table=uris[name],
                s3=S3Options(endpoint.url, endpoint.region, True),
                retention_ms=DAY_MS,
                yes=True,
                as_json=True,
                manifest_path=tmp_path / "manifests",
                dynamodb=check,
                now_ms=clocks[name],
            )
            code = run_log_cleanup(request)
            report = json.loads(capsys.readouterr().out)
            assert code == 0, report
            cutoffs[name] = report["cutoff_ms"]
            # the floor, or None on a rerun whose first file is the floor's checkpoint already
            assert report["truncation_version"] in (floor, None), report
            if report["cleanup"] is None:  # nothing to delete: no run, no manifest
                report["cleanup"] = {"counts": {"deleted": 0}}
            assert report["cleanup"]["counts"].get("failed", 0) == 0, report["cleanup"]
            # every commit below the checkpoint is gone, the checkpoint and all above it stay
            versions = _commit_versions(_keys(s3, ls_bucket, prefixes[name]))
            assert versions[0] == floor and versions == list(range(floor, versions[-1] + 1))
            return dict(report)

        threads = [
            threading.Thread(target=_loop, args=(floors, "delta-rs writer", write, errors)),
            threading.Thread(target=_loop, args=(floors, "delta-rs reader", read, errors)),
        ]
        try:
            deadline = time.monotonic() + 240
            while not (control / "ack-spark").exists() or not all(
                _has_log(s3, ls_bucket, p) for p in prefixes.values()
            ):
                assert proc.poll() is None, log_path.read_text()[-3000:]
                assert time.monotonic() < deadline, log_path.read_text()[-3000:]
                time.sleep(0.2)
            for t in threads:
                t.start()
            floor: dict[str, int] = {}
            removed = 0
            for _ in range(ROUNDS):
                for name in uris:
                    while latest(name) <= floor.get(name, 0):  # a new commit since the last run
                        assert proc.poll() is None and not errors, errors
                        time.sleep(0.1)
                floor = _checkpoint(uris, options)
                floors.wait_acks(floors.publish(floor), proc)
                for name in uris:
                    removed += cleanup(name, floor[name])["cleanup"]["counts"]["deleted"]
            assert removed > 0
        finally:
            (control / "stop").touch()
            floors.stop.set()
            for t in threads:
                if t.is_alive():
                    t.join(timeout=120)
        assert not errors, errors
        deadline = time.monotonic() + 120
        while not (control / "stopped").exists():
            assert proc.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.1)

        # The quiet tables: a pending DynamoDB commit of the next version, staged by hand, then a
        # checkpoint of each table and more runs (two on the DynamoDB table).
        last = {n: latest(n) for n in uris}
        pending = _stage_pending_commit(
            s3,
            ddb,
            ls_commit_table,
            ls_bucket,
            prefixes["dynamodb"],
            table_path(),
            last["dynamodb"] + 1,
        )
        floor = _checkpoint(uris, options)
        assert floor == last
        for name in ("conditional", "dynamodb", "dynamodb"):
            report = cleanup(name, floor[name])
            if name == "dynamodb":
                assert report["totals"]["pending-commit"]["files"] == 1, report
        kept = {  # the files (a directory marker such as ``_staged_commits/`` is none)
            n: {
                k.removeprefix("_delta_log/")
                for k in _keys(s3, ls_bucket, p)
                if k.startswith("_delta_log/") and not k.endswith("/")
            }
            for n, p in prefixes.items()
        }
        temps = {k for k in _keys(s3, ls_bucket, prefixes["dynamodb"]) if k.startswith(TMP)}
        # the pending one stayed; every finished one of a removed version went (one of a
        # retained version stays: commit-evidence, removed with its version)
        assert pending in temps
        below = {k for k in temps if int(k.removeprefix(TMP)[:20]) < floor["dynamodb"]}
        assert not below, below
        entry = ddb.get_item(
            TableName=ls_commit_table,
            Key={
                "tablePath": {"S": table_path()},
                "fileName": {"S": f"{last['dynamodb'] + 1:020d}.json"},
            },
        )["Item"]
        assert entry["complete"]["S"] == "false"

        # After: Spark (its DynamoDB LogStore recovers the pending commit first) and delta-rs read
        # every retained version; time travel below the floor fails with each reader's own error.
        retained = {
            "conditional": list(range(floor["conditional"], last["conditional"] + 1)),
            "dynamodb": list(range(floor["dynamodb"], last["dynamodb"] + 2)),
        }
        final = {
            n: {"retained": retained[n], "removed": floor[n] - 1, "now_ms": clocks[n]} for n in uris
        }
        (control / "final.json").write_text(json.dumps(final))
        _, result = job_result(proc, log_path, 300, name="log-cleanup live driver")
        assert result["dynamodb"]["latest"] == last["dynamodb"] + 1, "the pending commit survived"
        for name in uris:
            spark = result[name]
            assert spark["latest_counts"] == _expected(retained[name][-1])
            assert spark["versions"] == {str(v): _expected(v) for v in retained[name]}, name
            assert spark["removed_error"] is not None
            assert (
                "VersionNotFoundException" in spark["removed_error"]
                or "DELTA_VERSION_NOT_FOUND" in spark["removed_error"]
            ), spark["removed_error"]
            assert "Cannot time travel" in spark["removed_error"], spark["removed_error"]
            for v in retained[name]:
                assert _counts(uris[name], options, v) == _expected(v), (name, v)
            # delta-rs's own error: the log segment of a removed version has no files
            with pytest.raises(Exception, match="No files in log segment"):
                _counts(uris[name], options, final[name]["removed"])
            # Delta's own MetadataCleanup on the same table, its clock at the last run's and the
            # table's retention a day: the same cut-off as deltaguard's, every file older than
            # it (so only Delta's checkpoint rule can keep one); it saw what deltaguard kept (and
            # the commit Spark's DynamoDB LogStore recovered) and removed none of it.
            delta = spark["metadata_cleanup"]
            assert delta["retention_ms"] == DAY_MS, delta
            assert delta["cutoff_ms"] == cutoffs[name], (delta["cutoff_ms"], cutoffs[name])
            assert delta["before"] and max(delta["before"].values()) < delta["cutoff_ms"], delta
            recovered = {f"{last[name] + 1:020d}.json"} if name == "dynamodb" else set()
            assert set(delta["before"]) == kept[name] | recovered, delta["before"]
            assert delta["after"] == delta["before"], "Delta's cleanup removed what deltaguard kept"

        # The ledger: every version after 0 is one append a writer saw succeed, none lost or doubled.
        spark_log = [
            json.loads(line) for line in (control / "spark.jsonl").read_text().splitlines()
        ]
        appended = {
            n: [e for e in spark_log if e["op"] == "append" and e["table"] == n] for n in uris
        }
        assert last["conditional"] == len(appended["conditional"]) + len(deltars_tags)
        assert last["dynamodb"] == len(appended["dynamodb"])
        assert deltars_tags and all(appended.values())
        spark_reads = [e for e in spark_log if e["op"] == "read"]
        assert spark_reads and reads
        for entry_read in spark_reads + reads:
            assert "error" not in entry_read, entry_read
            counts = {k: entry_read[k] for k in ("rows", "commits")}
            assert counts == _expected(entry_read["version"]), entry_read
    finally:
        _end(proc)
