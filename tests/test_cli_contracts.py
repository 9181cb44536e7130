"""CLI contracts a pipeline can chain: exit codes with one meaning across commands, ``--json``
that prints only JSON, and a cleanup manifest that never litters the working directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.tools.exit_codes import ExitCode
from deltaguard.tools.orphans import read_manifest
from deltaguard.tools.state_dir import state_dir

DELTAGUARD = str(Path(sys.executable).with_name("deltaguard"))
DAY = 86_400_000
NOW = int(time.time() * 1000)


def _table(root: Path, orphans: int = 2) -> SyntheticTable:
    t = SyntheticTable(root)
    t.create(NOW - 10 * DAY)
    for i in range(3):
        rel = f"p=a/f{i}.parquet"
        size = t.write_parquet(rel, NOW - 9 * DAY, [i])
        t.commit([{"add": t.add_action(rel, NOW - 9 * DAY, size=size)}], NOW - 9 * DAY + i)
    for i in range(orphans):
        t.write_file(f"p=a/orphan-{i}.parquet", NOW - 8 * DAY)
    return t


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git work tree to run the commands from."""
    work = tmp_path / "repo"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    return work


def test_successful_cleanup_exits_0_and_chains(run_cli, tmp_path, repo):
    t = _table(tmp_path / "t")
    state = tmp_path / "state"
    env = {"XDG_STATE_HOME": str(state)}
    dry = run_cli("orphans", str(t.root), cwd=repo, env=env)
    assert dry.returncode == ExitCode.FOUND == 1, dry.stdout + dry.stderr
    chained = subprocess.run(
        f"{DELTAGUARD} orphans {t.root} --delete --yes && echo VACUUM-RAN",
        shell=True,
        capture_output=True,
        text=True,
        cwd=repo,
        env={**os.environ, **env},
        check=False,
    )
    assert chained.returncode == 0, chained.stdout + chained.stderr
    assert "VACUUM-RAN" in chained.stdout
    assert not list(t.root.rglob("orphan-*"))
    again = run_cli("orphans", str(t.root), cwd=repo, env=env)
    assert again.returncode == ExitCode.CLEAN


def test_default_manifest_goes_to_the_state_dir_not_the_work_tree(run_cli, tmp_path, repo):
    t = _table(tmp_path / "t")
    state = tmp_path / "state"
    out = run_cli(
        "orphans", str(t.root), "--delete", "--yes", "--json", cwd=repo,
        env={"XDG_STATE_HOME": str(state)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    manifest = Path(doc["cleanup"]["manifest_path"])
    assert manifest.is_dir() and manifest.is_relative_to(state / "deltaguard" / "orphans")
    assert read_manifest(manifest).summary["status"] == "done"
    assert sorted(p.name for p in repo.iterdir()) == [".git"], "nothing written to the work tree"
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert status.stdout == ""


def test_state_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.delenv("DELTAGUARD_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_dir() == tmp_path / "xdg" / "deltaguard"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert state_dir() == Path.home() / ".local" / "state" / "deltaguard"
    monkeypatch.setenv("DELTAGUARD_STATE_DIR", str(tmp_path / "mine"))
    assert state_dir() == tmp_path / "mine"


def test_json_output_is_only_json(run_cli, tmp_path):
    t = _table(tmp_path / "t")
    for args in (
        ["orphans", str(t.root), "--json"],
        ["audit", str(t.root), "--json"],
        ["history", str(t.root), "--json"],
        ["repair", str(t.root), "--json"],
    ):
        out = run_cli(*args)
        assert out.returncode in (0, 1), (args, out.stderr)
        json.loads(out.stdout)  # nothing but the document
        assert out.stderr == "", (args, out.stderr)


def test_history_shows_each_versions_user_metadata_and_txn(run_cli, tmp_path):
    """What the unknown-outcome message of the commit stores tells a user to check."""
    t = _table(tmp_path / "t")
    version = t.version + 1
    commit_info = {"timestamp": NOW, "operation": "WRITE", "userMetadata": "job-42"}
    txn = {"appId": "etl", "version": 7, "lastUpdated": NOW}
    (t.log / f"{version:020d}.json").write_text(
        json.dumps({"commitInfo": commit_info}) + "\n" + json.dumps({"txn": txn}) + "\n"
    )
    out = run_cli("history", str(t.root))
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if f" {version} " in line)
    assert "job-42" in row and "etl=7" in row, out.stdout


@pytest.mark.slow  # 5-10 s: make test-fast stays under 3 minutes
def test_unreadable_means_exit_2_for_every_command(run_cli, tmp_path):
    t = _table(tmp_path / "t", orphans=1)
    latest = t.log / f"{t.version:020d}.json"
    latest.write_text(latest.read_text()[:-30] + "\n")  # a truncated last line
    codes = {}
    for command in ("audit", "history", "orphans", "repair", "log-cleanup"):
        out = run_cli(command, str(t.root), "--json")
        codes[command] = out.returncode
        assert "Traceback" not in out.stderr
        if command not in ("orphans", "log-cleanup"):
            json.loads(out.stdout)  # what could be read is still reported
    assert codes == {"audit": 2, "history": 2, "orphans": 2, "repair": 2, "log-cleanup": 2}


def _history_and_audit(table: Path) -> tuple[Any, Any]:
    """``history --json`` and ``audit --json`` of ``table``, in-process."""
    from click.testing import CliRunner

    from deltaguard.tools.cli import main

    runner = CliRunner()
    return (
        runner.invoke(main, ["history", str(table), "--json"]),
        runner.invoke(main, ["audit", str(table), "--json"]),
    )


def _rows(result: Any) -> dict[int, dict[str, Any]]:
    doc = json.loads(result.stdout)
    assert doc["schema"] == "deltaguard.history/4"
    return {e["version"]: e for e in doc["entries"]}


@pytest.mark.parametrize("checkpoint_after", [False, True])
def test_history_shows_a_missing_version_as_the_audit_does(tmp_path, checkpoint_after):
    """Every version of the retained log is a row: a missing commit is one, with the audit's
    finding for the gap and the audit's exit code (version-gap: 2, covered by a checkpoint:
    1)."""
    t = _table(tmp_path / "t")  # versions 0-3
    if checkpoint_after:
        t.checkpoint()
        rel = t.write_file("p=a/f9.parquet", NOW - DAY)
        t.commit([{"add": t.add_action(rel, NOW - DAY)}], NOW - DAY)
    (t.log / f"{1:020d}.json").unlink()
    history, audit = _history_and_audit(t.root)
    rows = _rows(history)
    assert sorted(rows) == list(range(t.version + 1))
    gap = rows[1]
    assert gap["state"] == "missing" and gap["timestamp_ms"] is None
    findings = {(f["code"], f["file"]) for f in json.loads(audit.stdout)["findings"]}
    assert (gap["finding"], gap["file"]) in findings
    assert gap["finding"] == ("version-gap-covered" if checkpoint_after else "version-gap")
    assert history.exit_code == audit.exit_code == (1 if checkpoint_after else 2)
    assert f"{gap['file']}: missing ({gap['finding']})" in history.stderr
    assert all(rows[v]["state"] == "ok" for v in rows if v != 1)


@pytest.mark.parametrize("kind", ["directory", "dangling-link"])
def test_history_says_unreadable_for_a_commit_that_is_there(tmp_path, kind):
    """A commit file that exists but cannot be read is "unreadable", never "missing"."""
    t = _table(tmp_path / "t")
    path = t.log / f"{2:020d}.json"
    path.unlink()
    if kind == "directory":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "gone.json")
    history, _ = _history_and_audit(t.root)
    for fmt in ("text", "tsv"):
        from click.testing import CliRunner

        from deltaguard.tools.cli import main

        out = CliRunner().invoke(main, ["history", str(t.root), "--format", fmt])
        assert "unreadable" in out.stdout and "missing" not in out.stdout, out.stdout
    row = _rows(history)[2]
    assert (row["state"], row["finding"]) == ("unreadable", "commit-unreadable")
    assert history.exit_code == ExitCode.UNREADABLE


def test_history_says_unreadable_for_an_s3_403(tmp_path):
    """S3 answers 403 AccessDenied for one listed commit and for the key of one missing from
    the listing: both are unreadable (we cannot tell whether they are there)."""
    from scripted_s3 import ScriptedS3, client_error

    from deltaguard.logstore.s3_location import S3Location
    from deltaguard.tools.commands.history import history_exit_code
    from deltaguard.tools.deltalog.history import CommitState, read_history
    from deltaguard.tools.storage.s3 import S3TableStore

    denied = {f"t/_delta_log/{2:020d}.json", f"t/_delta_log/{4:020d}.json"}

    class Denying(ScriptedS3):
        def get_object(self, *, Bucket: str, Key: str, **kw: Any) -> dict[str, Any]:
            if Key in denied:
                raise client_error(403, "AccessDenied", "GetObject", "Access Denied")
            return super().get_object(Bucket=Bucket, Key=Key, **kw)

    t = _table(tmp_path / "t")
    for _ in range(2):
        rel = t.write_file("p=a/g.parquet", NOW - DAY)
        t.commit([{"add": t.add_action(rel, NOW - DAY)}], NOW - DAY)
    (t.log / f"{4:020d}.json").unlink()  # a gap S3 answers 403 for, as without ListBucket
    s3 = Denying()
    for path in t.root.rglob("*"):
        if path.is_file():
            s3.objects[("lake", f"t/{path.relative_to(t.root)}")] = path.read_bytes()
    entries = read_history(S3TableStore(s3, S3Location.parse("s3://lake/t")))
    states = {e.version: e.state for e in entries}
    assert states == {5: "ok", 4: "unreadable", 3: "ok", 2: "unreadable", 1: "ok", 0: "ok"}
    assert all("403" in (e.problem or "") for e in entries if e.state is CommitState.UNREADABLE)
    assert history_exit_code(entries) == ExitCode.UNREADABLE


def test_repair_prints_text_json_or_tsv(tmp_path):
    """``repair --format text|json|tsv``, as every read command: the TSV has one row per
    action (docs/reference/output.md), planned in a dry run, done with --yes."""
    import csv
    import io

    from click.testing import CliRunner

    from deltaguard.tools.cli import main

    t = _table(tmp_path / "t", orphans=0)
    (t.root / "p=a/f1.parquet").unlink()
    runner = CliRunner()
    text = runner.invoke(main, ["repair", str(t.root), "--format", "text"])
    assert text.exit_code == ExitCode.FOUND and "p=a/f1.parquet" in text.stdout
    doc = json.loads(runner.invoke(main, ["repair", str(t.root), "--format", "json"]).stdout)
    assert doc["schema"] == "deltaguard.repair/1"
    for args, state in (([], "planned"), (["--yes"], "done")):
        out = runner.invoke(main, ["repair", str(t.root), "--format", "tsv", *args])
        rows = list(csv.DictReader(io.StringIO(out.stdout), dialect="excel-tab"))
        assert [(r["action"], r["path"], r["state"]) for r in rows] == [
            ("remove-dangling", "p=a/f1.parquet", state)
        ], out.stdout
