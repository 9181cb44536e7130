"""``deltaguard repair`` on Spark-written tables (copies of the session's ``spark_tables``):
partition values that need encoding with classic checkpoints, a missing deletion vector file,
V2 checkpoints with sidecars and in-commit timestamps, several kinds of damage at once. After
the repair, Spark (reading, then checkpointing and appending), delta-rs and deltaguard's
replay see the same live files and the audit is healthy. Also ``deltaguard checkpoint``'s
checkpoints read by Spark and delta-rs (at the end, sharing this module's session)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from local_spark import local_spark_session

from deltaguard.localstack.delta_tables import ENCODED_PARTITION_VALUES
from deltaguard.localstack.table_copies import copy_table
from deltaguard.tools.commands.audit import audit_exit_code
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.audit import audit_table

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with local_spark_session(tmp_path_factory, "repair") as session:
        yield session


def _spark_files(spark: Any, root: Path) -> set[str]:
    df = spark.read.format("delta").load(str(root))
    assert df.count() >= 0  # reads every live file: fails on a missing or broken one
    return {Path(f.removeprefix("file:")).as_posix() for f in df.inputFiles()}


def _replay_files(root: Path) -> set[str]:
    snap = load_snapshot(str(root))
    return {Path(loc.removeprefix("file:")).as_posix() for loc in snap.live_locations()}


def _agree(spark: Any, root: Path) -> set[str]:
    replay = _replay_files(root)
    assert _spark_files(spark, root) == replay
    rs = {Path(u.removeprefix("file://")).as_posix() for u in DeltaTable(str(root)).file_uris()}
    assert rs == replay
    report = audit_table(str(root))
    assert audit_exit_code(report) == 0, report.findings
    return replay


def _last_commit(root: Path) -> list[dict]:
    version = load_snapshot(str(root)).version
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _repair(run_cli: Any, root: Path, *args: str) -> None:
    dry = run_cli("repair", str(root), *args)
    assert dry.returncode == 1, dry.stdout + dry.stderr
    done = run_cli("repair", str(root), *args, "--yes")
    assert done.returncode == 0, done.stdout + done.stderr


# proves: docs/guides/repair.md "repair: one commit that removes exactly the broken entries; every
# reader can read the table again"
def test_encoded_partitions_deleted_truncated_and_a_missing_directory(
    spark_tables, spark, run_cli, tmp_path
):
    root = copy_table(spark_tables.path("partitioned"), tmp_path / "t")
    snap = load_snapshot(str(root))
    by_dir: dict[str, list[str]] = {}
    for p in snap.adds.paths():
        by_dir.setdefault(p.rsplit("/", 1)[0], []).append(p)
    dirs = sorted(by_dir)
    encoded = [d for d in dirs if any(v in d for v in ENCODED_PARTITION_VALUES)]
    assert len(encoded) >= 2, dirs
    (root / by_dir[encoded[0]][0]).unlink()
    truncated = root / by_dir[encoded[1]][0]
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    gone_dir = next(d for d in dirs if d not in encoded[:2])
    for p in by_dir[gone_dir]:
        (root / p).unlink()
    expected = len(snap.adds) - 2 - len(by_dir[gone_dir])

    _repair(run_cli, root, "--check", "footers")
    removes = [a["remove"] for a in _last_commit(root) if "remove" in a]
    assert len(removes) == 2 + len(by_dir[gone_dir])
    assert any("%" in r["path"] for r in removes), "the raw, encoded path of the add"
    assert len(_agree(spark, root)) == expected
    # a checkpoint after the repair, then a Spark append: still in agreement
    jvm = spark._jvm
    jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(root)).checkpoint()
    spark.read.format("delta").load(str(root)).limit(1).write.format("delta").mode("append").save(
        str(root)
    )
    assert len(_agree(spark, root)) == expected + 1


# proves: docs/guides/repair.md "repair: one commit that removes exactly the broken entries; every
# reader can read the table again"
def test_missing_deletion_vector_file(spark_tables, spark, run_cli, tmp_path):
    root = copy_table(spark_tables.path("dv_cdc"), tmp_path / "t")
    snap = load_snapshot(str(root))
    data_file, dv = next(iter(snap.adds.deletion_vectors()))
    (root / dv.file_path()).unlink()
    _repair(run_cli, root)
    removes = [a["remove"] for a in _last_commit(root) if "remove" in a]
    assert len(removes) == 1 and removes[0]["deletionVector"]["pathOrInlineDv"] == (
        dv.path_or_inline_dv
    )
    live = _agree(spark, root)
    assert str(root / data_file) not in live and len(live) == len(snap.adds) - 1


def test_v2_checkpoint_table_with_in_commit_timestamps(spark_tables, spark, run_cli, tmp_path):
    root = copy_table(spark_tables.path("v2"), tmp_path / "t")
    snap = load_snapshot(str(root))
    victim = sorted(snap.adds.paths())[0]
    (root / victim).unlink()
    _repair(run_cli, root)
    info = _last_commit(root)[0]["commitInfo"]
    assert info["inCommitTimestamp"] > (snap.timestamp_ms or 0)
    live = _agree(spark, root)
    assert str(root / victim) not in live and len(live) == len(snap.adds) - 1


#: Both variants run in ``make soak`` only: a second Spark session (on LocalStack) costs two
#: minutes on the shared 2-core machine, the whole of this issue's `make test` budget; the
#: Python and delta-rs races on the same store (test_repair_s3.py) stay in ``make test``.
@pytest.mark.long
@pytest.mark.parametrize("appends", [3, 12])
def test_repair_races_a_spark_appender_on_the_conditional_store(
    localstack, ls_bucket, run_cli, tmp_path, monkeypatch, appends
):
    """A Spark driver appends through deltaguard's conditional LogStore (the s3-conditional
    preset) on LocalStack while repair commits: no append lost, the repair committed once,
    and Spark, delta-rs, the replay and the audit agree afterwards."""
    from deltaguard.localstack.append_job import arrow_schema
    from deltaguard.localstack.delta_append import BlindAppender, create_table
    from deltaguard.localstack.spark_driver import build_test_session
    from deltaguard.logstore.preset_name import PresetName
    from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
    from deltaguard.logstore.s3_location import S3Location
    from deltaguard.tools.storage import S3Options

    endpoint = localstack.endpoint
    for name, value in endpoint.credentials_env().items():
        monkeypatch.setenv(name, value)
    s3 = endpoint.s3_client()
    uri = f"s3a://{ls_bucket}/spark-race"
    store = S3ConditionalLogStore(s3)
    create_table(store, uri, arrow_schema())

    def put(location: str, data: bytes) -> None:
        loc = S3Location.parse(location)
        s3.put_object(Bucket=loc.bucket, Key=loc.key, Body=data)

    rows = {
        "writer": [0] * 3,
        "batch": [0] * 3,
        "seq": [0, 1, 2],
        "payload": ["seed"] * 3,
    }
    for _ in range(2):
        BlindAppender(store, put, uri).append(pa.table(rows).cast(arrow_schema()))
    opts = S3Options(endpoint.url, endpoint.region, True)
    victim = sorted(load_snapshot(uri, s3=opts).adds.paths())[0]
    loc = S3Location.parse(f"{uri}/{victim}")
    s3.delete_object(Bucket=loc.bucket, Key=loc.key)
    spark = build_test_session(
        endpoint.s3_storage(),
        PresetName.S3_CONDITIONAL,
        app_name="repair-race",
        local_dir=tmp_path / "spark",
    )
    try:
        tags: list[str] = []
        errors: list[BaseException] = []
        repaired = threading.Event()

        def append() -> None:
            try:
                while len(tags) < appends or not repaired.is_set():
                    tag = f"spark-{len(tags)}"
                    spark.range(3).selectExpr(
                        "CAST(0 AS INT) AS writer",
                        "CAST(0 AS INT) AS batch",
                        "id AS seq",
                        f"'{tag}' AS payload",
                    ).write.format("delta").mode("append").save(uri)
                    tags.append(tag)
            except BaseException as exc:
                errors.append(exc)

        writer = threading.Thread(target=append)
        writer.start()
        args = ["--endpoint", endpoint.url, "--region", endpoint.region, "--path-style", "--yes"]
        try:
            out = run_cli("repair", uri, *args, env=endpoint.credentials_env())
        finally:
            repaired.set()
        writer.join()
        assert not errors, errors
        assert out.returncode == 0, out.stdout + out.stderr
        df = spark.read.format("delta").load(uri)
        payloads = [r.payload for r in df.select("payload").collect()]
        spark_files = {f.replace("s3a://", "s3://", 1) for f in df.inputFiles()}
    finally:
        spark.stop()
    for tag in tags:
        assert payloads.count(tag) == 3, f"append {tag} lost or doubled"
    assert payloads.count("seed") == 3, "one seed append's file was deleted and removed"
    snap = load_snapshot(uri, s3=opts)
    replay = {f"s3://{ls_bucket}/spark-race/{p}" for p in snap.adds.paths()}
    assert spark_files == replay
    rs = DeltaTable(uri.replace("s3a://", "s3://", 1), storage_options=endpoint.delta_rs_options())
    assert set(rs.file_uris()) == replay
    assert audit_exit_code(audit_table(uri, s3=opts)) == 0


def test_what_a_streaming_reader_sees(spark, run_cli, tmp_path):
    """docs/guides/repair.md: a Spark stream reading the table stops at the repair version (a commit
    that deletes data), unless it runs with ``ignoreDeletes``; then it goes on with the next
    append and never reads the lost file."""
    root = tmp_path / "t"
    for i in range(3):
        spark.range(i * 10, i * 10 + 5).write.format("delta").mode("append").save(str(root))
    checkpoint = str(tmp_path / "stream-checkpoint")

    def run_stream(**options: str) -> list[int]:
        reader = spark.readStream.format("delta")
        for key, value in options.items():
            reader = reader.option(key, value)
        query = (
            reader.load(str(root))
            .writeStream.format("parquet")
            .option("checkpointLocation", checkpoint)
            .option("path", str(tmp_path / "sink"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return sorted(r.id for r in spark.read.parquet(str(tmp_path / "sink")).collect())

    assert run_stream() == [*range(0, 5), *range(10, 15), *range(20, 25)]
    victim = sorted(load_snapshot(str(root)).adds.paths())[0]
    (root / victim).unlink()
    _repair(run_cli, root)
    spark.range(100, 103).write.format("delta").mode("append").save(str(root))
    with pytest.raises(Exception, match=r"(?i)delete"):
        run_stream()
    rows = run_stream(ignoreDeletes="true")
    assert rows[-3:] == [100, 101, 102] and len(rows) == 15 + 3


# proves: docs/guides/repair.md "Another writer wins the version: the repair reads the commits
# that won (...) and commits at the next version" (a Spark writer; short variant of the LocalStack
# race above, which runs in make soak)
def test_a_spark_append_taking_the_repair_version_is_kept(spark, tmp_path, monkeypatch, capsys):
    """Right before the repair's commit, a Spark append (this module's session) takes the
    version it planned: the repair re-plans on it and commits the next one; Spark reads the
    append once and loses only the deleted file's rows; Spark, delta-rs, the replay and the
    audit agree."""
    import pyarrow.parquet as pq

    from deltaguard.logstore.local_log_store import LocalLogStore
    from deltaguard.tools.repair import run
    from deltaguard.tools.repair.committer import Committer

    root = tmp_path / "t"

    def append(tag: str) -> None:
        spark.range(3).selectExpr("id AS seq", f"'{tag}' AS payload").write.format("delta").mode(
            "append"
        ).save(str(root))

    for tag in ("a", "b", "c"):
        append(tag)
    victim = Path(sorted(_replay_files(root))[0])
    lost = pq.read_metadata(victim).num_rows
    victim.unlink()

    class SparkFirst(LocalLogStore):
        """The repair's store: its first commit is beaten by a Spark append made right
        before it."""

        raced = False

        def write(self, uri: str, lines: Any, overwrite: bool = False) -> None:
            if not self.raced:
                self.raced = True
                append("during-repair")
            super().write(uri, lines, overwrite)

    store = SparkFirst()
    monkeypatch.setattr(
        run, "open_committer", lambda *a: Committer(store, str(root), "local create-exclusive")
    )
    code = run.run_repair(run.RepairRequest(str(root), yes=True))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "version 3 was taken by another writer" in out and "committed version 4" in out, out
    log = root / "_delta_log"
    spark_commit = json.loads((log / f"{3:020d}.json").read_text().splitlines()[0])
    assert spark_commit["commitInfo"]["operation"] == "WRITE"
    fsck = [json.loads(x) for x in (log / f"{4:020d}.json").read_text().splitlines()]
    assert fsck[0]["commitInfo"]["operation"] == "FSCK"
    assert len([a for a in fsck if "remove" in a]) == 1
    live = _agree(spark, root)
    assert str(victim) not in live
    payloads = [r.payload for r in spark.read.format("delta").load(str(root)).collect()]
    assert payloads.count("during-repair") == 3, "the Spark append is read once"
    assert len(payloads) == 4 * 3 - lost


# ``deltaguard checkpoint`` (its fast tests: test_checkpoint.py), here for this module's Spark
# session: a checkpoint written by deltaguard from the JSON commits alone (Spark's own
# checkpoints and hint removed first), then the commits before it deleted so every reader must
# start from it.


def _rows_spark(
    spark: Any, root: Path, columns: tuple[str, ...] = ("*",), version: int | None = None
) -> list:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(tuple(r) for r in reader.load(str(root)).selectExpr(*columns).collect())


def _rows_delta_rs(root: Path, version: int | None = None) -> list:
    """Every row delta-rs reads through DataFusion (deletion vectors applied), sorted."""
    from deltalake import QueryBuilder

    dt = DeltaTable(str(root), version=version)
    data = pa.table(QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all())
    return sorted(tuple(r.values()) for r in data.to_pylist())


def _row_tracking_table(spark: Any, root: Path) -> None:
    spark.sql(
        f"CREATE TABLE delta.`{root}` (id BIGINT, s STRING) USING delta TBLPROPERTIES ("
        "'delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true')"
    )
    spark.sql(f"INSERT INTO delta.`{root}` VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
    spark.sql(f"UPDATE delta.`{root}` SET s = 'z' WHERE id = 2")
    spark.sql(f"DELETE FROM delta.`{root}` WHERE id = 3")


#: The row-tracking columns Spark reads from the checkpoint's baseRowId / defaultRowCommitVersion.
_ROW_IDS = ("id", "s", "_metadata.row_id", "_metadata.row_commit_version")


#: column_mapping: column mapping by name, a renamed column, a partition column with a space
#: and values that need URL encoding; row_tracking: row ids, deletion vectors (UPDATE,
#: DELETE), the row-tracking domain metadata. (dv_cdc and partitioned add little beyond these
#: and cost this issue's `make test` budget.)
@pytest.mark.parametrize("name", ["column_mapping", "row_tracking"])
def test_checkpoint_written_by_deltaguard_reads_in_spark_and_delta_rs(
    name, spark_tables, spark, run_cli, tmp_path
):
    root = tmp_path / "t"
    if name == "row_tracking":
        _row_tracking_table(spark, root)
    else:
        copy_table(spark_tables.path(name), root)
    log = root / "_delta_log"
    for f in log.iterdir():
        if ".checkpoint." in f.name or f.name == "_last_checkpoint":
            f.unlink()
    spark_before, rs_before = _rows_spark(spark, root), _rows_delta_rs(root)
    ids_before = _rows_spark(spark, root, _ROW_IDS) if name == "row_tracking" else None
    done = run_cli("checkpoint", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    latest = load_snapshot(str(root)).version
    hint_text = (log / "_last_checkpoint").read_text()
    assert json.loads(hint_text)["version"] == latest
    checksums = spark._jvm.org.apache.spark.sql.delta.LastCheckpointInfo.getChecksums(hint_text)
    stored, computed = checksums._1().get(), checksums._2()
    assert stored == computed  # Spark's own check of the hint's checksum
    for f in log.iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) < latest:
            f.unlink()
    assert _rows_spark(spark, root) == spark_before
    assert _rows_spark(spark, root, version=latest) == spark_before
    assert _rows_delta_rs(root) == rs_before
    assert _rows_delta_rs(root, version=latest) == rs_before
    if ids_before is not None:
        assert _rows_spark(spark, root, _ROW_IDS) == ids_before
    df = spark.read.format("delta").load(str(root))
    df.limit(1).write.format("delta").mode("append").save(str(root))
    assert load_snapshot(str(root)).version == latest + 1
    assert len(_rows_spark(spark, root)) == len(spark_before) + 1
    assert len(_rows_delta_rs(root)) == len(rs_before) + 1
    if ids_before is not None:
        ids_after = _rows_spark(spark, root, _ROW_IDS)
        old = {r[2] for r in ids_before}
        new = [r for r in ids_after if r[3] == latest + 1]
        assert len(new) == 1 and new[0][2] > max(old)  # the high-water mark was kept
        assert [r for r in ids_after if r[3] != latest + 1] == ids_before
