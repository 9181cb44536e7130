"""``audit`` and ``repair`` on damaged local delta-rs tables, with delta-rs as the oracle: each
damage to a live data file is a finding naming the file and a non-zero exit whenever delta-rs
fails to read the latest version; ``repair --yes`` then leaves a table delta-rs reads and the
audit calls healthy. The file rules: :mod:`deltaguard.tools.deltalog.live_files`."""

from __future__ import annotations

import json
import os
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from deltaguard.localstack.synthetic_table import SyntheticTable, dv_descriptor, dv_file_name
from deltaguard.tools.commands.audit import audit_exit_code
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.deltalog.check_depth import CheckMode
from deltaguard.tools.deltalog.history import read_history
from deltaguard.tools.deltalog.live_files import DV_MAGIC
from deltaguard.tools.deltalog.temp_commits import WRITER_WINDOW_MS
from deltaguard.tools.repair.run import RepairRequest, run_repair


def _repair(root: Path, capsys: pytest.CaptureFixture[str], **kw: object) -> tuple[int, str]:
    """``deltaguard repair`` in this process (exit code, stdout)."""
    code = run_repair(RepairRequest(str(root), **kw))  # type: ignore[arg-type]
    return code, capsys.readouterr().out


def _table(root: Path, appends: int = 3) -> Path:
    for i in range(appends):
        write_deltalake(str(root), pa.table({"n": list(range(i * 10, i * 10 + 10))}), mode="append")
    return root


def _first_live(root: Path) -> Path:
    return root / sorted(load_snapshot(str(root)).adds.paths())[0]


def _delta_rs_reads(root: Path) -> bool:
    try:
        DeltaTable(str(root)).to_pyarrow_table()
    except Exception:  # any failure of the reader is the answer
        return False
    return True


def _truncate(f: Path) -> None:
    f.write_bytes(f.read_bytes()[:100])


def _grow(f: Path) -> None:
    f.write_bytes(f.read_bytes() + b"\0" * 16)


def _empty(f: Path) -> None:
    f.write_bytes(b"")


#: damage of a data file that repair removes (the footer past the file's end): delta-rs fails
@pytest.mark.parametrize("damage", [_truncate, _empty], ids=["truncated", "zero-byte"])
def test_a_data_file_shorter_than_logged_is_a_finding_and_repair_removes_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: Callable[[Path], None],
) -> None:
    root = _table(tmp_path / "t")
    broken = _first_live(root)
    logged = broken.stat().st_size
    damage(broken)
    assert not _delta_rs_reads(root)

    report = audit_table(str(root))
    assert audit_exit_code(report) == 1
    (finding,) = [f for f in report.findings if f.severity == "error"]
    assert finding.code == "size-mismatch" and finding.file == broken.name
    assert f"is {broken.stat().st_size} bytes" in finding.message and str(logged) in finding.message
    assert report.summary["size_mismatches"] == 1

    code, out = _repair(root, capsys)
    assert code == 1 and broken.name in out and "would commit" in out
    code, out = _repair(root, capsys, yes=True)
    assert code == 0, out
    assert _delta_rs_reads(root)
    assert DeltaTable(str(root)).to_pyarrow_table().num_rows == 20
    assert audit_exit_code(audit_table(str(root))) == 0


def test_a_grown_data_file_readers_read_is_flagged_but_never_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bytes appended after the footer: delta-rs still reads every row (at the logged size;
    Spark fails on it: tests/test_healthy_means_readable.py), so repair keeps the file and
    says so (``not repaired``, exit 1), with or without ``--check footers``."""
    root = _table(tmp_path / "t")
    grown = _first_live(root)
    _grow(grown)
    assert DeltaTable(str(root)).to_pyarrow_table().num_rows == 30
    report = audit_table(str(root))
    assert [(f.code, f.file) for f in report.findings] == [("size-mismatch", grown.name)]
    for check in (CheckMode.EXISTS, CheckMode.FOOTERS):
        code, out = _repair(root, capsys, check=check, yes=True)
        assert code == 1 and f"not repaired: size-mismatch: {grown.name}" in out, out
        assert "committed version" not in out and "kept" in out
    assert DeltaTable(str(root)).to_pyarrow_table().num_rows == 30


def test_a_grown_data_file_unreadable_at_the_logged_size_needs_check_footers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _table(tmp_path / "t")
    broken = _first_live(root)
    broken.write_bytes(b"X" * (broken.stat().st_size + 16))  # overwritten, longer
    assert not _delta_rs_reads(root)
    code, out = _repair(root, capsys, check=CheckMode.EXISTS, yes=True)
    assert code == 1 and "not repaired: size-mismatch" in out and "--check footers" in out
    code, out = _repair(root, capsys, yes=True)  # the default depth: footers
    assert code == 0 and "at the logged size its Parquet footer is unreadable" in out, out
    assert DeltaTable(str(root)).to_pyarrow_table().num_rows == 20
    assert audit_exit_code(audit_table(str(root))) == 0


def test_a_deleted_data_file_is_missing_data_file(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    gone = _first_live(root)
    gone.unlink()
    assert not _delta_rs_reads(root)
    report = audit_table(str(root))
    assert [(f.code, f.file) for f in report.findings] == [("missing-data-file", gone.name)]
    assert audit_exit_code(report) == 1


def test_wrong_magic_of_the_right_size_is_found_by_the_default_depth(
    tmp_path: Path, run_cli, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _table(tmp_path / "t")
    broken = _first_live(root)
    data = broken.read_bytes()
    broken.write_bytes(data[:-4] + b"XXXX")  # same size, the trailing "PAR1" gone
    assert not _delta_rs_reads(root)

    listing_only = audit_table(str(root), footers=False)
    assert audit_exit_code(listing_only) == 0, "the listing cannot see it, and says so:"
    assert "contents not read" in listing_only.to_json()["summary"]["data_files_checked"]
    text = run_cli("audit", str(root), "--check", "exists")
    assert text.returncode == 0 and "contents not read" in text.stdout

    footers = run_cli("audit", str(root), "--json")  # the default depth
    assert footers.returncode == 1, footers.stdout + footers.stderr
    doc = json.loads(footers.stdout)
    assert [(f["code"], f["file"]) for f in doc["findings"]] == [
        ("unreadable-data-file", broken.name)
    ]
    assert "Parquet footer" in doc["summary"]["data_files_checked"]
    assert "contents not read" not in doc["summary"]["data_files_checked"]

    code, out = _repair(root, capsys, check=CheckMode.EXISTS)
    assert code == 0 and "nothing to repair" in out, "exists: the listing cannot see it"
    code, out = _repair(root, capsys, yes=True)  # the default depth: footers
    assert code == 0 and broken.name in out, out
    assert _delta_rs_reads(root)
    assert audit_exit_code(audit_table(str(root))) == 0


def _log(root: Path, name: str) -> Path:
    return root / "_delta_log" / name


def _checkpointed(root: Path) -> Path:
    """Versions 0-2, a checkpoint at 2 (with ``_last_checkpoint``), versions 3-4."""
    _table(root)
    DeltaTable(str(root)).create_checkpoint()
    for i in range(2):
        write_deltalake(str(root), pa.table({"n": [100 + i]}), mode="append")
    return root


CHECKPOINT = f"{2:020d}.checkpoint.parquet"
CHECKPOINT_3 = f"{3:020d}.checkpoint.parquet"


def _set_hint(root: Path, **fields: object) -> None:
    hint = _log(root, "_last_checkpoint")
    hint.write_text(json.dumps({**json.loads(hint.read_text()), **fields}))


def _truncate_checkpoint(root: Path) -> None:
    _truncate(_log(root, CHECKPOINT))


def _delete_checkpoint(root: Path) -> None:
    _log(root, CHECKPOINT).unlink()


#: damage -> (the error finding it gives, naming this file), delta-rs fails on each
@pytest.mark.parametrize(
    ("damage", "code", "file"),
    [
        (_truncate_checkpoint, "checkpoint-unreadable", CHECKPOINT),
        (_delete_checkpoint, "last-checkpoint-missing", CHECKPOINT),
        (lambda r: _set_hint(r, version=3), "last-checkpoint-missing", CHECKPOINT_3),
        (lambda r: _log(r, f"{3:020d}.json").unlink(), "version-gap", f"{3:020d}.json"),
    ],
    ids=["checkpoint-truncated", "checkpoint-deleted", "hint-names-no-checkpoint", "gap"],
)
def test_checkpoint_and_log_damage_delta_rs_fails_on_is_an_error_naming_the_file(
    tmp_path: Path, damage: Callable[[Path], None], code: str, file: str
) -> None:
    root = _checkpointed(tmp_path / "t")
    damage(root)
    assert not _delta_rs_reads(root)
    report = audit_table(str(root))
    assert audit_exit_code(report) != 0
    errors = [(f.code, f.file) for f in report.findings if f.severity == "error"]
    assert (code, f"_delta_log/{file}") in errors, report.findings


@pytest.mark.parametrize(
    "fields", [{"parts": 2}, {"sizeInBytes": 1}, {"size": 99}], ids=["parts", "bytes", "size"]
)
def test_a_last_checkpoint_that_disagrees_with_its_checkpoint_is_a_warning(
    tmp_path: Path, fields: dict[str, int]
) -> None:
    root = _checkpointed(tmp_path / "t")
    _set_hint(root, **fields)
    assert _delta_rs_reads(root)
    report = audit_table(str(root))
    assert [(f.code, f.severity) for f in report.findings] == [
        ("last-checkpoint-mismatch", "warning")
    ]
    assert next(iter(fields)) in report.findings[0].message
    assert report.findings[0].file == f"_delta_log/{CHECKPOINT}"
    assert CHECKPOINT in report.findings[0].message
    assert audit_exit_code(report) == 1


def test_a_corrupt_line_after_the_checkpoint_is_said_once(tmp_path: Path, run_cli) -> None:
    root = _checkpointed(tmp_path / "t")
    commit = _log(root, f"{3:020d}.json")
    lines = commit.read_text().split("\n")
    lines[1] = lines[1][:20]
    commit.write_text("\n".join(lines))
    assert not _delta_rs_reads(root)
    out = run_cli("audit", str(root), "--format", "tsv")
    assert out.returncode == 2
    detail = "not valid JSON"
    assert out.stdout.count(detail) == 1, out.stdout  # the corrupt-json-line row only
    assert out.stderr.count("\n") == 1 and out.stderr.count(detail) == 1, out.stderr
    assert f"_delta_log/{3:020d}.json:2" in out.stderr


def _strand(root: Path, version: int, age_s: float) -> str:
    """Moves commit ``version`` (the newest) to a DynamoDB temp commit ``age_s`` old."""
    name = f".tmp/{version:020d}.json.0b1f6a2e-4c1d-4c59-9d8e-2f0a7f3c9a11"
    (root / "_delta_log" / ".tmp").mkdir()
    temp = _log(root, name)
    _log(root, f"{version:020d}.json").rename(temp)
    stamp = temp.stat().st_mtime - age_s
    os.utime(temp, (stamp, stamp))
    return name


def test_an_old_temp_commit_newer_than_the_latest_version_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _table(tmp_path / "t", appends=4)
    name = _strand(root, 3, age_s=2 * WRITER_WINDOW_MS / 1000)
    report = audit_table(str(root))
    (finding,) = report.findings
    assert finding.code == "temp-file" and finding.file == f"_delta_log/{name}"
    assert "may be a stranded commit: give `--dynamodb-table` to check" in finding.message
    assert audit_exit_code(report) == 1
    code, out = _repair(root, capsys)
    assert code == 1 and "nothing to repair" not in out
    assert name in out and "may be a stranded commit: give `--dynamodb-table` to check" in out
    code, out = _repair(root, capsys, yes=True)
    assert code == 1 and name in out and load_snapshot(str(root)).version == 2


def test_a_fresh_temp_commit_is_left_to_its_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _table(tmp_path / "t", appends=4)
    _strand(root, 3, age_s=0)
    code, out = _repair(root, capsys)
    assert code == 0 and "nothing to repair" in out
    assert "may be pending" in audit_table(str(root)).findings[0].message


DV_PROTOCOL = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["deletionVectors", "v2Checkpoint"],
    "writerFeatures": ["deletionVectors", "v2Checkpoint"],
}


def test_deletion_vector_files_missing_or_too_short_for_their_descriptor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Synthetic files (the layout is what is checked, at ``--check exists``: their contents
    are not Parquet): each descriptor needs ``offset`` + 4 + ``sizeInBytes`` + 4 bytes
    (PROTOCOL.md, Deletion Vector File Storage Format)."""
    t = SyntheticTable(tmp_path / "t", protocol=DV_PROTOCOL)
    t.create(1_000)
    ids = [uuid.UUID(int=i + 1) for i in range(3)]
    adds = []
    for i, dv_id in enumerate(ids):
        t.write_file(f"p=a/f{i}.parquet", 1_000, size=10)
        adds.append({"add": t.add_action(f"p=a/f{i}.parquet", 1_000, dv_descriptor(dv_id), 10)})
    need = 1 + 4 + 34 + 4
    t.write_file(dv_file_name(ids[0]), 1_000, size=need)  # exactly long enough
    t.write_file(dv_file_name(ids[1]), 1_000, size=need - 1)  # one byte short
    t.commit(adds, 2_000)  # ids[2]'s file is never written
    report = audit_table(str(t.root), footers=False)
    assert sorted((f.code, f.file) for f in report.findings) == [
        ("missing-dv-file", dv_file_name(ids[2])),
        ("short-dv-file", dv_file_name(ids[1])),
    ]
    short = next(f for f in report.findings if f.code == "short-dv-file")
    assert f"is {need - 1} bytes" in short.message and f"needs {need}" in short.message
    code, out = _repair(root=t.root, capsys=capsys, check=CheckMode.EXISTS)
    assert code == 1 and "removing 2 file(s)" in out


def test_a_v2_checkpoint_sidecar_missing_or_of_another_size(tmp_path: Path) -> None:
    t = SyntheticTable(tmp_path / "t", protocol=DV_PROTOCOL)
    t.create(1_000)
    t.write_file("p=a/f.parquet", 1_000, size=10)
    t.commit([{"add": t.add_action("p=a/f.parquet", 1_000, size=10)}], 2_000)
    checkpoint = t.v2_checkpoint()
    (sidecar,) = (t.log / "_sidecars").iterdir()
    sidecar.write_bytes(sidecar.read_bytes() + b"\0")
    for damaged in (True, False):
        report = audit_table(str(t.root))
        assert audit_exit_code(report) != 0
        (finding,) = [f for f in report.findings if f.code == "checkpoint-unreadable"]
        assert finding.file == f"_delta_log/{checkpoint}" and sidecar.name in finding.message
        if damaged:
            sidecar.unlink()


def test_repair_mends_the_truncated_checkpoint_the_audit_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a remove commit cannot fix, repair's log step does (issue 51 part 2): the dry run
    names the broken checkpoint, ``--yes`` rebuilds it from the commits without committing,
    and the audit is clean after."""
    root = _checkpointed(tmp_path / "t")
    _truncate_checkpoint(root)
    code, out = _repair(root, capsys, yes=False)
    assert code == 1 and "broken checkpoint: version 2 (unreadable)" in out
    code, out = _repair(root, capsys, yes=True)
    assert code == 0, out
    assert load_snapshot(str(root)).version == 4, "nothing committed"
    assert audit_exit_code(audit_table(str(root))) == 0


def _dv_bytes(crc_ok: bool = True) -> bytes:
    """A DV file holding one 34-byte bitmap at offset 1 (the layout, not a real bitmap)."""
    bitmap = DV_MAGIC.to_bytes(4, "little") + bytes(30)
    crc = zlib.crc32(bitmap) ^ (0 if crc_ok else 1)
    return b"\x01" + len(bitmap).to_bytes(4, "big") + bitmap + crc.to_bytes(4, "big")


def test_check_footers_reads_each_deletion_vector(tmp_path: Path) -> None:
    t = SyntheticTable(tmp_path / "t", protocol=DV_PROTOCOL)
    t.create(1_000)
    ids = [uuid.UUID(int=i + 1) for i in range(2)]
    adds = []
    for i, dv_id in enumerate(ids):
        t.write_file(f"p=a/f{i}.parquet", 1_000, size=10)
        adds.append({"add": t.add_action(f"p=a/f{i}.parquet", 1_000, dv_descriptor(dv_id), 10)})
        (t.root / dv_file_name(dv_id)).write_bytes(_dv_bytes(crc_ok=i == 0))
    t.commit(adds, 2_000)
    assert not [f for f in audit_table(str(t.root), footers=False).findings if "dv" in f.code]
    report = audit_table(str(t.root))
    bad = [(f.code, f.file) for f in report.findings if "dv" in f.code]
    assert bad == [("unreadable-dv-file", dv_file_name(ids[1]))]
    assert "CRC-32" in next(f.message for f in report.findings if f.code == "unreadable-dv-file")


def test_a_multi_part_checkpoint_missing_a_part_names_the_missing_part(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    parts = [
        _log(root, n) for n in (f"{2:020d}.checkpoint.{p:010d}.{3:010d}.parquet" for p in (1, 2))
    ]
    for part in parts:  # two of three parts of a checkpoint at 2 (the third never written)
        part.write_bytes(b"PAR1")
    _log(root, "_last_checkpoint").write_text(json.dumps({"version": 2, "size": 3, "parts": 3}))
    assert not _delta_rs_reads(root)
    report = audit_table(str(root))
    missing = f"_delta_log/{2:020d}.checkpoint.{3:010d}.{3:010d}.parquet"
    found = {(f.code, f.file) for f in report.findings}
    assert ("checkpoint-parts-missing", missing) in found
    assert ("last-checkpoint-missing", missing) in found
    assert audit_exit_code(report) == 1


def test_a_checkpoint_holding_an_older_state_is_a_checkpoint_mismatch(tmp_path: Path) -> None:
    """Checkpoints at 1 and 3, the one at 3 overwritten with the one at 1's bytes: delta-rs
    reads it without error and returns the rows of version 1 (plus the commits after 3)."""
    root = _table(tmp_path / "t", appends=2)
    DeltaTable(str(root)).create_checkpoint()
    _table(root, appends=2)
    DeltaTable(str(root)).create_checkpoint()
    write_deltalake(str(root), pa.table({"n": [100]}), mode="append")
    healthy = audit_table(str(root))
    assert audit_exit_code(healthy) == 0, healthy.findings
    assert "same state" in healthy.summary["checkpoint_compared"]
    latest = _log(root, f"{3:020d}.checkpoint.parquet")
    latest.write_bytes(_log(root, f"{1:020d}.checkpoint.parquet").read_bytes())
    assert DeltaTable(str(root)).to_pyarrow_table().num_rows == 21  # silently wrong: 41 rows

    report = audit_table(str(root))
    assert audit_exit_code(report) == 1
    found = [(f.code, f.file) for f in report.findings if f.severity == "error"]
    assert ("checkpoint-mismatch", f"_delta_log/{latest.name}") in found, report.findings
    assert "differs" in report.summary["checkpoint_compared"]

    for v in range(3):  # the commits up to the checkpoint cleaned up: not compared, said so
        _log(root, f"{v:020d}.json").unlink()
    cleaned = audit_table(str(root))
    assert "not compared" in cleaned.summary["checkpoint_compared"]


def test_a_checksum_file_newer_than_the_latest_commit_is_an_error(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")  # versions 0-2
    stray = _log(root, f"{6:020d}.crc")
    stray.write_text(
        json.dumps({"tableSizeBytes": 0, "numFiles": 0, "numMetadata": 1, "numProtocol": 1})
    )
    assert not _delta_rs_reads(root)
    report = audit_table(str(root))
    assert [(f.code, f.file) for f in report.findings] == [
        ("crc-ahead-of-log", f"_delta_log/{stray.name}")
    ]
    assert audit_exit_code(report) == 1


@pytest.mark.parametrize("kind", ["directory", "dangling-link"])
def test_a_commit_that_is_there_but_unreadable_is_what_history_says(
    tmp_path: Path, kind: str
) -> None:
    root = _table(tmp_path / "t")  # versions 0-2
    commit = _log(root, f"{1:020d}.json")
    commit.unlink()
    if kind == "directory":
        commit.mkdir()
    else:
        commit.symlink_to(tmp_path / "nowhere.json")
    assert not _delta_rs_reads(root)
    (entry,) = [e for e in read_history(str(root)) if e.version == 1]
    assert (entry.state, entry.finding) == ("unreadable", "commit-unreadable")
    report = audit_table(str(root))
    codes = [(f.code, f.file) for f in report.findings]
    assert ("commit-unreadable", f"_delta_log/{commit.name}") in codes, report.findings
    assert not [c for c, _ in codes if c.startswith("version-gap")], report.findings
    assert audit_exit_code(report) != 0


def test_a_bit_flip_in_a_checkpoint_data_page_is_checkpoint_unreadable(tmp_path: Path) -> None:
    """A flipped bit in a page of a column the replay does not read (found by flipping each
    byte of delta-rs's checkpoint of this table): delta-rs fails, the audit reads the newest
    checkpoint whole."""
    root = _table(tmp_path / "t")
    DeltaTable(str(root)).create_checkpoint()
    checkpoint = _log(root, CHECKPOINT)
    data = bytearray(checkpoint.read_bytes())
    data[501] ^= 0x10
    checkpoint.write_bytes(bytes(data))
    with pytest.raises(BaseException, match=r"(?i)parquet|encoding|utf"):  # delta-rs may panic
        DeltaTable(str(root)).to_pyarrow_table()
    report = audit_table(str(root))
    found = [(f.code, f.file) for f in report.findings if f.severity == "error"]
    assert ("checkpoint-unreadable", f"_delta_log/{CHECKPOINT}") in found, report.findings


def test_a_corrupt_log_compaction_readers_may_use_is_a_corrupt_line(tmp_path: Path) -> None:
    """A compaction covering versions after the newest checkpoint is parsed like a commit.
    (The delta-rs installed here does not read compactions, so it is no oracle here.)"""
    root = _table(tmp_path / "t", appends=4)  # versions 0-3
    compacted = _log(root, f"{1:020d}.{2:020d}.compacted.json")
    compacted.write_text('{"add": {"path": "x.parquet"\n')
    report = audit_table(str(root))
    found = [(f.code, f.file) for f in report.findings if f.severity == "error"]
    assert ("corrupt-json-line", f"_delta_log/{compacted.name}") in found, report.findings
    assert audit_exit_code(report) != 0
