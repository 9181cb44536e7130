"""``deltaguard audit`` / ``history`` on damaged copies of Spark-written tables: each kind of
damage gives its finding (code, file, line), and unreadable tables exit 2 without a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from dynamodb_entries import put_entry

from deltaguard.localstack.table_copies import copy_table
from deltaguard.tools.commands.audit import audit_exit_code
from deltaguard.tools.deltalog import UnsupportedTableError, load_snapshot
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.deltalog.findings import CODES
from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck

pytestmark = pytest.mark.spark


def _log(table: Path, version: int, suffix: str = "json") -> Path:
    return table / "_delta_log" / f"{version:020d}.{suffix}"


def _codes(report) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f)
    return out


@pytest.fixture
def dv_table(spark_tables, tmp_path) -> Path:
    return copy_table(spark_tables.path("dv_cdc"), tmp_path / "dv_cdc")


# proves: docs/guides/audit.md "the audit only reads: nothing is written or deleted"
def test_healthy_tables_exit_0_with_json_schema(spark_tables, run_cli):
    for name in ("partitioned", "dv_cdc", "multipart", "v2", "column_mapping"):
        out = run_cli("audit", str(spark_tables.path(name)), "--json")
        assert out.returncode == 0, out.stdout
        doc = json.loads(out.stdout)
        assert doc["schema"] == "deltaguard.audit/1" and doc["healthy"] is True
        assert doc["summary"]["live_files"] == len(
            spark_tables.live_files(name, spark_tables.versions(name)[-1])
        )


def test_missing_data_file_and_dv_file(dv_table, run_cli):
    snap = load_snapshot(str(dv_table))
    with_dv = next(iter(snap.adds.deletion_vectors()))
    (dv_table / with_dv[1].file_path()).unlink()
    plain = next(p for p in snap.adds.paths() if p != with_dv[0])
    (dv_table / plain).unlink()
    report = audit_table(str(dv_table))
    codes = _codes(report)
    assert [f.file for f in codes["missing-data-file"]] == [plain]
    assert [f.file for f in codes["missing-dv-file"]] == [with_dv[1].file_path()]
    assert audit_exit_code(report) == 1
    out = run_cli("audit", str(dv_table))
    assert out.returncode == 1 and "missing-dv-file" in out.stdout


def test_corrupt_json_line_names_file_and_line(dv_table, run_cli):
    commit = _log(dv_table, 5)
    lines = commit.read_bytes().split(b"\n")
    lines[1] = lines[1][: len(lines[1]) // 2]
    commit.write_bytes(b"\n".join(lines))
    report = audit_table(str(dv_table))
    (finding,) = _codes(report)["corrupt-json-line"]
    assert finding.file == "_delta_log/00000000000000000005.json" and finding.line == 2
    assert "snapshot-unreadable" in _codes(report)
    out = run_cli("audit", str(dv_table), "--json")  # the snapshot cannot be rebuilt: exit 2
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "corrupt-json-line" in out.stdout


def test_truncated_checkpoint_is_reported_and_replay_falls_back(spark_tables, dv_table):
    checkpoint = _log(dv_table, 4, "checkpoint.parquet")
    checkpoint.write_bytes(checkpoint.read_bytes()[:200])
    snap = load_snapshot(str(dv_table))
    assert snap.segment.checkpoint.version == 2 and snap.segment.skipped
    assert sorted(p.replace(str(dv_table), "") for p in snap.live_locations()) == sorted(
        p.replace(str(spark_tables.path("dv_cdc")), "")
        for p in spark_tables.live_files("dv_cdc", 5)
    )
    codes = _codes(audit_table(str(dv_table)))
    assert codes["checkpoint-unreadable"][0].file.endswith(
        "00000000000000000004.checkpoint.parquet"
    )


def test_multipart_checkpoint_with_a_missing_part(spark_tables, tmp_path):
    table = copy_table(spark_tables.path("multipart"), tmp_path / "mp")
    part = next((table / "_delta_log").glob("*.checkpoint.0000000002.*.parquet"))
    part.unlink()
    snap = load_snapshot(str(table))
    assert snap.segment.checkpoint is None  # the incomplete checkpoint is ignored
    assert len(snap.adds) == len(spark_tables.live_files("multipart", 3))
    codes = _codes(audit_table(str(table)))
    assert "checkpoint-parts-missing" in codes
    assert "last-checkpoint-missing" in codes  # _last_checkpoint names the broken checkpoint


def test_gaps_cleanup_and_holes_are_told_apart(dv_table):
    for v in (0, 1):  # log cleanup: the oldest commits go, checkpoint 2 covers them
        _log(dv_table, v).unlink()
    report = audit_table(str(dv_table))
    assert [f.code for f in report.findings] == ["log-cleaned-up"] and audit_exit_code(report) == 0
    _log(dv_table, 3).unlink()  # a hole covered by checkpoint 4
    codes = _codes(audit_table(str(dv_table)))
    assert "version-gap-covered" in codes and "version-gap" not in codes
    # without checkpoint 4, commit 3 is needed:
    for f in (dv_table / "_delta_log").glob("00000000000000000004.checkpoint*"):
        f.unlink()
    codes = _codes(audit_table(str(dv_table)))
    assert codes["version-gap"][0].file == "_delta_log/00000000000000000003.json"


def test_history_truncated_without_covering_checkpoint(dv_table):
    for f in (dv_table / "_delta_log").glob("*.checkpoint.parquet"):
        f.unlink()
    _log(dv_table, 0).unlink()
    codes = _codes(audit_table(str(dv_table)))
    assert "history-truncated" in codes


def test_crc_mismatch(dv_table):
    crc = _log(dv_table, 5, "crc")
    doc = orjson.loads(crc.read_bytes())
    doc["numFiles"] += 1
    crc.write_bytes(orjson.dumps(doc))
    (finding,) = _codes(audit_table(str(dv_table)))["crc-mismatch"]
    assert "numFiles" in finding.message and finding.file.endswith(".crc")


def test_temp_and_stray_files(dv_table):
    (dv_table / "_delta_log" / ".00000000000000000006.json.1b2c.tmp").write_text("{}")
    (dv_table / "_delta_log" / "00000000000000000006.json.bak").write_text("{}")
    codes = _codes(audit_table(str(dv_table)))
    assert codes["temp-file"][0].file == "_delta_log/.00000000000000000006.json.1b2c.tmp"
    assert codes["stray-log-file"][0].file == "_delta_log/00000000000000000006.json.bak"


def _append_protocol(table: Path, version: int, **protocol) -> None:
    line = {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, **protocol}}
    _log(table, version).write_bytes(
        orjson.dumps({"commitInfo": {"operation": "X"}}) + b"\n" + orjson.dumps(line) + b"\n"
    )


@pytest.mark.parametrize(
    ("features", "words"),
    [
        (["catalogManaged"], "catalog-managed"),
        (["deletionVectors", "futureMagic"], "futureMagic"),
    ],
)
def test_catalog_managed_and_unknown_reader_features_are_refused(
    dv_table, features, words, run_cli
):
    _append_protocol(dv_table, 6, readerFeatures=features, writerFeatures=features)
    with pytest.raises(UnsupportedTableError, match=words):
        load_snapshot(str(dv_table))
    out = run_cli("audit", str(dv_table))
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr


def test_unknown_writer_feature_is_a_warning(dv_table):
    _append_protocol(
        dv_table,
        6,
        readerFeatures=["deletionVectors"],
        writerFeatures=["deletionVectors", "shinyNew"],
    )
    assert "unknown-writer-feature" in _codes(audit_table(str(dv_table)))


def test_not_a_table_and_bad_version_exit_2(tmp_path, dv_table, run_cli):
    for args in (
        [str(tmp_path / "nothing")],
        [str(dv_table), "--version", "99"],
        [str(dv_table), "--timestamp", "1999-01-01T00:00:00"],
        [str(dv_table), "--timestamp", "yesterday"],
    ):
        out = run_cli("audit", *args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr


def test_audit_at_an_older_version(dv_table, spark_tables, run_cli):
    out = run_cli("audit", str(dv_table), "--version", "2", "--json")
    doc = json.loads(out.stdout)
    assert out.returncode == 0 and doc["version"] == 2
    assert doc["summary"]["live_files"] == len(spark_tables.live_files("dv_cdc", 2))


def test_history_lists_operations_and_txns(dv_table, run_cli):
    out = run_cli("history", str(dv_table), "--json")
    assert out.returncode == 0, out.stderr
    entries = json.loads(out.stdout)["entries"]
    assert [e["version"] for e in entries] == [5, 4, 3, 2, 1, 0]
    assert [e["operation"] for e in entries][:3] == ["WRITE", "UPDATE", "DELETE"]
    assert entries[0]["metrics"]["numOutputRows"] == "3"
    assert entries[0]["engine"].startswith("Apache-Spark")
    assert "UPDATE" in run_cli("history", str(dv_table)).stdout


def test_dynamodb_incomplete_entry(localstack, ls_commit_table, dv_table):
    ddb = localstack.endpoint.dynamodb_client()
    table_path = "s3a://bucket/dv_cdc"
    put_entry(
        ddb, ls_commit_table, table_path, 6, ".tmp/00000000000000000006.json.abc", complete=False
    )
    report = audit_table(str(dv_table), dynamodb=DynamoDBCheck(ddb, ls_commit_table, (table_path,)))
    codes = _codes(report)
    assert codes["dynamodb-incomplete-entry"][0].file == "_delta_log/00000000000000000006.json"
    assert "dynamodb-missing-temp-file" in codes


def test_every_code_has_a_hint():
    assert all(hint for _severity, hint in CODES.values())


def test_log_compaction_replaces_cleaned_up_commits(spark_tables, dv_table):
    log = dv_table / "_delta_log"
    actions = [
        line
        for v in (3, 4, 5)
        for line in _log(dv_table, v).read_bytes().splitlines()
        if line.strip() and not line.startswith(b'{"commitInfo"')
    ]
    (log / f"{3:020d}.{5:020d}.compacted.json").write_bytes(b"\n".join(actions) + b"\n")
    for name in [f"{3:020d}.json", f"{4:020d}.json"] + [p.name for p in log.glob("*4.checkpoint*")]:
        (log / name).unlink()
    snap = load_snapshot(str(dv_table))
    assert [p.name for p in snap.segment.pieces] == [f"{3:020d}.{5:020d}.compacted.json"]
    assert sorted(p.replace(str(dv_table), "") for p in snap.live_locations()) == sorted(
        p.replace(str(spark_tables.path("dv_cdc")), "")
        for p in spark_tables.live_files("dv_cdc", 5)
    )
    codes = _codes(audit_table(str(dv_table)))
    assert "version-gap" not in codes and "version-gap-covered" in codes


def test_absolute_paths_inside_and_outside_the_root(dv_table, tmp_path):
    snap = load_snapshot(str(dv_table))
    inside = next(f.path for f in snap.live_files() if f.deletion_vector is None)
    absolute = f"file://{dv_table}/{inside}"
    add = {
        "path": absolute.replace(" ", "%20"),
        "partitionValues": {},
        "size": 1,
        "modificationTime": 1,
        "dataChange": True,
    }
    outside = {**add, "path": "s3://elsewhere/shallow/part-0.parquet"}
    gone = {**add, "path": f"file://{dv_table}/part-gone.parquet"}
    remove = {"path": inside, "deletionTimestamp": 5, "dataChange": True}
    lines = [
        {"commitInfo": {"operation": "X"}},
        {"remove": remove},
        {"add": add},
        {"add": outside},
        {"add": gone},
    ]
    _log(dv_table, 6).write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    snap = load_snapshot(str(dv_table))
    # an absolute path inside the root is the same file as its relative spelling
    assert snap.adds.paths().count(inside) == 1
    assert "s3://elsewhere/shallow/part-0.parquet" in snap.live_locations()
    codes = _codes(audit_table(str(dv_table)))
    assert [f.file for f in codes["missing-data-file"]] == ["part-gone.parquet"]
    assert "s3://elsewhere" in codes["external-file"][0].message


def test_s3_access_problems_exit_2_naming_the_location(localstack, ls_bucket, run_cli):
    env_args = ["--endpoint", localstack.endpoint.url, "--path-style", "--region", "us-east-1"]
    cases = {
        f"s3://{ls_bucket}/no-table": "no-table does not exist",
        "s3://no-such-bucket-dg/t": "no-such-bucket-dg",
    }
    for uri, words in cases.items():
        for command in ("audit", "history"):
            out = run_cli(command, uri, *env_args, env=localstack.endpoint.credentials_env())
            assert out.returncode == 2, (command, uri, out.stdout, out.stderr)
            assert words in out.stderr and "Traceback" not in out.stderr
    closed = run_cli(
        "audit",
        f"s3://{ls_bucket}/t",
        "--endpoint",
        "http://127.0.0.1:9",
        "--path-style",
        env=localstack.endpoint.credentials_env(),
    )
    assert closed.returncode == 2 and "cannot list" in closed.stderr
    assert "Traceback" not in closed.stderr
