"""``repair`` mends the log's own damage (issue 51 part 2): each kind of broken checkpoint and
``_last_checkpoint``: audit names it, ``repair --yes`` mends it, and every retained version
reads the same in Spark and delta-rs before the damage and after the repair (the readers are
the oracle); a rerun does nothing; a version nothing can rebuild is named and nothing is
written."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake
from local_spark import local_spark_session
from s3_buckets import new_bucket_with_credentials

from deltaguard.localstack.table_copies import upload_table
from deltaguard.tools.checkpoint.last_checkpoint import json_checksum
from deltaguard.tools.checkpoint.run import CheckpointRequest, run_checkpoint
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.repair.log_repair import QUARANTINE_DIR
from deltaguard.tools.repair.run import RepairRequest, run_repair
from deltaguard.tools.storage import S3Options

LOG = "_delta_log"
LATEST = 4  # versions 0..4; checkpoints of version 2 (and 1 where a kind needs two)


def _cp(version: int) -> str:
    return f"{version:020d}.checkpoint.parquet"


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with local_spark_session(tmp_path_factory, "repair-log") as session:
        yield session


def _delta_rs_rows(uri: str, version: int, options: dict[str, str] | None) -> list[Any]:
    dt = DeltaTable(uri, version=version, storage_options=options)
    data = QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all()
    return sorted(tuple(r.values()) for r in pa.table(data).to_pylist())


def _spark_rows(spark: Any, uri: str, version: int) -> list[Any]:
    df = spark.read.format("delta").option("versionAsOf", version).load(uri)
    return sorted(tuple(r) for r in df.collect())


def _readings(
    spark: Any | None,
    uri: str,
    options: dict[str, str] | None = None,
    spark_versions: range | tuple[int, ...] = range(LATEST + 1),
) -> dict[str, Any]:
    """Every retained version as delta-rs reads it, and ``spark_versions`` as Spark reads them
    (a failure is its first line)."""
    out: dict[str, Any] = {}
    readers: list[tuple[str, Callable[[int], list[Any]], Iterable[int]]] = [
        ("delta-rs", lambda v: _delta_rs_rows(uri, v, options), range(LATEST + 1))
    ]
    if spark is not None:
        readers.append(("spark", lambda v: _spark_rows(spark, uri, v), spark_versions))
    for name, read, versions in readers:
        for version in versions:
            try:
                out[f"{name}@{version}"] = read(version)
            except Exception as exc:
                out[f"{name}@{version}"] = f"failed: {str(exc).splitlines()[0]}"
    return out


def _table(uri: str, options: dict[str, str] | None = None) -> None:
    """Versions 0-4 (appends and a delete) with a deltaguard checkpoint of versions 1 and 2."""
    s3 = (
        S3Options(options["AWS_ENDPOINT_URL"], options["AWS_REGION"], True)
        if options
        else S3Options()
    )
    for i in range(4):
        write_deltalake(uri, pa.table({"id": [i, i + 10]}), mode="append", storage_options=options)
        if i in (1, 2):
            assert run_checkpoint(CheckpointRequest(uri, s3=s3)) == 0
    DeltaTable(uri, storage_options=options).delete("id = 11")


def _codes(uri: str, s3: S3Options | None = None) -> set[str]:
    return {f.code for f in audit_table(uri, s3=s3, check_files=False).findings}


def _repair(
    uri: str, capsys: pytest.CaptureFixture[str], s3: S3Options | None = None, yes: bool = True
) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = run_repair(RepairRequest(uri, s3=s3 or S3Options(), yes=yes, as_json=True))
    return code, json.loads(capsys.readouterr().out)


# the damage, on local disk: each takes the table root
def _truncate(root: Path) -> None:
    f = root / LOG / _cp(2)
    f.write_bytes(f.read_bytes()[:300])


def _garbage(root: Path) -> None:
    f = root / LOG / _cp(2)
    f.write_bytes(os.urandom(f.stat().st_size))


def _multipart_missing_part(root: Path) -> None:
    """Version 2's checkpoint as a multi-part checkpoint (two parts), its second part gone."""
    log = root / LOG
    table = pq.read_table(log / _cp(2))
    (log / _cp(2)).unlink()
    half = table.num_rows // 2
    for part, rows in ((1, table.slice(0, half)), (2, table.slice(half))):
        if part == 1:
            pq.write_table(rows, log / f"{2:020d}.checkpoint.{part:010d}.{2:010d}.parquet")
    hint = {"version": 2, "size": table.num_rows, "parts": 2}
    (log / "_last_checkpoint").write_text(json.dumps({**hint, "checksum": json_checksum(hint)}))


def _mismatch(root: Path) -> None:
    """Version 2's checkpoint holds version 1's state (its bytes copied over it)."""
    log = root / LOG
    shutil.copyfile(log / _cp(1), log / _cp(2))
    hint = json.loads((log / "_last_checkpoint").read_text())
    hint["sizeInBytes"] = (log / _cp(2)).stat().st_size
    hint.pop("size")
    hint["checksum"] = json_checksum(hint)
    (log / "_last_checkpoint").write_text(json.dumps(hint))


def _hint_dangling(root: Path) -> None:
    (root / LOG / _cp(2)).unlink()


def _hint_wrong(root: Path) -> None:
    log = root / LOG
    hint = json.loads((log / "_last_checkpoint").read_text())
    hint.update(size=hint["size"] + 7, sizeInBytes=hint["sizeInBytes"] - 1, parts=3)
    hint["checksum"] = json_checksum(hint)
    (log / "_last_checkpoint").write_text(json.dumps(hint))


def _hint_corrupt(root: Path) -> None:
    (root / LOG / "_last_checkpoint").write_text('{"version": 2, "size"')


def _v2_top(root: Path) -> Path:
    (top,) = (root / LOG).glob(f"{2:020d}.checkpoint.*-*.json")
    return top


def _v2_sidecar(root: Path) -> Path:
    (sidecar,) = (root / LOG / "_sidecars").glob(f"{2:020d}.checkpoint.*.parquet")
    return sidecar


def _v2_sidecar_deleted(root: Path) -> None:
    _v2_sidecar(root).unlink()


def _v2_sidecar_truncated(root: Path) -> None:
    f = _v2_sidecar(root)
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def _v2_top_truncated(root: Path) -> None:
    f = _v2_top(root)
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def _v2_hint_dangling(root: Path) -> None:
    _v2_top(root).unlink()


KINDS: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated": (_truncate, "checkpoint-unreadable"),
    "garbage": (_garbage, "checkpoint-unreadable"),
    "multipart-missing-part": (_multipart_missing_part, "checkpoint-parts-missing"),
    "mismatch": (_mismatch, "checkpoint-mismatch"),
    "hint-dangling": (_hint_dangling, "last-checkpoint-missing"),
    "hint-wrong": (_hint_wrong, "last-checkpoint-mismatch"),
    "hint-corrupt": (_hint_corrupt, "last-checkpoint-corrupt"),
    # V2 checkpoints (a table that takes them: the ``pristine_v2`` fixture)
    "v2-sidecar-deleted": (_v2_sidecar_deleted, "checkpoint-unreadable"),
    "v2-sidecar-truncated": (_v2_sidecar_truncated, "checkpoint-unreadable"),
    "v2-top-level-truncated": (_v2_top_truncated, "checkpoint-unreadable"),
    "v2-hint-dangling": (_v2_hint_dangling, "last-checkpoint-missing"),
}
#: What each kind's repair did and what the readers read after (the damage table).
TABLE: dict[str, str] = {}


@pytest.fixture(scope="module")
def pristine(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One undamaged table (each test damages a copy: the log's paths are relative) and how
    both readers read each of its versions."""
    root = tmp_path_factory.mktemp("repair-log") / "t"
    _table(str(root))
    before = _readings(spark, str(root))
    assert not any(isinstance(v, str) for v in before.values()), before
    return root, before


@pytest.fixture(scope="module")
def pristine_v2(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any]]:
    """A table Spark creates with ``delta.checkpointPolicy = v2`` (the ``v2Checkpoint``
    feature on): versions 0-4 (appends and a DELETE), deltaguard's V2 checkpoints (a JSON
    top-level file and one sidecar each) of versions 1 and 2; how both readers read each
    version."""
    root = tmp_path_factory.mktemp("repair-log-v2") / "t"
    spark.sql(
        f"CREATE TABLE delta.`{root}` (id BIGINT) USING delta TBLPROPERTIES ("
        "'delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '100')"
    )
    for i in range(3):
        spark.createDataFrame([(i,), (i + 10,)], "id BIGINT").write.format("delta").mode(
            "append"
        ).save(str(root))
        if i < 2:
            assert run_checkpoint(CheckpointRequest(str(root))) == 0
    spark.sql(f"DELETE FROM delta.`{root}` WHERE id = 11")
    assert json.loads((root / LOG / "_last_checkpoint").read_text())["v2Checkpoint"]["path"] == (
        _v2_top(root).name
    )
    before = _readings(spark, str(root))
    assert not any(isinstance(v, str) for v in before.values()), before
    return root, before


@pytest.mark.spark
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_is_mended_and_every_version_reads_the_same(
    kind: str,
    spark: Any,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each kind of damage; V2 kinds on a table that takes V2 checkpoints, whose rebuilt
    checkpoint is a new V2 one that ``_last_checkpoint`` names with its ``v2Checkpoint``."""
    pristine = request.getfixturevalue("pristine_v2" if kind.startswith("v2-") else "pristine")
    root = tmp_path / "t"
    shutil.copytree(pristine[0], root)
    before = pristine[1]
    damage, code = KINDS[kind]
    damage(root)
    assert code in _codes(str(root))
    files = {p: p.read_bytes() for p in (root / LOG).rglob("*") if p.is_file()}
    dry, report = _repair(str(root), capsys, yes=False)
    assert dry == 1 and (report["log"]["broken"] or report["log"]["hint"]), report
    assert {p: p.read_bytes() for p in (root / LOG).rglob("*") if p.is_file()} == files
    done, report = _repair(str(root), capsys)
    assert done == 0, report
    assert audit_table(str(root), check_files=False).healthy
    after = _readings(spark, str(root))
    assert after == before
    again, rerun = _repair(str(root), capsys)
    assert again == 0 and not rerun["log"]["broken"] and not rerun["log"]["hint"], rerun
    assert not rerun["log"]["written"] and rerun["log"]["last_checkpoint"] is None
    moved = [m["file"] for m in report["log"]["quarantined"]]
    hint = json.loads((root / LOG / "_last_checkpoint").read_text())
    if kind.startswith("v2-"):
        top = _v2_top(root)  # exactly one top-level file of version 2: the new one
        assert f"{LOG}/{top.name}" in report["log"]["written"]
        assert hint["version"] == 2 and hint["v2Checkpoint"]["path"] == top.name
        assert not list((root / LOG).glob(f"{2:020d}.checkpoint.parquet"))
    TABLE[kind] = (
        f"wrote {report['log']['written']}, set aside {moved}, _last_checkpoint -> "
        f"{hint['version']}; {len(after)} readings (Spark, delta-rs x versions 0-{LATEST}) same"
    )
    print(f"\n{kind}: {TABLE[kind]}")


@pytest.mark.parametrize("latest_lost", [False, True], ids=["older-lost", "latest-lost"])
def test_versions_nothing_can_rebuild_are_named_and_nothing_written(
    latest_lost: bool, run_cli: Any, tmp_path: Path
) -> None:
    """The commits below a broken checkpoint are gone and no good checkpoint is below it: the
    versions up to the next good checkpoint are lost. Older versions only: exit 1; the latest
    among them (the table cannot be read): exit 2, one line on stderr. Nothing written."""
    root = tmp_path / "t"
    _table(str(root))
    broken = 2 if latest_lost else 1
    f = root / LOG / _cp(broken)
    f.write_bytes(f.read_bytes()[:300])
    for v in range(broken + 1):
        (root / LOG / f"{v:020d}.json").unlink()
    if latest_lost:
        (root / LOG / _cp(1)).unlink()
    files = {p: p.read_bytes() for p in (root / LOG).rglob("*") if p.is_file()}
    result = run_cli("repair", str(root), "--yes")
    if latest_lost:
        assert result.returncode == 2, result.stdout + result.stderr
        assert "lost: versions 2 to 4 cannot be rebuilt" in result.stdout
        assert result.stderr.count("\n") == 1 and "versions 2 to 4" in result.stderr
    else:
        assert result.returncode == 1, result.stdout + result.stderr
        assert "lost: version 1 cannot be rebuilt" in result.stdout, result.stdout
    assert {p: p.read_bytes() for p in (root / LOG).rglob("*") if p.is_file()} == files
    assert not (root / QUARANTINE_DIR).exists()


def _point_spark_at(spark: Any, endpoint: Any) -> None:
    """Points the module's session's S3A at ``endpoint`` (a new bucket: a new file system)."""
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for name, value in endpoint.s3_storage().hadoop_conf().items():
        hadoop.set(name.removeprefix("spark.hadoop."), value)


def _spark_rows_of(spark: Any, reads: dict[str, tuple[str, int]]) -> dict[str, Any]:
    """Each read (``key -> (uri, version)``) as :func:`_readings` records it, in one Spark
    job (a union of the time-travel reads, each row tagged with its key); if that fails, read
    by read (a failure is its first line)."""
    from pyspark.sql import functions as F

    frames = [
        spark.read.format("delta")
        .option("versionAsOf", version)
        .load(uri)
        .withColumn("_read", F.lit(key))
        for key, (uri, version) in reads.items()
    ]
    try:
        union = frames[0]
        for frame in frames[1:]:
            union = union.unionByName(frame)
        rows = union.collect()
    except Exception:
        out: dict[str, Any] = {}
        for key, (uri, version) in reads.items():
            try:
                out[key] = _spark_rows(spark, uri, version)
            except Exception as exc:
                out[key] = f"failed: {str(exc).splitlines()[0]}"
        return out
    grouped: dict[str, list[Any]] = {key: [] for key in reads}
    for row in rows:
        grouped[row["_read"]].append(tuple(row)[:-1])
    return {key: sorted(r) for key, r in grouped.items()}


def _s3_bed(
    endpoint: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, str, dict[str, str], S3Options]:
    """A new bucket on ``endpoint`` (its credentials in the environment): its client, its
    name, delta-rs's options and deltaguard's."""
    bucket = new_bucket_with_credentials(endpoint, monkeypatch)
    options = endpoint.delta_rs_options()
    return endpoint.s3_client(), bucket, options, S3Options(endpoint.url, endpoint.region, True)


def _read_every_copy(
    spark: Any, endpoint: Any, uris: dict[str, str], options: dict[str, str]
) -> dict[str, Any]:
    """Every version of every copy (``kind -> uri`` on ``endpoint``) as :func:`_readings`
    records it, keyed ``kind:reader@version``: by delta-rs, and by Spark unless ``spark`` is
    None (the module's session pointed at ``endpoint``: a job per copy, side by side)."""
    after = {
        f"{kind}:{name}": rows
        for kind, uri in uris.items()
        for name, rows in _readings(None, uri, options).items()
    }
    if spark is not None:
        _point_spark_at(spark, endpoint)
        with ThreadPoolExecutor(len(uris)) as pool:
            for rows in pool.map(
                lambda k: _spark_rows_of(
                    spark, {f"{k}:spark@{v}": (uris[k], v) for v in range(LATEST + 1)}
                ),
                uris,
            ):
                after.update(rows)
    return after


#: Every classic kind, staged on LocalStack from a damaged local copy (:func:`test_on_s3_servers`
#: damages a table deltaguard checkpointed on the server, for two of them).
CLASSIC_ON_LOCALSTACK = tuple(k for k in KINDS if not k.startswith("v2-"))


# proves: docs/guides/repair.md "Broken checkpoints": every classic kind on LocalStack
@pytest.mark.spark
def test_every_classic_kind_on_localstack(
    spark: Any,
    pristine: tuple[Path, dict[str, Any]],
    localstack: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every classic kind through S3: each damages a local copy of the pristine table, which
    is then uploaded (the server holds the damaged
    bytes; the copies in parallel); the audit names the damage, ``repair --yes`` mends it,
    the audit is healthy, a rerun writes nothing; then every version of every copy reads as
    the pristine table read before the damage, by delta-rs and by Spark (the module's session
    on S3A: a job per copy, side by side)."""
    root, before = pristine
    endpoint = localstack.endpoint
    s3, bucket, options, s3opts = _s3_bed(endpoint, monkeypatch)

    def staged(kind: str) -> str:
        copy = tmp_path / kind
        shutil.copytree(root, copy)
        KINDS[kind][0](copy)
        return upload_table(copy, s3, bucket, kind, workers=4)

    with ThreadPoolExecutor(len(CLASSIC_ON_LOCALSTACK)) as pool:
        uris = dict(
            zip(CLASSIC_ON_LOCALSTACK, pool.map(staged, CLASSIC_ON_LOCALSTACK), strict=True)
        )
    for kind, uri in uris.items():
        assert KINDS[kind][1] in _codes(uri, s3opts), kind
        done, report = _repair(uri, capsys, s3opts)
        assert done == 0, report
        assert report["log"]["written"] or report["log"]["last_checkpoint"], report
        assert audit_table(uri, s3=s3opts, check_files=False).healthy, kind
        again, rerun = _repair(uri, capsys, s3opts)
        assert again == 0 and not rerun["log"]["written"], rerun
        assert rerun["log"]["last_checkpoint"] is None, rerun
    after = _read_every_copy(spark, endpoint, uris, options)
    assert after == {f"{kind}:{name}": rows for kind in uris for name, rows in before.items()}


#: The V2 kinds on S3: the file each damages (of the pristine table) and whether it is deleted
#: (else truncated to half, as on local disk).
V2_ON_S3: dict[str, tuple[Callable[[Path], Path], bool]] = {
    "v2-sidecar-deleted": (_v2_sidecar, True),
    "v2-sidecar-truncated": (_v2_sidecar, False),
    "v2-top-level-truncated": (_v2_top, False),
    "v2-hint-dangling": (_v2_top, True),
}


# proves: docs/guides/repair.md "Broken checkpoints": the V2 kinds on LocalStack and MinIO
@pytest.mark.spark
@pytest.mark.parametrize("server", ["localstack", "minio"])
def test_v2_kinds_on_s3_servers(
    server: str,
    spark: Any,
    pristine_v2: tuple[Path, dict[str, Any]],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The V2 kinds through S3: the pristine V2 table uploaded once per kind (in parallel),
    each copy damaged there, the audit names the damage, ``repair --yes`` writes a new V2
    checkpoint that ``_last_checkpoint`` names, a rerun writes nothing; then every version of
    every copy reads as the pristine table read before the damage (on local disk: the bytes
    uploaded): by delta-rs and, on LocalStack, by Spark (the
    module's session on S3A: a job per copy, the four side by side). MinIO: one kind,
    delta-rs only."""
    root, before = pristine_v2
    endpoint = request.getfixturevalue(server).endpoint
    s3, bucket, options, s3opts = _s3_bed(endpoint, monkeypatch)
    kinds = list(V2_ON_S3) if server == "localstack" else ["v2-sidecar-deleted"]
    with ThreadPoolExecutor(len(kinds)) as pool:
        uris = dict(
            zip(
                kinds,
                pool.map(lambda k: upload_table(root, s3, bucket, k, workers=4), kinds),
                strict=True,
            )
        )
    for kind, uri in uris.items():
        target, delete = V2_ON_S3[kind]
        key = f"{kind}/{target(root).relative_to(root).as_posix()}"
        if delete:
            s3.delete_object(Bucket=bucket, Key=key)
        else:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            s3.put_object(Bucket=bucket, Key=key, Body=body[: len(body) // 2])
        assert KINDS[kind][1] in _codes(uri, s3opts), kind
        done, report = _repair(uri, capsys, s3opts)
        assert done == 0, report
        assert audit_table(uri, s3=s3opts, check_files=False).healthy, kind
        hint = json.loads(
            s3.get_object(Bucket=bucket, Key=f"{kind}/{LOG}/_last_checkpoint")["Body"].read()
        )
        tops = [
            o["Key"].rsplit("/", 1)[-1]
            for o in s3.list_objects_v2(Bucket=bucket, Prefix=f"{kind}/{LOG}/{2:020d}.checkpoint.")[
                "Contents"
            ]
            if o["Key"].endswith(".json")
        ]
        assert tops == [hint["v2Checkpoint"]["path"]] and hint["version"] == 2, (tops, hint)
        assert f"{LOG}/{tops[0]}" in report["log"]["written"], report
        again, rerun = _repair(uri, capsys, s3opts)
        assert again == 0 and not rerun["log"]["written"], rerun
    after = _read_every_copy(spark if server == "localstack" else None, endpoint, uris, options)
    expected = {
        f"{kind}:{name}": rows
        for kind in kinds
        for name, rows in before.items()
        if server == "localstack" or name.startswith("delta-rs")
    }
    assert after == expected


@pytest.mark.spark  # the module's session (the pristine tables, S3A reads)
@pytest.mark.parametrize(
    ("server", "kind"),
    [("localstack", "truncated"), ("localstack", "hint-dangling"), ("minio", "truncated")],
)
def test_on_s3_servers(
    server: str,
    kind: str,
    spark: Any,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The log repair on LocalStack and MinIO (two real S3 servers): the same readings before
    the damage and after the repair: every version by delta-rs and, on LocalStack, the
    damaged checkpoint's version and the latest by Spark too (through S3A, the module's
    session pointed at the server; Spark's S3A reads are most of the test's time, so the local
    cases above are where Spark reads every version); a rerun writes nothing."""
    endpoint = request.getfixturevalue(server).endpoint
    _s3, bucket, options, s3opts = _s3_bed(endpoint, monkeypatch)
    uri = f"s3://{bucket}/t"
    for i in range(4):
        write_deltalake(uri, pa.table({"id": [i, i + 10]}), mode="append", storage_options=options)
        if i in (1, 2):
            assert run_checkpoint(CheckpointRequest(uri, s3=s3opts)) == 0
    DeltaTable(uri, storage_options=options).delete("id = 11")
    reader = spark if server == "localstack" else None
    if reader is not None:
        _point_spark_at(spark, endpoint)
    # Spark reads version 2 (the damaged checkpoint's) and the latest (from it on)
    before = _readings(reader, uri, options, spark_versions=(2, LATEST))
    for v in range(LATEST + 1):
        assert before.get(f"spark@{v}", before[f"delta-rs@{v}"]) == before[f"delta-rs@{v}"]
    assert not any(isinstance(r, str) for r in before.values()), before
    s3 = endpoint.s3_client()
    key = f"t/{LOG}/{_cp(2)}"
    if kind == "truncated":
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        s3.put_object(Bucket=bucket, Key=key, Body=body[:300])
        assert "checkpoint-unreadable" in _codes(uri, s3opts)
    else:
        s3.delete_object(Bucket=bucket, Key=key)
        assert "last-checkpoint-missing" in _codes(uri, s3opts)
    done, report = _repair(uri, capsys, s3opts)
    assert done == 0, report
    assert audit_table(uri, s3=s3opts, check_files=False).healthy
    assert _readings(reader, uri, options, spark_versions=(2, LATEST)) == before
    again, rerun = _repair(uri, capsys, s3opts)
    assert again == 0 and not rerun["log"]["written"], rerun
