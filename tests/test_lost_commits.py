"""Issue 50 part 3: lost commits found (``audit``), kept (``orphans``) and restored (``repair
--restore-lost``) on a versioned bucket.

The boto3 tests on MinIO stage the race the way Delta's single-driver store loses a commit:
two writers PUT the same ``N.json``, the later PUT wins, the earlier bytes stay as a
noncurrent object version. The oracle is plain boto3 (the noncurrent versions listed and read
raw) and delta-rs (the rows after the restore).

The Spark races (:data:`RACES`, :data:`LONG_RACES`) run real Spark drivers on Delta's default
store through a fault proxy that holds commit PUTs, on LocalStack and MinIO: the oracle is the
race ledger (the commits the writers were told succeeded that no version holds), checked
against the raw noncurrent versions, then against Spark's and delta-rs's rows after the restore.
"""

from __future__ import annotations

import io
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.fault_proxy import FaultProxy
from deltaguard.localstack.minio_server import MinIOServer
from deltaguard.tools.commands.audit import audit_exit_code
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.storage import S3Options

ROWS = 10
SPARK_ENGINE = "Apache-Spark/3.5.3 Delta-Lake/3.3.0"


def _commit_name(version: int) -> str:
    return f"{version:020d}.json"


def _lost_body(
    s3: Any, bucket: str, table: str, ids: list[int], *, extra: list[dict[str, Any]] = ()
) -> bytes:
    """Writes a Parquet file of ``ids`` into the table and returns the body of a Spark-style
    blind append naming it (plus ``extra`` actions)."""
    buf = io.BytesIO()
    pq.write_table(pa.table({"x": pa.array(ids, pa.int64())}), buf)
    data = buf.getvalue()
    name = f"part-00000-lost-{ids[0]}.c000.snappy.parquet"
    s3.put_object(Bucket=bucket, Key=f"{table}/{name}", Body=data)
    now = int(time.time() * 1000)
    actions = [
        {
            "commitInfo": {
                "timestamp": now,
                "operation": "WRITE",
                "operationParameters": {"mode": "Append"},
                "engineInfo": SPARK_ENGINE,
                "isBlindAppend": True,
            }
        },
        *extra,
        {
            "add": {
                "path": name,
                "partitionValues": {},
                "size": len(data),
                "modificationTime": now,
                "dataChange": True,
                "stats": json.dumps({"numRecords": len(ids)}),
            }
        },
    ]
    return b"\n".join(json.dumps(a).encode() for a in actions) + b"\n"


def _overwrite(s3: Any, bucket: str, table: str, version: int, lost: bytes) -> None:
    """Stages the race on ``version``: the lost body is PUT, then the winner's bytes again
    (the winner's PUT landing last)."""
    key = f"{table}/_delta_log/{_commit_name(version)}"
    winner = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    s3.put_object(Bucket=bucket, Key=key, Body=lost)
    s3.put_object(Bucket=bucket, Key=key, Body=winner)


def _raw_lost(s3: Any, bucket: str, table: str) -> dict[int, bytes]:
    """The oracle: noncurrent versions of commits whose bytes differ from the current ones."""
    prefix = f"{table}/_delta_log/"
    pages = s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix)
    objs = [o for p in pages for o in p.get("Versions", []) if o["Key"].endswith(".json")]
    out = {}
    for o in objs:
        if o["IsLatest"]:
            continue
        current = s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
        body = s3.get_object(Bucket=bucket, Key=o["Key"], VersionId=o["VersionId"])["Body"].read()
        if body != current:
            out[int(o["Key"].removeprefix(prefix).split(".")[0])] = body
    return out


@pytest.fixture
def minio_table(minio: MinIOServer, minio_bucket: str) -> dict[str, Any]:
    endpoint, bucket = minio.endpoint, minio_bucket
    s3 = endpoint.s3_client()
    uri, options = f"s3://{bucket}/lake/t", endpoint.delta_rs_options()
    return {
        "s3": s3,
        "bucket": bucket,
        "table": "lake/t",
        "uri": uri,
        "options": options,
        "s3_options": S3Options(endpoint.url, endpoint.region, True),
        "env": endpoint.credentials_env(),
    }


def _versioned(t: dict[str, Any]) -> None:
    t["s3"].put_bucket_versioning(Bucket=t["bucket"], VersioningConfiguration={"Status": "Enabled"})


def _append(t: dict[str, Any], ids: list[int]) -> None:
    write_deltalake(
        t["uri"],
        pa.table({"x": pa.array(ids, pa.int64())}),
        mode="append",
        storage_options=t["options"],
    )


def test_audit_finds_exactly_the_lost_commits_on_minio(minio_table: dict[str, Any]) -> None:
    t = minio_table
    _versioned(t)
    _append(t, [0, 1])
    _append(t, [2])
    _append(t, [3])
    _overwrite(
        t["s3"],
        t["bucket"],
        t["table"],
        1,
        _lost_body(t["s3"], t["bucket"], t["table"], [100, 101]),
    )
    _overwrite(
        t["s3"], t["bucket"], t["table"], 2, _lost_body(t["s3"], t["bucket"], t["table"], [200])
    )
    oracle = _raw_lost(t["s3"], t["bucket"], t["table"])
    assert sorted(oracle) == [1, 2]

    report = audit_table(t["uri"], s3=t["s3_options"])
    lost = [f for f in report.findings if f.code == "lost-commit"]
    assert sorted(f.file for f in lost) == [f"_delta_log/{_commit_name(v)}" for v in sorted(oracle)]
    assert "spark via single-driver" in lost[0].message and "2 rows" in lost[0].message
    assert audit_exit_code(report) != 0
    assert report.summary["lost_commits"]["versioning"] == "Enabled"


def test_unversioned_bucket_is_one_note_and_no_finding(
    minio_table: dict[str, Any], run_cli
) -> None:
    t = minio_table
    _append(t, [0])
    _append(t, [1])
    report = audit_table(t["uri"], s3=t["s3_options"])
    assert not [f for f in report.findings if f.code.startswith("lost-commit")]
    assert (
        report.summary["lost_commits"]["note"]
        == "bucket versioning off: lost commits cannot be found"
    )
    assert audit_exit_code(report) == 0
    text = run_cli("audit", t["uri"], *_cli_s3(t), env=t["env"])
    assert text.returncode == 0, text.stdout + text.stderr
    note = "note: bucket versioning off: lost commits cannot be found"
    assert [x.strip() for x in text.stdout.splitlines()].count(note) == 1, text.stdout


def _cli_s3(t: dict[str, Any]) -> list[str]:
    return ["--endpoint", t["s3_options"].endpoint, "--path-style"]


def _data_keys(t: dict[str, Any]) -> set[str]:
    prefix = f"{t['table']}/"
    pages = t["s3"].get_paginator("list_objects_v2").paginate(Bucket=t["bucket"], Prefix=prefix)
    keys = {o["Key"].removeprefix(prefix) for p in pages for o in p.get("Contents", [])}
    return {k for k in keys if not k.startswith("_delta_log/")}


def test_orphans_keep_the_lost_commits_files_on_minio(
    minio_table: dict[str, Any], run_cli, tmp_path
) -> None:
    t = minio_table
    _versioned(t)
    _append(t, [0])
    _append(t, [1])
    lost = _lost_body(t["s3"], t["bucket"], t["table"], [100, 101])
    _overwrite(t["s3"], t["bucket"], t["table"], 1, lost)
    lost_file = json.loads(lost.splitlines()[-1])["add"]["path"]
    t["s3"].put_object(Bucket=t["bucket"], Key=f"{t['table']}/part-failed.parquet", Body=b"x")
    before = _data_keys(t)
    assert lost_file in before

    args = ["orphans", t["uri"], *_cli_s3(t), "--retention", "0h", "--unsafe-retention"]
    dry = run_cli(*args, "--json")
    assert dry.returncode == 1, dry.stderr  # files to clean, and damage (a lost commit)
    classes = {c["path"]: c for c in json.loads(dry.stdout)["files"]}
    assert classes[lost_file]["class"] == "lost-commit"
    assert "version 1" in classes[lost_file]["reason"]
    assert classes["part-failed.parquet"]["class"] == "orphan"

    done = run_cli(*args, "--delete", "--yes", "--manifest", str(tmp_path / "m"))
    assert done.returncode == 1, done.stdout + done.stderr  # the lost commit is still damage
    assert before - _data_keys(t) == {"part-failed.parquet"}, "only the true orphan went"


def _rows(t: dict[str, Any]) -> list[int]:
    table = DeltaTable(t["uri"], storage_options=t["options"]).to_pyarrow_table()
    return sorted(table.column("x").to_pylist())


def test_restore_lost_brings_every_lost_row_back_once_on_minio(
    minio_table: dict[str, Any], run_cli
) -> None:
    t = minio_table
    _versioned(t)
    _append(t, [0, 1])
    _append(t, [2])
    _append(t, [3])
    s3, bucket, table = t["s3"], t["bucket"], t["table"]
    ledger = {1: [100, 101], 2: [200]}  # the race's ledger: version -> the ids it lost
    for version, ids in ledger.items():
        _overwrite(s3, bucket, table, version, _lost_body(s3, bucket, table, ids))
    oracle = _raw_lost(s3, bucket, table)
    assert sorted(oracle) == sorted(ledger)
    lost_ids = sorted(i for ids in ledger.values() for i in ids)
    before = _rows(t)
    assert before == [0, 1, 2, 3]

    args = ["repair", t["uri"], *_cli_s3(t), "--restore-lost"]
    dry = run_cli(*args)
    assert dry.returncode == 1, dry.stdout + dry.stderr
    assert dry.stdout.count("would be restored") == 2
    assert _rows(t) == before, "a dry run writes nothing"

    done = run_cli(*args, "--yes", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    outcomes = json.loads(done.stdout)["lost_commits"]
    assert sorted(o["version"] for o in outcomes if o["state"] == "restored") == sorted(oracle)
    assert _rows(t) == sorted(before + lost_ids)

    again = run_cli(*args, "--yes", "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    assert {o["state"] for o in json.loads(again.stdout)["lost_commits"]} == {"already-restored"}
    assert _rows(t) == sorted(before + lost_ids), "a second run commits nothing"
    report = audit_table(t["uri"], s3=t["s3_options"])
    codes = [f.code for f in report.findings]
    assert "lost-commit" not in codes and codes.count("lost-commit-restored") == 2


def test_restore_lost_refuses_what_is_not_a_blind_append_on_minio(
    minio_table: dict[str, Any], run_cli
) -> None:
    t = minio_table
    _versioned(t)
    _append(t, [0])
    _append(t, [1])
    _append(t, [2])
    _append(t, [3])
    s3, bucket, table = t["s3"], t["bucket"], t["table"]
    first = json.loads(
        s3.get_object(Bucket=bucket, Key=f"{table}/_delta_log/{_commit_name(1)}")["Body"]
        .read()
        .splitlines()[-1]
    )
    removes = [
        {"remove": {"path": first["add"]["path"], "deletionTimestamp": 1, "dataChange": True}}
    ]
    _overwrite(s3, bucket, table, 1, _lost_body(s3, bucket, table, [100], extra=removes))
    meta = s3.get_object(Bucket=bucket, Key=f"{table}/_delta_log/{_commit_name(0)}")["Body"].read()
    metadata = [json.loads(x) for x in meta.splitlines() if b'"metaData"' in x]
    _overwrite(s3, bucket, table, 2, _lost_body(s3, bucket, table, [200], extra=metadata))
    gone = _lost_body(s3, bucket, table, [300])
    s3.delete_object(
        Bucket=bucket, Key=f"{table}/{json.loads(gone.splitlines()[-1])['add']['path']}"
    )
    _overwrite(s3, bucket, table, 3, gone)
    log_before = _raw_log(t)

    for extra in ([], ["--yes"]):
        run = run_cli("repair", t["uri"], *_cli_s3(t), "--restore-lost", *extra)
        assert run.returncode == 1, run.stdout + run.stderr
        lines = [x for x in run.stdout.splitlines() if x.startswith("not restorable")]
        assert len(lines) == 3, run.stdout
        assert "remove" in lines[0] and "metaData" in lines[1] and "is gone" in lines[2]
        assert _raw_log(t) == log_before, "nothing written"


def _raw_log(t: dict[str, Any]) -> dict[str, str]:
    prefix = f"{t['table']}/_delta_log/"
    pages = t["s3"].get_paginator("list_objects_v2").paginate(Bucket=t["bucket"], Prefix=prefix)
    return {o["Key"]: o["ETag"] for p in pages for o in p.get("Contents", [])}


def test_restore_lost_without_versioning_is_one_line_exit_2(
    minio_table: dict[str, Any], run_cli
) -> None:
    t = minio_table
    _append(t, [0])
    run = run_cli("repair", t["uri"], *_cli_s3(t), "--restore-lost", "--yes")
    assert run.returncode == 2
    assert run.stderr.strip() == (
        "deltaguard repair: bucket versioning off: lost commits cannot be found"
    )


@dataclass(frozen=True)
class _Race:
    """One staged race: the server (a session fixture), the versions whose first commit PUT
    the proxy holds (localstack/race.py), the Spark drivers and their appends, and the
    orphans engine (Spark on one server, the local one on the other: both are covered)."""

    server: str
    held_versions: list[int]
    writers: int = 2
    appends: int = 2
    orphans_args: tuple[str, ...] = ()


#: LocalStack loses one commit, MinIO two (one per held version): the ``make test`` races.
RACES = {
    "localstack": _Race(
        "localstack", [1], orphans_args=("--engine", "spark", "--spark-master", "local[2]")
    ),
    "minio": _Race("minio", [1, 2]),
}
#: The long races (``make soak``): three drivers, three appends each, the first commit PUT of
#: versions 1-4 held (how many commits are lost is the race's: the ledger says, at least two).
LONG_RACES = {f"{name}-3x3": _Race(name, [1, 2, 3, 4], writers=3, appends=3) for name in RACES}


@dataclass
class _RaceBed:
    race: _Race
    endpoint: Endpoint
    proxy: FaultProxy
    bucket: str


@pytest.fixture(scope="module")
def race_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The module's one Spark session, the races' Spark reader (a fresh driver per race
    would start a JVM each time): S3A with the test bed's keys, each bucket's endpoint set
    when it is read (:func:`_spark_account`)."""
    from deltaguard.localstack.spark_driver import build_test_session
    from deltaguard.logstore.preset_name import PresetName

    spark = build_test_session(
        Endpoint(url="http://127.0.0.1:1").s3_storage(),  # every read names its endpoint
        PresetName.S3_CONDITIONAL,
        app_name="lost-commits-reader",
        master="local[2]",
        local_dir=tmp_path_factory.mktemp("lost-commits-reader"),
    )
    try:
        yield spark
    finally:
        spark.stop()


def _spark_account(spark: Any, table: str, endpoint: Endpoint) -> dict[str, Any]:
    """append_job's account of ``table`` (an ``s3a://`` URI) as Spark Delta reads it through
    ``endpoint``."""
    from deltaguard.localstack.append_job import table_account

    bucket = table.removeprefix("s3a://").split("/", 1)[0]
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set(f"fs.s3a.bucket.{bucket}.endpoint", endpoint.url)
    return table_account(spark, table)


@pytest.fixture
def race_bed(request: pytest.FixtureRequest, tmp_path) -> Iterator[_RaceBed]:
    """The race named by the parameter (a key of :data:`RACES` or :data:`LONG_RACES`), a
    fresh versioned bucket on its server and a fault proxy in front of it (the server itself
    is the session's fixture, started once)."""
    race = {**RACES, **LONG_RACES}[request.param]
    server = request.getfixturevalue(race.server)
    endpoint = server.endpoint
    bucket = f"dg-race-{uuid.uuid4().hex[:12]}"
    s3 = endpoint.s3_client()
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    with FaultProxy(endpoint, tmp_path / "proxy", seed=7) as proxy:
        yield _RaceBed(race, endpoint, proxy, bucket)


def _staged_race(bed: _RaceBed, spark: Any, tmp_path, run_cli) -> None:
    """Spark drivers on Delta's default S3SingleDriverLogStore, the first commit PUT of each
    held version held until another driver wrote the same version (localstack/race.py), on a
    versioned bucket: the race ledger (the writers' claimed commits no version holds) is the
    oracle, with the raw noncurrent versions read by boto3. ``audit`` finds exactly those,
    ``orphans --delete --yes`` keeps their files, ``repair --restore-lost --yes`` brings every
    row back (Spark and delta-rs agree on each claimed batch), a second run does nothing."""
    from deltaguard.localstack.multi_driver import run_multi_driver, verify_table_deltars
    from deltaguard.localstack.race import hold_commit_puts
    from deltaguard.logstore.preset_name import PresetName

    race, endpoint, bucket = bed.race, bed.endpoint, bed.bucket
    s3 = endpoint.s3_client()
    bed.proxy.set_rules(hold_commit_puts(race.held_versions))
    table = f"s3a://{bucket}/events"
    result = run_multi_driver(
        table,
        writer_endpoint_url=bed.proxy.endpoint.url,
        reader_endpoint_url=endpoint.url,
        logstore=PresetName.S3_SINGLE_DRIVER,
        writers=race.writers,
        appends=race.appends,
        rows=ROWS,
        workdir=tmp_path,
        verify_with_deltars=True,
    )
    assert bed.proxy.fired() == [1] * len(race.held_versions), "every held version was reached"
    staged = [h for r in range(len(race.held_versions)) for h in bed.proxy.held(r)]
    staged = [h for h in staged if h["released_by_peer"]]  # a peer PUT the same version
    ledger = set(result.lost_tags)
    assert len(ledger) >= len(staged) >= 1, (staged, result.summary())
    assert result.failed_appends == [], result.summary()
    raw = _raw_lost(s3, bucket, "events")
    raw_tags = {
        json.loads(line)["commitInfo"].get("userMetadata")
        for body in raw.values()
        for line in body.splitlines()
        if b'"commitInfo"' in line
    }
    assert raw_tags == ledger, "the oracle: the raw noncurrent versions hold the lost commits"

    env = endpoint.credentials_env()
    s3_args = ["--endpoint", endpoint.url, "--path-style"]
    audit = run_cli("audit", table, *s3_args, "--json", env=env)
    findings = json.loads(audit.stdout)["findings"]
    found = sorted(f["file"] for f in findings if f["code"] == "lost-commit")
    assert found == [f"_delta_log/{_commit_name(v)}" for v in sorted(raw)], audit.stdout

    lost_files = {
        json.loads(line)["add"]["path"]
        for body in raw.values()
        for line in body.splitlines()
        if b'"add"' in line
    }
    assert len(lost_files) == len(ledger), "one data file per lost append"
    orphans = run_cli(
        "orphans",
        table,
        *s3_args,
        *race.orphans_args,
        "--report-table",
        str(tmp_path / "report"),
        "--retention",
        "0h",
        "--unsafe-retention",
        "--delete",
        "--yes",
        "--json",
        "--manifest",
        str(tmp_path / "m"),
        env=env,
    )
    assert orphans.returncode == 1, orphans.stdout + orphans.stderr  # lost-commit: damage
    classes = {f["path"]: f["class"] for f in json.loads(orphans.stdout)["files"]}
    assert {classes.get(p) for p in lost_files} == {"lost-commit"}, orphans.stdout
    listed = {
        o["Key"].removeprefix("events/")
        for p in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="events/")
        for o in p.get("Contents", [])
    }
    assert lost_files <= listed, "orphans --delete --yes kept every lost commit's files"

    restore = run_cli("repair", table, *s3_args, "--restore-lost", "--yes", "--json", env=env)
    assert restore.returncode == 0, restore.stdout + restore.stderr
    outcomes = json.loads(restore.stdout)["lost_commits"]
    restored = sorted(o["version"] for o in outcomes if o["state"] == "restored")
    assert restored == sorted(raw)

    claimed = set(result.claimed_tags)
    by_deltars = verify_table_deltars(table, endpoint.url)
    tags = [c["tag"] for c in by_deltars["commits"] if c["tag"] in claimed]
    assert sorted(tags) == sorted(claimed), "every claimed commit exactly once"
    assert by_deltars["rows"] == len(claimed) * ROWS
    assert sorted(by_deltars["rows_per_batch"]) == sorted(_batch_ids(claimed)), "the ids"
    assert all(n == ROWS for n in by_deltars["rows_per_batch"].values())
    by_spark = _spark_account(spark, table, endpoint)
    assert by_spark["rows"] == by_deltars["rows"]
    assert by_spark["rows_per_batch"] == by_deltars["rows_per_batch"]

    again = run_cli("repair", table, *s3_args, "--restore-lost", "--yes", "--json", env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert {o["state"] for o in json.loads(again.stdout)["lost_commits"]} == {"already-restored"}
    assert verify_table_deltars(table, endpoint.url)["rows"] == len(claimed) * ROWS
    print(
        f"race table [{race.server}, {race.writers}x{race.appends}, {len(staged)} of "
        f"{len(race.held_versions)} holds met a peer]: lost per ledger {len(ledger)}, found by audit "
        f"{len(found)}, restored {len(restored)}, rows after {by_deltars['rows']} of "
        f"{len(claimed) * ROWS}"
    )


def _batch_ids(tags: set[str]) -> list[str]:
    """The ``w<writer>/b<batch>`` ids of claimed commit tags ``<run>/w<writer>/b<batch>``."""
    return [tag.split("/", 1)[1] for tag in tags]


@pytest.mark.spark
@pytest.mark.parametrize("race_bed", list(RACES), indirect=True)
def test_staged_default_store_race_found_kept_restored(
    race_bed: _RaceBed, race_spark: Any, tmp_path, run_cli
) -> None:
    """The ``make test`` races: LocalStack loses one commit, MinIO two."""
    _staged_race(race_bed, race_spark, tmp_path, run_cli)
    held = len(race_bed.race.held_versions)
    assert len(_raw_lost(race_bed.endpoint.s3_client(), race_bed.bucket, "events")) == held, (
        "two writers in turn: each held version is exactly one lost commit"
    )


@pytest.mark.spark
@pytest.mark.long
@pytest.mark.parametrize("race_bed", list(LONG_RACES), indirect=True)
def test_long_staged_default_store_race_found_kept_restored(
    race_bed: _RaceBed, race_spark: Any, tmp_path, run_cli
) -> None:
    """Three drivers, three appends each, the first PUT of versions 1-4 held: several commits
    lost on one table (how many is the race's; the ledger says), all found and restored."""
    _staged_race(race_bed, race_spark, tmp_path, run_cli)
    lost = _raw_lost(race_bed.endpoint.s3_client(), race_bed.bucket, "events")
    assert len(lost) >= 2, "more than one commit lost on one table"


def test_versioning_denied_is_a_note_and_restore_refuses_writing_nothing(
    minio_table: dict[str, Any],
) -> None:
    """MinIO's root user cannot be denied: the one GetBucketVersioning is answered
    ``403 AccessDenied`` by a botocore hook on an otherwise real client (every other request
    goes to MinIO)."""
    from botocore.exceptions import ClientError

    from deltaguard.tools.repair.restore_lost import LostRefused, restore_lost
    from deltaguard.tools.storage import open_table

    t = minio_table
    _versioned(t)
    _append(t, [0])
    _append(t, [1])
    s3, bucket, table = t["s3"], t["bucket"], t["table"]
    _overwrite(s3, bucket, table, 1, _lost_body(s3, bucket, table, [100]))
    log_before = _raw_log(t)

    def deny(**_: Any) -> None:
        error = {"Code": "AccessDenied", "Message": "Access Denied"}
        raise ClientError(
            {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 403}}, "GetBucketVersioning"
        )

    client = minio_table["s3"]
    client.meta.events.register("before-call.s3.GetBucketVersioning", deny)
    store = open_table(t["uri"], client=client)
    report = audit_table(store)
    assert not [f for f in report.findings if f.code.startswith("lost-commit")]
    note = report.summary["lost_commits"]["note"]
    assert note == (
        f"bucket versioning of {bucket} could not be read (access denied): "
        "lost commits cannot be found"
    )
    assert audit_exit_code(report) == 0

    def no_commit() -> Any:
        raise AssertionError("nothing may be committed")

    with pytest.raises(LostRefused, match="access denied"):
        restore_lost(store, True, no_commit, lambda _line: None)
    assert _raw_log(t) == log_before
