"""``deltaguard orphans --engine spark`` against the local engine: the same classified files on
the Spark-written failed-job table (DVs, CDC, an overwrite, a failed job, a killed driver), on
local disk and on LocalStack over s3a; cleanup's safety (the re-read spares what a commit made
since names, a re-run after a crash finishes the job); the property test's invariant on random
histories; the fallback past a damaged checkpoint (and the refusal when none is left); the
audit's file check (``audit --engine spark``) against the local one. One local Spark session
for the module (local[2])."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from local_spark import local_spark_session
from reader_references import reader_versions
from test_orphans import _table as orphans_table
from test_orphans_property import (
    HOUR,
    OPS,
    _run_history,
    assert_retained_versions_intact,
)
from test_orphans_temp_commits import temp_commit_table

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.table_copies import copy_table, upload_table
from deltaguard.tools.cli import main
from deltaguard.tools.commands.audit import audit_exit_code
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.deltalog.errors import CorruptLogError
from deltaguard.tools.orphans import CleanupOptions, FileClass, execute, read_manifest, scan
from deltaguard.tools.orphans.engine import OrphansEngine, OrphansRequest
from deltaguard.tools.orphans.interrupt import StopSignal
from deltaguard.tools.orphans.manifest import MANIFEST_SCHEMA, RECORD_SCHEMA
from deltaguard.tools.orphans.run import LocalEngine
from deltaguard.tools.spark_engine.audit_files import spark_file_check
from deltaguard.tools.spark_engine.orphans_cleanup import execute_spark
from deltaguard.tools.spark_engine.orphans_engine import SparkEngineOptions, SparkOrphansEngine
from deltaguard.tools.spark_engine.orphans_scan import scan_spark
from deltaguard.tools.spark_engine.store_spec import StoreSpec
from deltaguard.tools.storage import S3Options, open_table

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # Executors open S3 with boto3's default chain: the test bed's static credentials.
    creds = Endpoint(url="http://127.0.0.1:1").credentials_env()
    with local_spark_session(tmp_path_factory, "orphans-spark-engine", env=creds) as session:
        yield session


def _classified(candidates: list[Any]) -> set[tuple[str, FileClass, str]]:
    return {(c.path, c.file_class, c.reason) for c in candidates}


@pytest.mark.parametrize("retention_ms", [0, None])
def test_spark_engine_classifies_like_the_local_engine(
    failed_jobs, spark, tmp_path: Path, retention_ms: int | None
) -> None:
    table, expected = failed_jobs
    ours = scan_spark(spark, StoreSpec(str(table)), str(tmp_path / "r"), retention_ms=retention_ms)
    local = scan(open_table(str(table)), retention_ms=retention_ms, now_ms=ours.result.now_ms)
    assert ours.complete and _classified(ours.result.candidates) == _classified(local.candidates)
    assert (ours.result.version, ours.result.listed_files, ours.result.referenced_files) == (
        local.version,
        local.listed_files,
        local.referenced_files,
    )
    assert ours.result.hidden_dirs == local.hidden_dirs
    if retention_ms == 0:
        classes = {c.file_class for c in ours.result.candidates}
        assert {FileClass.ORPHAN, FileClass.EXPIRED_TOMBSTONE} <= classes
        vacuum = {p for p in expected["vacuum_dry_run"] if os.path.isfile(p)}
        found = ours.result.candidates
        assert {f"{table}/{c.path}" for c in found if c.file_class is not FileClass.RECENT} == (
            vacuum
        )
    else:
        assert {c.file_class for c in ours.result.candidates} == {FileClass.RECENT}


def test_spark_engine_on_localstack_over_s3a(
    failed_jobs, spark, localstack, ls_bucket: str, tmp_path: Path
) -> None:
    table, _expected = failed_jobs
    endpoint = localstack.endpoint
    client = endpoint.s3_client()
    upload_table(table, client, ls_bucket, "lake/events")
    _s3a_session(spark, endpoint)
    uri = f"s3a://{ls_bucket}/lake/events"
    spec = StoreSpec(uri, S3Options(endpoint.url, endpoint.region, path_style=True))
    ours = scan_spark(spark, spec, str(tmp_path / "r"), retention_ms=0)
    local = scan(open_table(uri, client=client), retention_ms=0, now_ms=ours.result.now_ms)
    assert _classified(ours.result.candidates) == _classified(local.candidates)
    assert len(ours.result.candidates) > 10


def _commit_naming(table: Path, rel: str) -> int:
    """Appends a commit whose add names ``rel`` (as a late writer would); returns its version."""
    version = load_snapshot(open_table(str(table))).version + 1
    add = {
        "path": rel,
        "partitionValues": {},
        "size": (table / rel).stat().st_size,
        "modificationTime": int(time.time() * 1000),
        "dataChange": True,
    }
    (table / "_delta_log" / f"{version:020d}.json").write_bytes(orjson.dumps({"add": add}) + b"\n")
    return version


def test_spark_cleanup_rerun_after_a_crash_spares_what_became_referenced(
    failed_jobs, spark, tmp_path: Path
) -> None:
    source, _expected = failed_jobs
    table = tmp_path / "events"
    shutil.copytree(source, table)
    spec = StoreSpec(str(table))
    first = scan_spark(spark, spec, str(tmp_path / "r1"), retention_ms=0)
    orphans = sorted(c.path for c in first.result.of(FileClass.ORPHAN))
    assert len(orphans) >= 4
    crashed, late = orphans[: len(orphans) // 2], orphans[-1]
    for rel in crashed:  # the first run died after deleting these
        (table / rel).unlink()
    version = _commit_naming(table, late)  # a writer committed one of the planned files
    doc = execute_spark(
        spark,
        spec,
        first,
        manifest_dir=tmp_path / "m",
        options=CleanupOptions(unsafe_retention=True, given_retention=True),
    ).manifest
    assert doc["status"] == "done" and doc["version_rechecked"] == version
    assert (table / late).exists()
    written = read_manifest(tmp_path / "m")
    assert written.summary == doc
    assert written.paths("spared") == [late]
    assert written.paths("missing") == sorted(crashed)
    assert written.paths("deleted") == sorted(set(orphans) - set(crashed) - {late})
    assert doc["counts"]["failed"] == 0
    assert set(written.outcomes()["path"].to_pylist()) == set(orphans) - {late}
    snapshot = load_snapshot(open_table(str(table)))
    assert all((table / p).exists() for p in snapshot.adds.paths())
    again = scan_spark(spark, spec, str(tmp_path / "r2"), retention_ms=0)
    assert not again.result.of(FileClass.ORPHAN)


def _engine(name: str, report: Path) -> OrphansEngine:
    """The ``local`` or the ``spark`` engine of the orchestrator's seam (the Spark one in the
    module's session, its report table at ``report``)."""
    if name == "local":
        return LocalEngine()
    return SparkOrphansEngine(SparkEngineOptions(report_table=str(report)))


def test_both_engines_write_the_same_manifest(spark, tmp_path: Path) -> None:
    """Issue 26: the local and the Spark cleanup of two copies of one table (one of its
    orphans spared by a commit made after the scan) write the same manifest: the same
    summary but for the times, the cut-off, the table and the local engine's request count, Parquet
    files of the same columns, and the same records (old code: a JSON file with lists against
    a directory with two differently shaped tables). One body for both engines, through the
    seam the command runs them by (:class:`~deltaguard.tools.orphans.engine.OrphansEngine`)."""
    written = {}
    for name in ("local", "spark"):
        root = tmp_path / name
        orphans_table(root)
        engine = _engine(name, tmp_path / "report")
        req = OrphansRequest(str(root), delete=True, yes=True, as_json=True)
        found = engine.scan(req, None)
        _commit_naming(root, "p=b/part-orphan.parquet")  # after the scan: spared
        manifest = tmp_path / f"m-{name}"
        done = engine.delete(req, found, manifest, StopSignal())
        written[name] = read_manifest(manifest)
        assert done.summary["counts"] == written[name].summary["counts"], name
        for records in ("plan", "outcome"):
            files = pq.read_table(manifest / records)
            assert files.schema.remove_metadata() == RECORD_SCHEMA, (name, records)
    local, ours = written["local"], written["spark"]
    varying = {"table", "cutoff_ms", "started_at", "finished_at", "requests"}
    assert {k: v for k, v in ours.summary.items() if k not in varying} == {
        k: v for k, v in local.summary.items() if k not in varying
    }
    assert local.summary["counts"]["spared"] == 1 and local.summary["counts"]["deleted"] == 2
    for records in ("plan", "outcomes", "records"):
        assert (
            getattr(ours, records)().sort_by("path").to_pylist()
            == getattr(local, records)().sort_by("path").to_pylist()
        ), records


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    ops=st.lists(st.tuples(OPS, st.integers(0, 60)), min_size=3, max_size=15),
    retention_h=st.sampled_from([0, 24]),
    include_tombstones=st.booleans(),
)
def test_spark_cleanup_never_deletes_a_referenced_file_or_outside_the_root(
    spark, tmp_path_factory, ops, retention_h, include_tombstones
) -> None:
    base = tmp_path_factory.mktemp("sprop")
    root = base / "t"
    now = int(time.time() * 1000)
    _t, never = _run_history(root, ops, now)
    outside = base / "outside.parquet"
    outside.write_bytes(b"not the table's")
    store = open_table(str(root))
    versions = reader_versions(root)  # delta-rs's, every retained version
    spec = StoreSpec(str(root))
    ours = scan_spark(spark, spec, str(base / "r"), retention_ms=retention_h * HOUR, now_ms=now)
    local = scan(store, retention_ms=retention_h * HOUR, now_ms=now)
    assert _classified(ours.result.candidates) == _classified(local.candidates)
    execute_spark(
        spark,
        spec,
        ours,
        manifest_dir=base / "m",
        options=CleanupOptions(
            include_tombstones=include_tombstones, unsafe_retention=True, given_retention=True
        ),
    )
    assert outside.exists()
    cutoff = ours.result.cutoff_ms
    assert_retained_versions_intact(root, versions, cutoff, include_tombstones)
    assert not [
        p
        for p in never
        if (root / p).exists() and (root / p).stat().st_mtime_ns // 1_000_000 < cutoff
    ]


def _s3a_session(spark: Any, endpoint: Endpoint) -> None:
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in endpoint.s3_storage().hadoop_conf().items():
        hadoop.set(key.removeprefix("spark.hadoop."), value)


def test_spark_engine_classifies_the_synthetic_table_like_local(
    spark, localstack, ls_bucket: str, tmp_path: Path
) -> None:
    """test_orphans.py's table (DVs, old and recent tombstones, orphans, a cdc orphan, a log
    temp file, hidden files and directories), on local disk and on LocalStack next to sibling
    prefixes the listing must not enter."""
    root = tmp_path / "t"
    synthetic = orphans_table(root)
    # the table's own retention (7 days: recent and expired classes); retention 0 on S3
    ours = scan_spark(spark, StoreSpec(str(root)), str(tmp_path / "r"))
    local = scan(open_table(str(root)), now_ms=ours.result.now_ms)
    assert _classified(ours.result.candidates) == _classified(local.candidates)
    assert ours.result.hidden_dirs == local.hidden_dirs
    for i in range(20):
        synthetic.write_file(f"p=z/part-{i:05d}-orphan.parquet", int(time.time() * 1000))
    endpoint = localstack.endpoint
    client = endpoint.s3_client()
    upload_table(root, client, ls_bucket, "lake/tbl")
    client.put_object(Bucket=ls_bucket, Key="lake/tbl2/part-sibling.parquet", Body=b"x")
    client.put_object(Bucket=ls_bucket, Key="lake/part-above.parquet", Body=b"x")
    _s3a_session(spark, endpoint)
    uri = f"s3a://{ls_bucket}/lake/tbl"
    spec = StoreSpec(uri, S3Options(endpoint.url, endpoint.region, path_style=True))
    ours = scan_spark(spark, spec, str(tmp_path / "r3"), retention_ms=0)
    local = scan(open_table(uri, client=client), retention_ms=0, now_ms=ours.result.now_ms)
    assert _classified(ours.result.candidates) == _classified(local.candidates)
    assert sum(c.file_class is FileClass.ORPHAN for c in ours.result.candidates) == 20 + 3
    assert not [c for c in ours.result.candidates if "sibling" in c.path or "above" in c.path]


def _skipped(notes: list[str]) -> list[str]:
    return [n.split(":")[0] for n in notes if n.startswith("skipped checkpoint")]


#: Session settings that make Spark skip damaged or vanished files.
SKIP_DAMAGED = ("spark.sql.files.ignoreCorruptFiles", "spark.sql.files.ignoreMissingFiles")


@contextmanager
def _session_skipping_damaged_files(spark: Any, on: bool) -> Iterator[None]:
    """The module's session with both :data:`SKIP_DAMAGED` settings on (``on``), as a user's
    spark-submit could have them; unset afterwards."""
    for key in SKIP_DAMAGED if on else ():
        spark.conf.set(key, "true")
    try:
        yield
    finally:
        for key in SKIP_DAMAGED:
            spark.conf.unset(key)


def _flip_a_path_byte(checkpoint: Path) -> tuple[str, bytes]:
    """A live file's path in ``checkpoint`` and the file's bytes with one byte of that path
    changed in a data page (a character of its UUID becomes ``Z``: still a valid path, and a
    parquet file that reads without error unless its page checksums are checked; the page
    compression keeps the UUID, which repeats nowhere, as literal bytes)."""
    original = checkpoint.read_bytes()
    paths = [a["path"] for a in pq.read_table(checkpoint, columns=["add"])["add"].to_pylist() if a]
    for path in paths:
        uuid_part = path.encode()[len("part-00000-") :][:8]
        at = original.find(uuid_part)
        while at >= 0:
            data = bytearray(original)
            data[at + 3] = ord("Z")
            try:
                read = pq.read_table(pa.BufferReader(bytes(data)), columns=["add"])["add"]
                if path not in [a["path"] for a in read.to_pylist() if a]:
                    return path, bytes(data)
            except (pa.ArrowException, OSError):
                pass
            at = original.find(uuid_part, at + 1)
    raise AssertionError(f"no byte of a path in {checkpoint.name} changes it silently")


@pytest.mark.parametrize("damage", ["truncated", "missing-sidecar", "flipped-path-byte"])
def test_spark_engine_falls_back_past_a_damaged_checkpoint_like_local(
    spark_tables, spark, tmp_path: Path, damage: str
) -> None:
    """The newest checkpoint is damaged (a truncated parquet; a V2 checkpoint's sidecar
    gone; one byte of a live file's path changed, which only the page checksums Spark wrote
    reveal): both engines skip it for the next older one, say so, and classify alike. Before
    the checksums were checked, the changed path left its live file unreferenced: an orphan
    to both engines."""
    name = "v2" if damage == "missing-sidecar" else "dv_cdc"
    table = copy_table(spark_tables.path(name), tmp_path / name)
    newest = sorted((table / "_delta_log").glob("*.checkpoint*.*"))[-1]
    live = None
    if damage == "truncated":
        newest.write_bytes(newest.read_bytes()[:200])
    elif damage == "flipped-path-byte":
        live, data = _flip_a_path_byte(newest)
        newest.write_bytes(data)
    else:
        sidecars = sorted((table / "_delta_log" / "_sidecars").iterdir())
        referenced = [s for s in sidecars if s.name.encode() in _checkpoint_bytes(newest)]
        assert referenced, f"{newest.name} names none of {sidecars}"
        referenced[0].unlink()
    ours = scan_spark(spark, StoreSpec(str(table)), str(tmp_path / "r"), retention_ms=0)
    local = scan(open_table(str(table)), retention_ms=0, now_ms=ours.result.now_ms)
    assert _classified(ours.result.candidates) == _classified(local.candidates)
    assert ours.result.version == local.version
    assert (
        _skipped(ours.result.notes)
        == _skipped(local.notes)
        == [f"skipped checkpoint {newest.name}"]
    )
    if live is not None:
        assert live not in {c.path for c in ours.result.candidates}


def test_spark_engine_keeps_dynamodb_temp_commits_like_local(spark, tmp_path: Path) -> None:
    """DynamoDB temp commits (test_orphans_temp_commits.py's table): the same classes and
    reasons as the local engine, and the cleanup deletes none of them (without
    --dynamodb-table only the Hadoop-style temp file goes); the stranded commit is damage,
    exit code 1."""
    root = tmp_path / "t"
    temps = temp_commit_table(root)
    local = scan(open_table(str(root)))  # every file 10 days old or more: no cut-off effects
    manifest = tmp_path / "m"
    args = ["--delete", "--yes", "--json", "--manifest", str(manifest)]
    done = CliRunner().invoke(
        main,
        ["orphans", str(root), "--engine", "spark", *args, "--report-table", str(tmp_path / "r")],
    )
    assert done.exit_code == 1, done.output
    report = orjson.loads(done.stdout)
    assert {(f["path"], f["class"], f["reason"]) for f in report["files"]} == {
        (c.path, c.file_class.value, c.reason) for c in local.candidates
    }
    assert report["totals"]["pending-commit"]["files"] == 7
    assert report["totals"]["stranded-commit"]["files"] == 1
    assert read_manifest(manifest).paths("deleted") == [temps["hadoop"]]
    assert all((root / p).exists() for k, p in temps.items() if k != "hadoop")


# A delete that fails in its task in make test; the task that dies (the job fails) in the
# long variant (make soak): the same table, plan and checks of the manifest and summary.
@pytest.mark.parametrize("fatal", [False, pytest.param(True, marks=pytest.mark.long)])
def test_spark_cleanup_reports_what_a_failing_delete_job_did(
    spark, tmp_path: Path, fatal: bool
) -> None:
    """The delete of one planned file fails part way in its executor task (one file a
    task): a batch that raises leaves its files "unknown", the others are "deleted", and the
    manifest and the summary say so (old code: the job failed, "nothing deleted", exit 2). If
    the task dies (``fatal``), the job fails: the manifest says "interrupted", the dead
    task's batch "unknown" (it was recorded so before its request), the files no request
    named "not_sent", and the error says to run again."""
    import failing_stores
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(failing_stores)
    root = tmp_path / "t"
    orphans_table(root)
    poison = "p=b/part-orphan.parquet"
    spec = failing_stores.PoisonedDeleteSpec(str(root), poison=poison, fatal=fatal)
    planned = scan_spark(spark, spec, str(tmp_path / "r"))
    expected = {c.path for c in planned.result.of(FileClass.ORPHAN, FileClass.LOG_TEMP)}
    assert poison in expected and len(expected) == 3
    manifest = tmp_path / "m"
    if fatal:
        from deltaguard.tools.orphans.cleanup import CleanupInterruptedError

        with pytest.raises(CleanupInterruptedError) as stopped:
            execute_spark(spark, spec, planned, manifest_dir=manifest, files_per_task=1)
        doc = orjson.loads((manifest / "manifest.json").read_bytes())
        assert doc == {"schema": MANIFEST_SCHEMA, **stopped.value.manifest}
        counts = doc["counts"]
        assert doc["status"] == "interrupted" and doc["signal"] is None
        assert counts["unknown"] >= 1  # the poisoned batch was sent: its outcome is unknown
        assert counts["deleted"] + counts["unknown"] + counts["not_sent"] == 3
        gone = {p for p in expected if not (root / p).exists()}
        assert counts["deleted"] <= len(gone) <= counts["deleted"] + counts["unknown"]
        assert "the delete job failed" in doc["error"] and "run the same command" in doc["error"]
    else:
        doc = execute_spark(spark, spec, planned, manifest_dir=manifest, files_per_task=1).manifest
        assert orjson.loads((manifest / "manifest.json").read_bytes()) == {
            "schema": MANIFEST_SCHEMA,
            **doc,
        }
        written = read_manifest(manifest)
        unknown, deleted = set(written.paths("unknown")), set(written.paths("deleted"))
        errors = written.outcomes().filter(pc.equal(written.outcomes()["outcome"], "unknown"))
        assert unknown == {poison} and "connection reset" in errors["error"][0].as_py()
        assert deleted and deleted | unknown == expected and not deleted & unknown
        assert not any((root / p).exists() for p in deleted)
        assert (root / poison).exists()
        # issue 49: the re-run (a healthy store) continues this run: its unknown file is
        # re-checked, still there, planned again and deleted now
        plain = StoreSpec(str(root))
        again = scan_spark(spark, plain, str(tmp_path / "r2"))
        rerun = execute_spark(
            spark, plain, again, manifest_dir=tmp_path / "m2", continues=written
        ).manifest
        assert rerun["continues"] == {
            "run": "m",
            "manifest": str(manifest),
            "status": "done",
            "signal": None,
            "error": None,
            "deleted": len(deleted),
            "rechecked": 1,
            "planned_again": 1,
            "gone": 0,
        }
        assert read_manifest(tmp_path / "m2").paths("deleted") == [poison]
        assert not (root / poison).exists() and rerun["status"] == "done"
    from deltaguard.tools.orphans.cleanup import summary, unfinished  # new in this change

    assert unfinished(doc)
    line = summary(doc, "m")
    assert "nothing deleted" not in line and f"{doc['counts']['unknown']} outcome unknown" in line


def _truncate_a_part(table: Path) -> Path:
    """Truncates part 2 of 3 (the one holding adds) of the multipart table's checkpoint;
    returns its first part."""
    parts = sorted((table / "_delta_log").glob("*.checkpoint.*.parquet"))
    assert [p.name.split(".")[2] for p in parts] == ["0000000001", "0000000002", "0000000003"]
    parts[1].write_bytes(parts[1].read_bytes()[:200])
    return parts[0]


def test_spark_engine_never_skips_a_truncated_checkpoint_part(
    spark_tables, spark, tmp_path: Path
) -> None:
    """The part holding the adds of a multi-part checkpoint truncated, in a session whose
    settings skip damaged files (where a plain ``spark.read`` drops that part silently and
    its live files look unreferenced): the Spark engine fails naming the part, as the local
    engine does (which, with commit 0 retained, reads that checkpoint for the references of
    older versions), instead of classifying without it."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    table = copy_table(spark_tables.path("multipart"), tmp_path / "multipart")
    _truncate_a_part(table)
    part = sorted((table / "_delta_log").glob("*.checkpoint.*.parquet"))[1].name
    with pytest.raises(CorruptLogError, match=part):
        scan(open_table(str(table)), retention_ms=0)
    with _session_skipping_damaged_files(spark, True):
        with pytest.raises((CorruptLogError, PySparkException, Py4JError)) as ours:
            scan_spark(spark, StoreSpec(str(table)), str(tmp_path / "r"), retention_ms=0)
    assert part in str(ours.value)


def _checkpoint_bytes(path: Path) -> bytes:
    if path.suffix == ".json":
        return path.read_bytes()
    import pyarrow.parquet as pq

    return str(pq.read_table(path).to_pylist()).encode()


@pytest.mark.parametrize(
    ("name", "skipping"),
    [("dv_cdc", False), ("multipart", True)],
    ids=["", "truncated-part-session-skips-damaged-files"],
)
def test_spark_engine_refuses_when_every_usable_checkpoint_is_damaged(
    spark_tables, spark, tmp_path: Path, name: str, skipping: bool
) -> None:
    """Every checkpoint damaged and commit 0 cleaned up: both engines refuse with the same
    error; a cleanup planned before the damage deletes nothing (its re-read of the log
    fails). The same with one part of a multi-part checkpoint truncated, in a session whose
    settings skip damaged files."""
    table = copy_table(spark_tables.path(name), tmp_path / name)
    spec = StoreSpec(str(table))
    planned = scan_spark(spark, spec, str(tmp_path / "r"), retention_ms=0)
    files = [c.path for c in planned.result.candidates]
    assert files
    if name == "multipart":
        _truncate_a_part(table)
    for checkpoint in (table / "_delta_log").glob("*.checkpoint.parquet"):
        checkpoint.write_bytes(checkpoint.read_bytes()[:200])
    (table / "_delta_log" / f"{0:020d}.json").unlink()
    with pytest.raises(CorruptLogError, match="every usable checkpoint is damaged") as local:
        scan(open_table(str(table)), retention_ms=0)
    with _session_skipping_damaged_files(spark, skipping):
        with pytest.raises(CorruptLogError, match="every usable checkpoint is damaged") as ours:
            scan_spark(spark, spec, str(tmp_path / "r2"), retention_ms=0)
        assert ours.value.path == local.value.path
        with pytest.raises(CorruptLogError):
            execute_spark(
                spark,
                spec,
                planned,
                manifest_dir=tmp_path / "m",
                options=CleanupOptions(unsafe_retention=True, given_retention=True),
            )
    assert all((table / p).exists() for p in files)


def _audits(table: Path, spark: Any) -> tuple[dict[str, Any], dict[str, Any], int, int]:
    local = audit_table(str(table), footers=False)  # the Spark engine's depth: exists
    ours = audit_table(
        str(table), file_check=spark_file_check(lambda: spark, StoreSpec(str(table)))
    )
    return local.to_json(), ours.to_json(), audit_exit_code(local), audit_exit_code(ours)


def test_spark_audit_file_check_finds_what_the_local_one_finds(
    spark_tables, spark, tmp_path: Path
) -> None:
    """``audit --engine spark``'s file check (depth ``exists``, its default): the same
    findings, summary and exit code as the local one at that depth on healthy tables (hive-style paths with special characters, DVs and CDC) and
    on a table with a deleted data file, a deleted DV file, a truncated data file, a
    stray file in the log, an orphan and live files outside the root."""
    for name in ("partitioned", "dv_cdc"):
        local, ours, local_code, our_code = _audits(spark_tables.path(name), spark)
        assert (ours, our_code) == (local, local_code) and our_code == 0, name
    table = copy_table(spark_tables.path("dv_cdc"), tmp_path / "dv_cdc")
    snap = load_snapshot(str(table))
    owner, dv = next(iter(snap.adds.deletion_vectors()))
    (table / dv.file_path()).unlink()
    plain = next(p for p in snap.adds.paths() if p != owner)
    (table / plain).unlink()
    cut = next(p for p in snap.adds.paths() if p not in (owner, plain))
    (table / cut).write_bytes((table / cut).read_bytes()[:100])  # size-mismatch
    (table / "_delta_log" / "notes.txt").write_text("stray")
    (table / "part-orphan.parquet").write_bytes(b"x")
    add = {"partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}
    lines = [
        {"commitInfo": {"operation": "X"}},
        {"add": {**add, "path": "s3://elsewhere/shallow/part-0.parquet"}},
        {"add": {**add, "path": f"file://{tmp_path}/outside-gone.parquet"}},
    ]
    (table / "_delta_log" / f"{snap.version + 1:020d}.json").write_bytes(
        b"\n".join(orjson.dumps(x) for x in lines) + b"\n"
    )
    # through the CLI, in this process: --engine spark uses the running session
    local_run = CliRunner().invoke(main, ["audit", str(table), "--json", "--check", "exists"])
    our_run = CliRunner().invoke(main, ["audit", str(table), "--json", "--engine", "spark"])
    local, ours = orjson.loads(local_run.stdout), orjson.loads(our_run.stdout)
    assert (ours, our_run.exit_code) == (local, local_run.exit_code) and our_run.exit_code == 1
    codes = {f["code"] for f in ours["findings"]}
    assert {"missing-data-file", "missing-dv-file", "stray-log-file", "external-file"} <= codes
    assert ours["summary"]["missing_data_files"] == 2 and ours["summary"]["missing_dv_files"] == 1
    assert ours["summary"]["size_mismatches"] == 1 and "size-mismatch" in codes


#: Partition values and name parts that a decoded path keeps literally.
ODD_VALUES = ("a #b", "c?d", "e%41f", "g+h", "ké ü")
ODD_NAME = "x #?%41+ é"


def _hadoop_uri(spark: Any, path: Path) -> str:
    """``path`` as Delta on Spark writes an absolute path into the log (Hadoop's encoding)."""
    return str(spark._jvm.org.apache.hadoop.fs.Path(f"file:{path}").toUri().toString())


def _odd_spark_table(spark: Any, root: Path) -> dict[str, str]:
    """A Spark table partitioned by :data:`ODD_VALUES` with a deletion vector, then one commit
    with entries by absolute path: an ``add``, a ``remove`` (a tombstone) and the DV moved to
    a ``p`` (absolute) descriptor, each file named with :data:`ODD_NAME`. Returns the files
    those entries name (relative)."""
    spark.createDataFrame(
        [(i, ODD_VALUES[i % len(ODD_VALUES)]) for i in range(20)], "id long, p string"
    ).coalesce(1).write.format("delta").partitionBy("p").option(
        "delta.enableDeletionVectors", "true"
    ).save(str(root))
    spark.sql(f"DELETE FROM delta.`{root}` WHERE id = 0")
    log = root / "_delta_log"
    actions = [orjson.loads(x) for x in (log / f"{1:020d}.json").read_bytes().splitlines()]
    with_dv = next(a["add"] for a in actions if "add" in a and a["add"].get("deletionVector"))
    dv = with_dv["deletionVector"]
    snap = load_snapshot(open_table(str(root)))
    plain = next(p for p in snap.adds.paths() if p.startswith(f"p={ODD_VALUES[4]}/"))
    files = {
        "abs_add": f"p={ODD_VALUES[4]}/{ODD_NAME}.parquet",
        "abs_remove": f"p={ODD_VALUES[3]}/{ODD_NAME}.parquet",
        "abs_dv": f"{ODD_NAME}.bin",
    }
    shutil.copy(root / plain, root / files["abs_add"])
    shutil.copy(root / plain, root / files["abs_remove"])
    (dv_source,) = [d.file_path() for p, d in snap.adds.deletion_vectors()]
    shutil.copy(root / str(dv_source), root / files["abs_dv"])
    now = int(time.time() * 1000)
    absolute_dv = {
        **dv,
        "storageType": "p",
        "pathOrInlineDv": _hadoop_uri(spark, root / files["abs_dv"]),
    }
    entries = [
        {"commitInfo": {"operation": "deltaguard test: absolute paths"}},
        {
            "remove": {
                "path": with_dv["path"],
                "deletionVector": dv,
                "deletionTimestamp": now,
                "dataChange": True,
            }
        },
        {"add": {**with_dv, "deletionVector": absolute_dv}},
        {
            "add": {
                "path": _hadoop_uri(spark, root / files["abs_add"]),
                "partitionValues": {"p": ODD_VALUES[4]},
                "size": (root / plain).stat().st_size,
                "modificationTime": now,
                "dataChange": True,
            }
        },
        {
            "remove": {
                "path": _hadoop_uri(spark, root / files["abs_remove"]),
                "deletionTimestamp": now,
                "dataChange": True,
            }
        },
    ]
    (log / f"{2:020d}.json").write_bytes(b"\n".join(orjson.dumps(e) for e in entries) + b"\n")
    return files


def _odd_orphans(root: Path) -> set[str]:
    """A copy of a data file under an :data:`ODD_NAME` in every partition directory."""
    planted = set()
    for part in sorted(d for d in root.iterdir() if d.name.startswith("p=")):
        source = next(part.glob("part-*"))
        shutil.copy(source, part / f"orphan {ODD_NAME}.parquet")
        planted.add(f"{part.name}/orphan {ODD_NAME}.parquet")
    return planted


def _rows(spark: Any, root: Path) -> list[tuple[int, str]]:
    """Every row of the table, read in full: by Spark for the Spark table, by delta-rs for
    the delta-rs table (each table read by its own writer's reader)."""
    if root.name == "spark":
        return sorted((r.id, r.p) for r in spark.read.format("delta").load(str(root)).collect())
    import deltalake

    table = deltalake.DeltaTable(str(root)).to_pyarrow_table()
    return sorted(zip(table["id"].to_pylist(), table["p"].to_pylist(), strict=True))


def test_odd_paths_classify_like_vacuum_and_cleanup_keeps_every_live_file(
    spark, tmp_path: Path
) -> None:
    """Issue 21 item 3: ``#``, ``?``, ``%``, ``+``, spaces and non-ASCII letters in partition
    values and file names, in relative paths (Spark- and delta-rs-written) and in ``add``,
    ``remove`` and deletion-vector entries by absolute path inside the root: both engines
    classify alike and as ``VACUUM ... RETAIN 0 HOURS DRY RUN`` (except the absolute DV file,
    which VACUUM never protects: docs/design/orphans.md), and cleanup deletes nothing live."""
    import deltalake
    import pyarrow as pa

    from deltaguard.localstack.failed_job import VACUUM_CONF, vacuum_dry_run

    spark_root, rs_root = tmp_path / "spark", tmp_path / "delta-rs"
    entries = _odd_spark_table(spark, spark_root)
    for mode, ids in (("append", range(10)), ("overwrite", range(10, 20))):
        rows = {"id": list(ids), "p": [ODD_VALUES[i % len(ODD_VALUES)] for i in ids]}
        deltalake.write_deltalake(str(rs_root), pa.table(rows), partition_by=["p"], mode=mode)
    planted = {root: _odd_orphans(root) for root in (spark_root, rs_root)}
    before = {root: _rows(spark, root) for root in (spark_root, rs_root)}
    # RETAIN 0 HOURS allowed, and VACUUM's listing in 4 tasks, not Spark's default 10,000
    for key, value in VACUUM_CONF.items():
        spark.conf.set(key, value)
    try:
        vacuum = {
            root: {p for p in vacuum_dry_run(spark, str(root)) if os.path.isfile(p)}
            for root in (spark_root, rs_root)
        }
    finally:
        for key in VACUUM_CONF:
            spark.conf.unset(key)
    for root in (spark_root, rs_root):
        ours = scan_spark(
            spark, StoreSpec(str(root)), str(tmp_path / f"r-{root.name}"), retention_ms=0
        )
        local = scan(open_table(str(root)), retention_ms=0, now_ms=ours.result.now_ms)
        assert _classified(ours.result.candidates) == _classified(local.candidates), root.name
        found = {
            f"{root}/{c.path}" for c in local.candidates if c.file_class is not FileClass.RECENT
        }
        classes = {c.path: c.file_class for c in local.candidates}
        assert planted[root] <= {p for p, c in classes.items() if c is FileClass.ORPHAN}
        if root == spark_root:
            assert classes[entries["abs_remove"]] is FileClass.EXPIRED_TOMBSTONE
            assert entries["abs_add"] not in classes and entries["abs_dv"] not in classes
            # VACUUM would delete the live absolute DV file; we keep it (docs/design/orphans.md)
            assert vacuum[root] - found == {f"{root}/{entries['abs_dv']}"}
            assert found <= vacuum[root]
        else:
            assert any(c is FileClass.EXPIRED_TOMBSTONE for c in classes.values())
            assert found == vacuum[root]
    # cleanup: the Spark engine through the CLI (the running session), the local engine
    run = CliRunner().invoke(
        main,
        [
            "orphans",
            str(spark_root),
            "--engine",
            "spark",
            "--delete",
            "--yes",
            "--retention",
            "0",
            "--unsafe-retention",
            "--manifest",
            str(tmp_path / "m"),
        ],
    )
    assert run.exit_code == 0, run.output
    store = open_table(str(rs_root))
    execute(
        store,
        scan(store, retention_ms=0),
        manifest_path=tmp_path / "m-local",
        options=CleanupOptions(unsafe_retention=True, given_retention=True),
    )
    for root in (spark_root, rs_root):
        assert not [p for p in planted[root] if (root / p).exists()]
        assert _rows(spark, root) == before[root], root.name
    assert (spark_root / entries["abs_dv"]).exists() and (spark_root / entries["abs_add"]).exists()
    assert len(before[rs_root]) == 10 and len(before[spark_root]) == 20 - 1 + 4


def test_spark_engine_lists_and_deletes_with_the_sessions_s3_settings(
    spark, localstack, ls_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21 item 4, as under spark-submit: the session's Hadoop configuration reaches
    LocalStack only through per-bucket settings (endpoint, region, path style, keys; the
    global endpoint points nowhere), and the command has no S3 options and an environment
    without credentials whose boto3 endpoint points nowhere. The Spark engine lists, plans
    and deletes through the session's settings; a different ``--endpoint`` is refused."""
    root = tmp_path / "t"
    orphans_table(root)
    endpoint = localstack.endpoint
    client = endpoint.s3_client()
    upload_table(root, client, ls_bucket, "lake/tbl")
    uri = f"s3a://{ls_bucket}/lake/tbl"
    expected = scan(open_table(uri, client=client), retention_ms=0)
    planned = {c.path for c in expected.of(FileClass.ORPHAN, FileClass.LOG_TEMP)}
    assert planned
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    per_bucket = {
        f"fs.s3a.bucket.{ls_bucket}.{key.removeprefix('spark.hadoop.fs.s3a.')}": value
        for key, value in endpoint.s3_storage().hadoop_conf().items()
        if key.startswith("spark.hadoop.fs.s3a.") and not key.endswith(".impl")
    }
    saved = hadoop.get("fs.s3a.endpoint")
    for key, value in per_bucket.items():
        hadoop.set(key, value)
    hadoop.set("fs.s3a.endpoint", "http://127.0.0.1:1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    args = ["orphans", uri, "--engine", "spark", "--retention", "0", "--unsafe-retention"]
    args += ["--report-table", str(tmp_path / "report")]
    try:
        refused = CliRunner().invoke(main, [*args, "--endpoint", "http://127.0.0.1:9"])
        run = CliRunner().invoke(
            main, [*args, "--json", "--delete", "--yes", "--manifest", str(tmp_path / "m")]
        )
    finally:
        for key in per_bucket:
            hadoop.unset(key)
        if saved is None:
            hadoop.unset("fs.s3a.endpoint")
        else:
            hadoop.set("fs.s3a.endpoint", saved)
    assert refused.exit_code == 2, refused.output
    assert (
        f"--endpoint http://127.0.0.1:9 differs from the Spark session's fs.s3a.bucket.{ls_bucket}.endpoint"
        in refused.stderr
    )
    assert run.exit_code == 0, run.output
    doc = orjson.loads(run.stdout)
    assert read_manifest(tmp_path / "m").paths("deleted") == sorted(planned)
    assert doc["cleanup"]["counts"]["deleted"] == len(planned)
    left = {
        o["Key"].removeprefix("lake/tbl/")
        for o in client.list_objects_v2(Bucket=ls_bucket, Prefix="lake/tbl/").get("Contents", [])
    }
    assert not planned & left
    snapshot = load_snapshot(open_table(uri, client=client))
    assert set(snapshot.adds.paths()) <= left


def test_sql_classification_matches_data_candidate_row_for_row(spark) -> None:
    """:mod:`~deltaguard.tools.spark_engine.classify_sql` against the local engine's
    ``data_candidate`` on every combination of flags (null flags: a path no entry names),
    both sides of the cut-off, inside and outside ``_change_data``: same class, same reason."""
    from itertools import product

    from deltaguard.tools.orphans.classify import data_candidate
    from deltaguard.tools.spark_engine.classify_sql import data_class_columns
    from deltaguard.tools.storage import FileInfo

    cutoff = 1_000
    flag_values = [None, False, True]
    rows = [
        (path, mtime, protected, named, tomb, tomb_ms, cdc)
        for path, mtime in product(["p=1/a.parquet", "_change_data/c.parquet"], [999, 1_000])
        for protected, named, tomb, cdc in product(flag_values, repeat=4)
        for tomb_ms in ([None, 42, 1_795_325_575_419, -1] if tomb else [None])
    ]
    frame = spark.createDataFrame(
        rows,
        "path string, mtime_ms long, protected boolean, named_in_log boolean, tombstone boolean, "
        "tombstone_ms long, change_data boolean",
    )
    file_class, reason = data_class_columns(cutoff)
    got = frame.select(file_class.alias("class"), reason.alias("reason")).collect()
    seen = set()
    for (path, mtime, protected, named, tomb, tomb_ms, cdc), row in zip(rows, got, strict=True):
        want = data_candidate(
            FileInfo(path, 0, mtime),
            cutoff,
            protected=bool(protected),
            named_in_log=bool(named),
            tombstone=(bool(tomb), tomb_ms),
            change_data=bool(cdc),
        )
        expected = (want.file_class.value, want.reason) if want is not None else (None, None)
        assert (row["class"], row["reason"]) == expected, (path, mtime, protected, named, tomb)
        seen.add(expected[0])
    assert seen == {None, "recent", "orphan", "expired-tombstone"}


@pytest.mark.parametrize(
    ("partition_columns", "configuration"),
    [
        ([], {}),
        (["_p", "a b", "c.d#"], {}),
        (["p"], {"delta.universalFormat.enabledFormats": "delta, Iceberg"}),
    ],
)
def test_sql_visibility_matches_the_hidden_name_rule(
    spark, partition_columns: list[str], configuration: dict[str, str]
) -> None:
    """``visible_unkept`` (Java regex from :func:`~deltaguard.tools.orphans.rules.hidden_regex`
    and checkpoint prefixes) against the local engine's ``is_visible``/``in_checkpoint``."""
    from deltaguard.tools.orphans.rules import hidden_name_rule, is_visible
    from deltaguard.tools.orphans.streaming import in_checkpoint
    from deltaguard.tools.spark_engine.classify_sql import visible_unkept

    names = ["a", "_x", ".y", "_delta_index_1", "_change_data", "_p=1", "a b=2", "c.d#=3"]
    names += ["metadata", "metadata2", "p=1", "_", "é_", "_é", "cx", "cp"]
    paths = [f"{a}/{b}/f" for a in names for b in names] + [f"{a}/f.parquet" for a in names]
    for checkpoints in [set(), {"cp"}, {"cx", "a/cp"}]:
        frame = spark.createDataFrame([(p,) for p in paths], "path string")
        got = frame.select(
            "path", visible_unkept(partition_columns, configuration, checkpoints).alias("v")
        ).collect()
        is_hidden = hidden_name_rule(partition_columns, configuration)
        for row in got:
            want = is_visible(row.path, is_hidden) and not in_checkpoint(row.path, checkpoints)
            assert row.v == want, (row.path, checkpoints)


def test_actions_mapped_in_sql_equal_the_path_rule(spark, tmp_path: Path) -> None:
    """The file actions ``read_log`` maps in Spark SQL (``_plain_actions``) and the ones it
    sends through the path rule (``_ruled``) give the same rows for every action either can
    take: odd names, inline DVs with and without an offset; and the SQL side takes no action
    whose raw path the rule would change (decoding, absolute, not normalized)."""
    from pyspark.sql import functions as F

    from deltaguard.tools.deltalog.actions import decode_path
    from deltaguard.tools.deltalog.paths import relative_to_root
    from deltaguard.tools.spark_engine import log_refs

    root = tmp_path / "t"
    root.mkdir()
    store = open_table(str(root))
    raw_paths = ["a.parquet", "p=1/a b#c?.parquet", "é/ü+.parquet", "x y/../z", "a//b", "./a"]
    raw_paths += ["a%20b", "ab%3Ac", f"file:{root}/in.parquet", "s3://other/b", "/elsewhere/x"]
    dvs = [None, ("i", "wi5b=000010000siXQKl0rr91000f", None), ("i", "abc", 7)]
    rows = [("add", p, dv, None, "f.json", 1, True) for p in raw_paths for dv in dvs] + [
        ("remove", p, None, 5, "f.json", 1, True) for p in raw_paths
    ]
    frame = spark.createDataFrame(
        rows,
        "kind string, path string, "
        "dv struct<storageType string, pathOrInlineDv string, offset int>, "
        "deletion_ts long, file string, version long, in_segment boolean",
    ).withColumn("small", F.lit(None).cast("string"))
    needs = log_refs._needs_path_rule(F.col("path"), F.col("dv"))
    plain = {tuple(r) for r in log_refs._plain_actions(frame.where(~needs)).collect()}
    ruled_all = {tuple(r) for r in log_refs._ruled(StoreSpec(str(root)))(frame.collect())}
    assert plain and plain <= ruled_all
    for p in {r[1] for r in frame.where(~needs).collect()}:
        assert relative_to_root(decode_path(p), store) == p
    assert {r[1] for r in frame.where(needs).collect()} >= {"a%20b", "x y/../z", "a//b", "./a"}
    # the summary's test on raw log rows (one action each, cdc too) agrees row for row
    raw_rows = [
        {"add": {"path": p, "deletionVector": dv}, "i": i}
        for i, (p, dv) in enumerate((p, dv) for p in raw_paths for dv in dvs)
    ]
    raw_rows += [{"remove": {"path": p}, "i": 100 + i} for i, p in enumerate(raw_paths)]
    raw_rows += [{"cdc": {"path": p}, "i": 200 + i} for i, p in enumerate(raw_paths)]
    in_file = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1}
    raw_rows += [{"add": {"path": "a.parquet", "deletionVector": in_file}, "i": 300}]
    raw_rows += [{"remove": {"path": "a.parquet", "deletionVector": in_file}, "i": 301}]
    no_type = {"storageType": None, "pathOrInlineDv": "abc", "offset": None}
    raw_rows += [{"add": {"path": "a.parquet", "deletionVector": no_type}, "i": 302}]
    raw = spark.createDataFrame(
        [(r.get("add"), r.get("remove"), r.get("cdc"), r["i"]) for r in raw_rows],
        f"{log_refs.RAW_SCHEMA.split(', metaData')[0]}, i int",
    )
    raw_flags = dict(raw.select("i", log_refs._raw_needs_path_rule()).collect())
    action_flags = [r[0] for r in frame.select(needs).collect()]
    adds = len(action_flags) - len(raw_paths)
    removes = [raw_flags[100 + i] for i in range(len(raw_paths))]
    assert [raw_flags[i] for i in range(adds)] + removes == action_flags
    assert [raw_flags[200 + i] for i in range(len(raw_paths))] == removes  # no DV: path only
    assert any(action_flags) and not all(action_flags)
    assert raw_flags[300] and raw_flags[301]  # a DV in a file needs the rule
    assert raw_flags[302]  # so does a DV without a storage type (the rule refuses it)
    no_type_row = frame.limit(1).withColumn(
        "dv",
        F.struct(
            F.lit(None).cast("string").alias("storageType"),
            F.lit("abc").alias("pathOrInlineDv"),
            F.lit(None).cast("int").alias("offset"),
        ),
    )
    assert no_type_row.where(needs).count() == 1
    with pytest.raises(CorruptLogError, match="storageType None"):
        list(log_refs._ruled(StoreSpec(str(root)))(no_type_row.collect()))


def test_jvm_lister_lists_like_the_local_engine(spark, tmp_path: Path) -> None:
    """``TableLister`` (the JVM listing the scan uses) against the local engine's listing:
    the same visible files with the same sizes and mtimes, names with every odd character
    as on disk, the same hidden directories (not entered), and the streaming checkpoint
    markers collected on the way."""
    from deltaguard.tools.orphans.listing import list_table
    from deltaguard.tools.orphans.rules import hidden_name_rule
    from deltaguard.tools.spark_engine.table_lister import list_table_jvm

    root = tmp_path / "t b#%"
    files = ["p=1/a.parquet", "p=1/b c#d%25e:f?é+.parquet", "p=1/_hidden.parquet"]
    files += ["p=1/.a.parquet.crc", "p=1/_tmp/z.parquet", "p=1/q=2/deep.parquet", "top"]
    files += ["_change_data/c.parquet", "p=ü x/f", "_delta_index/i", ".hid/y", "_p=3/f"]
    files += ["cp/metadata", "cp/offsets/0", "_delta_log/00000000000000000000.json"]
    for i, rel in enumerate(files):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * i)
        os.utime(path, ns=(1_700_000_000_123_000_000 + i, 1_700_000_000_123_000_000 + i))
    (root / "empty" / "_e").mkdir(parents=True)
    is_hidden = hidden_name_rule(["_p"], {})
    local = list_table(open_table(str(root)), is_hidden)
    listing = list_table_jvm(spark, StoreSpec(str(root)), ["_p"], {})
    assert listing is not None
    got = sorted((r.path, r.size, r.mtime_ms) for r in listing.files.collect())
    assert got == sorted((f.path, f.size, f.mtime_ms) for f in local.files)
    assert listing.file_count == len(got)
    assert listing.hidden_dirs() == sorted(local.hidden_dirs)
    assert listing.markers() == {"cp/metadata", "cp/offsets/0"}


def test_one_checkpoint_flags_equal_the_reconciled_ones(spark, tmp_path: Path) -> None:
    """When the snapshot is one checkpoint, ``reference_rows`` skips the reconciliation; its
    flags equal the reconciled ones on a table with live files, tombstones on both sides of
    the cut-off, deletion vectors and older commits."""
    from deltaguard.tools.deltalog.listing import list_log
    from deltaguard.tools.spark_engine.log_refs import (
        flag_aggregates,
        read_log,
        reference_rows,
    )

    ops = [("append", 1), ("append-encoded", 1), ("append-absolute", 1), ("dv", 1)]
    ops += [("remove", 1), ("cdc", 1), ("append", 200), ("remove", 1), ("dv", 1)]
    root = tmp_path / "t"
    t, _never = _run_history(root, [*ops, ("checkpoint", 0)], int(time.time() * 1000))
    assert t.version > 0
    spec = StoreSpec(str(root))
    log = read_log(spark, spec, list_log(spec.open()))
    try:
        assert log.one_checkpoint
        cutoff = int(time.time() * 1000) - 100 * 3_600_000  # the first remove is older
        flags = {
            fast: sorted(
                tuple(r)
                for r in reference_rows(log.actions, cutoff, fast)
                .groupBy("path")
                .agg(*flag_aggregates())
                .collect()
            )
            for fast in (True, False)
        }
    finally:
        log.release()
    assert flags[True] == flags[False]
    assert {r[1] for r in flags[True]} == {True, False}  # live files, and others
    assert any(r[4] for r in flags[True])  # a tombstone


def _checkpointed_table(root: Path, first_partition: str) -> None:
    """A file in ``first_partition`` added, then removed by a commit that adds one in
    ``p=1``; a checkpoint of that version without the (expired) tombstone; one more commit
    adding a file in ``p=2``. The first file is named only by commits before the checkpoint."""
    from deltaguard.localstack.synthetic_table import SyntheticTable

    old = int(time.time() * 1000) - 40 * 86_400_000
    t = SyntheticTable(root)
    t.create(old)
    first = f"{first_partition}/x.parquet"
    t.commit([{"add": t.add_action(t.write_file(first, old), old)}], old)
    plain = t.add_action(t.write_file("p=1/y.parquet", old), old)
    t.commit([{"add": plain}, {"remove": t.remove_action((first, None), old)}], old)
    t.tombstones.clear()  # expired when the checkpoint was written: not in it
    t.checkpoint()
    t.commit([{"add": t.add_action(t.write_file("p=2/z.parquet", old), old)}], old)


@pytest.mark.parametrize("first_partition", ["p=a b", "p=0"])
def test_a_path_rule_needed_only_before_the_checkpoint_reruns_the_scan(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_partition: str
) -> None:
    """The scan plans the actions without the path rule when the snapshot's segment needs
    none, and checks the older commits in the job that writes the report. With ``p=a b`` only
    commits before the checkpoint name an encoded path (the checkpoint dropped the expired
    tombstone): the check finds it, the report is written again with the rule, and both
    engines classify alike (without the rerun, the file the old commits name would be an
    orphan). With ``p=0`` nothing needs the rule and the report is written once. The deferred
    actions, once settled, equal the ones read with the rule up front."""
    from deltaguard.tools.deltalog.listing import list_log
    from deltaguard.tools.spark_engine import orphans_scan as spark_scan
    from deltaguard.tools.spark_engine.log_refs import read_log, settle_path_rule

    root = tmp_path / "t"
    _checkpointed_table(root, first_partition)
    encoded = first_partition == "p=a b"
    first = f"{first_partition}/x.parquet"
    spec = StoreSpec(str(root))
    listing = list_log(spec.open())

    def actions(deferred: bool) -> set[tuple[Any, ...]]:
        log = read_log(spark, spec, listing, defer_path_rule=deferred)
        try:
            assert (log.unchecked is not None) is deferred
            rows = {tuple(r) for r in log.actions.collect()}
            if deferred:
                # left out and counted, or there is nothing to leave out
                assert (first in {r[1] for r in rows}) is not encoded
                assert settle_path_rule(log) is not encoded
                assert settle_path_rule(log)  # settled once
                rows = {tuple(r) for r in log.actions.collect()}
            return rows
        finally:
            log.release()

    both = actions(True)
    assert both == actions(False)
    assert first in {r[1] for r in both}
    settled: list[bool] = []

    def recorded(log: Any) -> bool:
        settled.append(settle_path_rule(log))
        return settled[-1]

    monkeypatch.setattr(spark_scan, "settle_path_rule", recorded)
    ours = scan_spark(spark, spec, str(tmp_path / "r"), retention_ms=0)
    assert settled == [not encoded]  # the report written again only when the rule was needed
    local = scan(open_table(str(root)), retention_ms=0, now_ms=ours.result.now_ms)
    assert _classified(ours.result.candidates) == _classified(local.candidates)
    assert FileClass.ORPHAN not in {c.file_class for c in local.candidates}
    assert {c.path for c in local.candidates} == {first}


DAMAGED_LINES = {
    "not-json": b"{not json",
    "add-without-path": b'{"add": {"size": 1}}',
    # a DV with no storageType: once dropped silently (neither plain nor ruled), its file
    # unreferenced; the local engine's parser refuses it too
    "dv-without-storage-type": b'{"add": {"path": "p=0/x.parquet", "deletionVector": {}}}',
    "dv-without-inline-data": b'{"add": {"path": "x.parquet", "deletionVector": {"storageType": "i"}}}',
}


@pytest.mark.parametrize("before_checkpoint", [False, True])
@pytest.mark.parametrize("damage", sorted(DAMAGED_LINES))
def test_spark_engine_names_the_file_of_a_damaged_commit(
    spark, tmp_path: Path, damage: str, before_checkpoint: bool
) -> None:
    """A commit line that is not JSON, a file action without a path, or one whose deletion
    vector lacks its storage type or its data stops the scan with exit code 2 and one line
    naming the commit file (the log read's FAILFAST, its missing-path check, the DV check of
    ``_ruled``), not a traceback; the local engine refuses the same lines. In a commit of the
    snapshot's segment, and in one before its checkpoint (which the scan parses only in the
    job that writes the report: read_log's ``defer_path_rule``)."""
    root = tmp_path / "t"
    t = orphans_table(root)
    commit = sorted((root / "_delta_log").glob("*.json"))[-1]
    commit.write_bytes(commit.read_bytes() + DAMAGED_LINES[damage] + b"\n")
    if before_checkpoint:
        t.commit([], t.last_commit_ms)
        t.checkpoint()
    if damage.startswith("dv-"):
        with pytest.raises(CorruptLogError):
            scan(open_table(str(root)), retention_ms=0)
    run = CliRunner().invoke(
        main,
        ["orphans", str(root), "--engine", "spark", "--report-table", str(tmp_path / "r")],
    )
    assert run.exit_code == 2, run.output
    assert commit.name in run.stderr and "Traceback" not in run.output + run.stderr


def _three_files_and_a_checkpoint(root: Path) -> tuple[Any, int]:
    """A synthetic table: three adds in ``p=0`` (versions 1-3), checkpoint 3; the table and
    the (old) time of every action."""
    from deltaguard.localstack.synthetic_table import SyntheticTable

    clock = int(time.time() * 1000) - 100 * HOUR
    t = SyntheticTable(root)
    t.create(clock)
    for i in range(3):
        rel = t.write_file(f"p=0/part-{i}.parquet", clock)
        t.commit([{"add": t.add_action(rel, clock)}], clock)
    t.checkpoint()
    return t, clock


def _write_compaction(root: Path, start: int, end: int, *actions: dict[str, Any]) -> None:
    """``<start>.<end>.compacted.json`` holding ``actions``, one per line."""
    body = "".join(orjson.dumps(a).decode() + "\n" for a in actions)
    (root / "_delta_log" / f"{start:020d}.{end:020d}.compacted.json").write_text(body)


def _scans_agree(spark: Any, root: Path, report: Path) -> Any:
    """Both engines' scans at retention 0: the same classes, version and references; the
    Spark engine's scan."""
    ours = scan_spark(spark, StoreSpec(str(root)), str(report), retention_ms=0)
    local = scan(open_table(str(root)), retention_ms=0, now_ms=ours.result.now_ms)
    assert _classified(ours.result.candidates) == _classified(local.candidates)
    assert (ours.result.version, ours.result.referenced_files) == (
        local.version,
        local.referenced_files,
    )
    return ours


def _versions_in_segment(spark: Any, root: Path) -> list[Any]:
    """The (version, in_segment) pairs of the actions the Spark engine reads."""
    from deltaguard.tools.deltalog.listing import list_log
    from deltaguard.tools.spark_engine.log_refs import read_log

    log = read_log(spark, StoreSpec(str(root)), list_log(open_table(str(root))))
    try:
        return log.actions.select("version", "in_segment").distinct().collect()  # type: ignore[no-any-return]
    finally:
        log.release()


def test_spark_engine_reads_compactions_like_the_local_engine(spark, tmp_path: Path) -> None:
    """Log compactions (``x.y.compacted.json``) name files for ``named_in_log`` but are never
    part of the snapshot's segment, in both engines: a file only a compaction names is a
    tombstone (named in the log), not an orphan; a file the compaction removes stays live;
    a file a commit after the checkpoint removed is a tombstone; the
    versions the Spark engine reads from the file names put commits after the checkpoint in
    the segment and the ones before it out."""
    root = tmp_path / "t"
    t, clock = _three_files_and_a_checkpoint(root)
    t.commit([{"remove": t.remove_action(("p=0/part-0.parquet", None), clock)}], clock)
    named = t.write_file("p=1/only-in-compaction.parquet", clock)
    orphan = t.write_file("p=1/orphan.parquet", clock)
    _write_compaction(
        root,
        1,
        2,
        {"add": t.add_action(named, clock)},
        {"remove": t.remove_action(("p=0/part-1.parquet", None), clock)},
    )
    ours = _scans_agree(spark, root, tmp_path / "r")
    rows = _versions_in_segment(spark, root)
    # commits 0-3 and the compaction (version 1) out; checkpoint 3 and commit 4 in
    assert sorted((r.version, r.in_segment) for r in rows) == [
        (0, False),
        (1, False),
        (2, False),
        (3, False),
        (3, True),
        (4, True),
    ]
    found = {c.path: c.file_class for c in ours.result.candidates}
    assert found[orphan] is FileClass.ORPHAN
    assert found["p=0/part-0.parquet"] is FileClass.EXPIRED_TOMBSTONE
    assert found[named] is FileClass.EXPIRED_TOMBSTONE  # named in the log, not live
    assert "p=0/part-1.parquet" not in found  # live: the compaction's remove is not in the segment


def test_a_compaction_covering_a_missing_commit_is_read_like_the_local_engine(
    spark, tmp_path: Path
) -> None:
    """A commit after the checkpoint is gone and a log compaction covers it: both engines
    replay the compaction in its place (one rule, ``json_chain``), so the file it removes is
    a tombstone and the file it adds is live; the commit inside its range that remains is
    read for ``named_in_log`` only. The Spark engine used to refuse this table."""
    root = tmp_path / "t"
    t, clock = _three_files_and_a_checkpoint(root)
    added = t.write_file("p=1/added.parquet", clock)
    t.commit([{"add": t.add_action(added, clock)}], clock)  # 4
    removed = {"remove": t.remove_action(("p=0/part-0.parquet", None), clock)}
    t.commit([removed], clock)  # 5
    late = t.write_file("p=1/late.parquet", clock)
    t.commit([{"add": t.add_action(late, clock)}], clock)  # 6
    orphan = t.write_file("p=1/orphan.parquet", clock)
    _write_compaction(root, 4, 5, {"add": t.add_action(added, clock)}, removed)
    (root / "_delta_log" / f"{4:020d}.json").unlink()

    ours = _scans_agree(spark, root, tmp_path / "r")
    found = {c.path: c.file_class for c in ours.result.candidates}
    assert ours.result.version == 6
    assert found[orphan] is FileClass.ORPHAN
    assert found["p=0/part-0.parquet"] is FileClass.EXPIRED_TOMBSTONE
    assert added not in found and late not in found  # live
    rows = _versions_in_segment(spark, root)
    # the compaction (version 4) and commit 6 in the segment; commit 5 only for named_in_log
    assert sorted((r.version, r.in_segment) for r in rows if r.version >= 4) == [
        (4, True),
        (5, False),
        (6, True),
    ]


@pytest.mark.parametrize("checkpoint", [True, False], ids=["after-checkpoint", "no-checkpoint"])
def test_the_check_before_the_jvm_refuses_a_missing_commit_in_the_local_engines_words(
    tmp_path: Path, checkpoint: bool
) -> None:
    """A commit the snapshot needs is gone: the Spark engine's check before it starts a JVM
    (``require_reconstructable``) raises what the local engine's snapshot raises, with the
    same one line (``snapshot.unreconstructable``)."""
    from deltaguard.tools.deltalog.errors import VersionNotFoundError
    from deltaguard.tools.deltalog.listing import list_log
    from deltaguard.tools.spark_engine.log_refs import require_reconstructable

    root = tmp_path / "t"
    t, clock = _three_files_and_a_checkpoint(root)
    if not checkpoint:
        next((root / "_delta_log").glob("*.checkpoint.parquet")).unlink()
        (root / "_delta_log" / "_last_checkpoint").unlink(missing_ok=True)
    t.commit([{"remove": t.remove_action(("p=0/part-0.parquet", None), clock)}], clock)  # 4
    t.commit([{"remove": t.remove_action(("p=0/part-1.parquet", None), clock)}], clock)  # 5
    (root / "_delta_log" / f"{4 if checkpoint else 2:020d}.json").unlink()
    store = open_table(str(root))
    with pytest.raises(VersionNotFoundError) as local:
        load_snapshot(store)
    with pytest.raises(VersionNotFoundError) as ours:
        require_reconstructable(list_log(store), store.uri, store)
    assert str(ours.value) == str(local.value)
    assert ("after checkpoint 3" in str(ours.value)) is checkpoint


def test_spark_engine_lists_a_large_s3_directory_in_key_ranges(
    spark, localstack, tmp_path: Path
) -> None:
    """An unpartitioned table's root on LocalStack, cut into key ranges by the log's names
    (``range_files=100``: 600 files, 6 ranges): the Spark engine classifies it as the local
    engine does (the orphans between, before and after the cuts; a sub-directory and a hidden
    one inside a range), and the proxy's request log shows one first page per range, each
    range but the first starting after a cut, and no listing of the root from its start but
    the first range's."""
    from deltaguard.localstack.fault_proxy import FaultProxy, requests_under
    from deltaguard.localstack.synthetic_table import SyntheticTable

    root = tmp_path / "flat"
    clock = int(time.time() * 1000) - 100 * HOUR
    t = SyntheticTable(root)
    t.create(clock)
    adds = [
        t.add_action(t.write_file(f"part-{i:05d}-c000.parquet", clock), clock) for i in range(600)
    ]
    t.commit([{"add": a} for a in adds], clock)
    t.checkpoint()
    for name in ("part-00000-orphan.parquet", "part-00301-orphan.parquet", "zz-orphan.parquet",
                 "a-orphan.parquet", "part-00450-d/inside.parquet",
                 "sub/part-00100-orphan.parquet", "_hidden/part-00200.parquet"):  # fmt: skip
        t.write_file(name, clock)
    bucket = f"ranges-{int(time.time() * 1000)}"  # a new bucket: a new S3A filesystem
    client = localstack.endpoint.s3_client()
    client.create_bucket(Bucket=bucket)
    upload_table(root, client, bucket, "lake/flat")
    uri = f"s3a://{bucket}/lake/flat"
    with FaultProxy(localstack.endpoint, tmp_path, seed=1) as proxy:
        _s3a_session(spark, proxy.endpoint)
        spec = StoreSpec(uri, S3Options(proxy.endpoint.url, proxy.endpoint.region, path_style=True))
        ours = scan_spark(spark, spec, str(tmp_path / "r"), retention_ms=0, range_files=100)
        log = proxy.requests()
    _s3a_session(spark, localstack.endpoint)
    local = scan(open_table(uri, client=client), retention_ms=0, now_ms=ours.result.now_ms)
    assert _classified(ours.result.candidates) == _classified(local.candidates)
    assert ours.result.listed_files == local.listed_files == 600 + 6  # none listed twice
    orphans = {c.path for c in ours.result.candidates if c.file_class is FileClass.ORPHAN}
    assert orphans == {"part-00000-orphan.parquet", "part-00301-orphan.parquet",
                       "zz-orphan.parquet", "a-orphan.parquet",
                       "part-00450-d/inside.parquet",
                       "sub/part-00100-orphan.parquet"}  # fmt: skip
    assert ours.result.hidden_dirs == local.hidden_dirs == ["_delta_log", "_hidden"]
    root_lists = [
        e
        for e in requests_under(log, bucket, "lake/flat/")
        if e["kind"] == "s3 ListObjects" and e["prefix"] == "lake/flat/" and not e["continued"]
    ]
    starts = sorted(e["start_after"] for e in root_lists)
    assert starts[0] == "" and starts[1] != "", "one range starts at the root's beginning"
    cuts = starts[1:]
    assert len(cuts) == len(set(cuts)) >= 4  # 600 files in ranges of about 100
    assert all(c.startswith("lake/flat/part-") and "/" not in c[len("lake/flat/") :] for c in cuts)
