"""``deltaguard repair`` on local delta-rs-written tables: each kind of dangling reference
(deleted, truncated, a whole partition directory gone, several at once), paths that need
encoding, checkpoints before and after; the commit it writes; delta-rs, the audit and
deltaguard's replay agree afterwards; bad input is one line and exit 2 with nothing
committed. The commit API (:mod:`deltaguard.tools.deltalog.commit`) on local disk."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from deltaguard.logstore.local_log_store import LocalLogStore
from deltaguard.tools.commands.audit import audit_exit_code
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.deltalog.commit import VersionTakenError, commit_next
from deltaguard.tools.repair.committer import Committer

#: partition values that need URL encoding in paths (space, +, %, non-ASCII)
VALUES = ("a b", "x+y", "p%q", "日本")


def _table(root: Path, checkpoint: bool = False) -> Path:
    """A delta-rs table partitioned by ``p`` (the values above), four appends."""
    for i in range(4):
        rows = {"p": list(VALUES), "n": [i * 10 + k for k in range(len(VALUES))]}
        write_deltalake(str(root), pa.table(rows), partition_by=["p"], mode="append")
    if checkpoint:
        DeltaTable(str(root)).create_checkpoint()
    return root


def _commit(root: Path, version: int) -> list[dict]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _agree(root: Path) -> set[str]:
    """delta-rs and deltaguard's replay list the same live files, delta-rs reads every row of
    them, and the audit is healthy; returns the live files (decoded, relative)."""
    replay = {str(root / p) for p in load_snapshot(str(root)).adds.paths()}
    dt = DeltaTable(str(root))
    rs = {Path(u.removeprefix("file://")).as_posix() for u in dt.file_uris()}
    assert rs == replay
    dt.to_pyarrow_table()  # reads every live file: fails on a missing or broken one
    assert audit_exit_code(audit_table(str(root))) == 0, audit_table(str(root)).findings
    return replay


def _files_in(root: Path, value: str) -> list[Path]:
    """The live files of partition ``p = value`` (delta-rs escapes the directory name, Hive
    style, and URL-encodes that in the log: ``p=x%2By`` is ``p=x%252By`` there)."""
    snap = load_snapshot(str(root))
    return sorted(root / a.path for a in snap.adds if a.partition_values.get("p") == value)


# proves: docs/guides/repair.md "repair's dry run writes nothing"
@pytest.mark.parametrize("checkpoint", [False, True], ids=["json-only", "checkpoint-before"])
def test_deleted_and_truncated_files_are_removed_in_one_commit(tmp_path, run_cli, checkpoint):
    root = _table(tmp_path / "t", checkpoint)
    before = load_snapshot(str(root))
    deleted = _files_in(root, "x+y")[0]
    truncated = _files_in(root, "日本")[1]
    deleted.unlink()
    truncated.write_bytes(truncated.read_bytes()[:-20])

    exists = run_cli("repair", str(root))
    assert exists.returncode == 1, exists.stdout + exists.stderr
    assert "does not exist" in exists.stdout and "would commit version 4" in exists.stdout
    footers = run_cli("repair", str(root), "--check", "footers", "--json")
    assert footers.returncode == 1
    doc = json.loads(footers.stdout)
    assert doc["dry_run"] and len(doc["dangling"]) == 2
    assert load_snapshot(str(root)).version == before.version, "a dry run commits nothing"

    done = run_cli("repair", str(root), "--check", "footers", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "committed version 4" in done.stdout
    actions = _commit(root, 4)
    info = actions[0]["commitInfo"]
    assert info["operation"] == "FSCK" and info["readVersion"] == 3
    removes = [a["remove"] for a in actions[1:]]
    assert len(removes) == 2 and len(actions) == 3, "nothing but commitInfo and the removes"
    raw_adds = {
        a["add"]["path"]: a["add"] for v in range(4) for a in _commit(root, v) if "add" in a
    }
    for remove in removes:
        add = raw_adds[remove["path"]]  # the raw (encoded) path, as the add wrote it
        assert remove["size"] == add["size"]
        assert remove["partitionValues"] == add["partitionValues"]
        assert remove["dataChange"] is True and remove["extendedFileMetadata"] is True
        assert isinstance(remove["deletionTimestamp"], int)
    assert sorted(json.loads(info["operationParameters"]["removedFiles"])) == sorted(
        r["path"] for r in removes
    )
    live = _agree(root)
    assert str(deleted) not in live and str(truncated) not in live
    assert len(live) == len(before.adds) - 2
    again = run_cli("repair", str(root), "--check", "footers")
    assert again.returncode == 0 and "nothing to repair" in again.stdout


def test_missing_partition_directory_then_checkpoint_after(tmp_path, run_cli):
    root = _table(tmp_path / "t")
    gone = _files_in(root, "p%q")
    shutil.rmtree(gone[0].parent)
    done = run_cli("repair", str(root), "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(_commit(root, 4)) == 1 + len(gone)
    _agree(root)
    DeltaTable(str(root)).create_checkpoint()  # a checkpoint after the repair keeps it
    live = _agree(root)
    assert not set(map(str, gone)) & live
    write_deltalake(
        str(root), pa.table({"p": ["p%q"], "n": [99]}), partition_by=["p"], mode="append"
    )
    assert DeltaTable(str(root)).to_pyarrow_table().num_rows == 4 * 4 - len(gone) + 1


def test_healthy_table_exits_0_and_commits_nothing(tmp_path, run_cli):
    root = _table(tmp_path / "t")
    out = run_cli("repair", str(root), "--yes")
    assert out.returncode == 0 and "nothing to repair" in out.stdout
    assert load_snapshot(str(root)).version == 3


def test_bad_input_is_one_line_exit_2_and_nothing_committed(tmp_path, run_cli):
    plain = tmp_path / "plain"
    plain.mkdir()
    out = run_cli("repair", str(plain), "--yes")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "not a Delta table" in out.stderr

    root = _table(tmp_path / "t")
    _files_in(root, "a b")[0].unlink()
    log = root / "_delta_log" / f"{2:020d}.json"
    log.write_text(log.read_text()[:-40] + "\n")  # a torn commit: the log cannot be replayed
    out = run_cli("repair", str(root), "--yes")
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1 and f"{2:020d}.json" in out.stderr
    assert not (root / "_delta_log" / f"{4:020d}.json").exists()


def test_unwritable_tables_are_refused(tmp_path, run_cli):
    root = _table(tmp_path / "t")
    _files_in(root, "a b")[0].unlink()
    first = _commit(root, 0)
    protocol = next(a for a in first if "protocol" in a)
    protocol["protocol"] = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["someFutureFeature"],
    }
    (root / "_delta_log" / f"{0:020d}.json").write_text(
        "".join(json.dumps(a) + "\n" for a in first)
    )
    out = run_cli("repair", str(root), "--yes")
    assert out.returncode == 2 and "someFutureFeature" in out.stderr
    assert not (root / "_delta_log" / f"{4:020d}.json").exists()


def test_append_only_table_is_refused(tmp_path, run_cli):
    root = tmp_path / "t"
    write_deltalake(
        str(root),
        pa.table({"n": [1, 2]}),
        configuration={"delta.appendOnly": "true"},
    )
    write_deltalake(str(root), pa.table({"n": [3]}), mode="append")
    next(root.glob("*.parquet")).unlink()
    out = run_cli("repair", str(root), "--yes")
    assert out.returncode == 2 and "delta.appendOnly" in out.stderr
    assert not (root / "_delta_log" / f"{2:020d}.json").exists()


def test_commit_next_is_create_exclusive_on_local_disk(tmp_path):
    """Eight threads commit at the same version: exactly one wins, the others get
    VersionTakenError, and the winner's bytes are what the file holds."""
    root = _table(tmp_path / "t")
    store = LocalLogStore()
    winners: list[int] = []
    lost: list[int] = []
    barrier = threading.Barrier(8)

    def one(i: int) -> None:
        barrier.wait()
        try:
            commit_next(store, str(root), 3, [{"commitInfo": {"operation": f"T{i}"}}])
            winners.append(i)
        except VersionTakenError as exc:
            assert exc.version == 4
            lost.append(i)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1 and len(lost) == 7
    assert _commit(root, 4)[0]["commitInfo"]["operation"] == f"T{winners[0]}"
    assert not [p for p in (root / "_delta_log").iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(ValueError, match="commitInfo"):
        commit_next(store, str(root), 4, [{"add": {}}])


class _RacingStore(LocalLogStore):
    """A local store whose first commit is beaten by a real delta-rs write (``race``) made
    right before it: the version the repair planned is taken when it commits."""

    def __init__(self, race: Callable[[], None]) -> None:
        self.race: Callable[[], None] | None = race

    def write(self, uri: str, lines: Iterable[str], overwrite: bool = False) -> None:
        if self.race is not None:
            race, self.race = self.race, None
            race()
        super().write(uri, lines, overwrite)


def _run_racing(
    monkeypatch: pytest.MonkeyPatch, root: Path, race: Callable[[], None], capsys: Any
) -> tuple[int, str]:
    from deltaguard.tools.repair import run

    store = _RacingStore(race)
    monkeypatch.setattr(
        run, "open_committer", lambda *a: Committer(store, str(root), "local create-exclusive")
    )
    code = run.run_repair(run.RepairRequest(str(root), yes=True))
    return code, capsys.readouterr().out


# proves: README and docs/guides/repair.md "repair next to live writers: nothing is ever
# overwritten"
def test_a_writer_taking_the_version_makes_repair_replan_and_retry(tmp_path, monkeypatch, capsys):
    root = _table(tmp_path / "t")
    gone = _files_in(root, "a b")[0]
    gone.unlink()

    def append() -> None:
        write_deltalake(
            str(root), pa.table({"p": ["x+y"], "n": [7]}), partition_by=["p"], mode="append"
        )

    code, out = _run_racing(monkeypatch, root, append, capsys)
    assert code == 0, out
    assert "version 4 was taken by another writer: re-planning" in out
    assert "committed version 5" in out
    assert _commit(root, 4)[0]["commitInfo"]["operation"] == "WRITE", "the append is kept"
    assert _commit(root, 5)[0]["commitInfo"]["operation"] == "FSCK"
    live = _agree(root)
    assert str(gone) not in live and len(live) == 4 * 4 - 1 + 1


def test_a_writer_removing_the_broken_file_first_leaves_nothing_to_commit(
    tmp_path, monkeypatch, capsys
):
    root = _table(tmp_path / "t")
    _files_in(root, "日本")[0].unlink()

    def overwrite() -> None:
        write_deltalake(
            str(root), pa.table({"p": ["a b"], "n": [1]}), partition_by=["p"], mode="overwrite"
        )

    code, out = _run_racing(monkeypatch, root, overwrite, capsys)
    assert code == 0 and "nothing left to remove at version 4: no commit" in out, out
    assert not (root / "_delta_log" / f"{5:020d}.json").exists()
    assert len(_agree(root)) == 1


def test_literal_space_plus_percent_and_non_ascii_in_a_file_name(tmp_path, run_cli):
    """A file whose name holds a space, ``+``, ``%`` and non-ASCII letters, added through the
    commit API with its path URL-encoded as the protocol asks: repair's remove carries the
    add's raw path, and delta-rs and the replay agree afterwards."""
    import io
    import urllib.parse

    import pyarrow.parquet as pq

    root = _table(tmp_path / "t")
    name = "odd dir/a b+c%d 日本.parquet"
    (root / "odd dir").mkdir()
    buffer = io.BytesIO()
    pq.write_table(pa.table({"n": pa.array([1000], pa.int64())}), buffer)
    (root / name).write_bytes(buffer.getvalue())
    raw = urllib.parse.quote(name, safe="/+")
    add = {
        "path": raw,
        "partitionValues": {"p": "a b"},
        "size": len(buffer.getvalue()),
        "modificationTime": 1,
        "dataChange": True,
    }
    commit_next(
        LocalLogStore(), str(root), 3, [{"commitInfo": {"operation": "WRITE"}}, {"add": add}]
    )
    assert str(root / name) in _agree(root)
    (root / name).unlink()
    out = run_cli("repair", str(root), "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert [a["remove"]["path"] for a in _commit(root, 5)[1:]] == [raw]
    assert str(root / name) not in _agree(root)


# proves: docs/guides/repair.md "a file that reappeared, or an entry another writer removed
# meanwhile, leaves the plan"
def test_a_file_that_reappears_between_plan_and_recheck_is_not_removed(
    tmp_path, monkeypatch, capsys
):
    """Two files are deleted; the repair plans to remove both. Right after the plan (the real
    ``find_damage`` answered), one of them is put back, bytes intact. The re-check before
    the commit must drop it: the commit removes only the other, and delta-rs then reads the
    reappeared file's rows."""
    from deltaguard.tools.repair import run

    root = _table(tmp_path / "t")
    back, gone = _files_in(root, "a b")[0], _files_in(root, "x+y")[0]
    saved = back.read_bytes()
    back.unlink()
    gone.unlink()
    from deltaguard.tools.repair import remove_commit as damage

    real = damage.find_damage
    plans: list[list[str]] = []

    def plan_then_restore(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        plans.append(sorted(d.path for d in found[0]))
        if len(plans) == 1:
            back.write_bytes(saved)  # the file reappears between the plan and the re-check
        return found

    # the plan (run.find_damage) and the re-check (damage.find_dangling) both end here
    monkeypatch.setattr(run, "find_damage", plan_then_restore)
    monkeypatch.setattr(damage, "find_damage", plan_then_restore)
    code = run.run_repair(run.RepairRequest(str(root), yes=True))
    out = capsys.readouterr().out
    assert code == 0, out
    assert len(plans) == 2 and len(plans[0]) == 2 and len(plans[1]) == 1, plans
    assert out.count("dangling:") == 2, "both files were in the plan"
    assert "committed version 4" in out and "removed 1 dangling reference(s)" in out, out
    removed = [a["remove"]["path"] for a in _commit(root, 4) if "remove" in a]
    assert len(removed) == 1
    live = _agree(root)  # delta-rs reads every live file, the reappeared one included
    assert str(back) in live and str(gone) not in live
    rows = DeltaTable(str(root)).to_pyarrow_table()
    assert rows.num_rows == 4 * 4 - 1, "only the rows of the file that stayed gone are lost"
