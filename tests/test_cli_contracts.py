"""CLI contracts a pipeline can chain: exit codes with one meaning across commands, ``--json``
that prints only JSON, and a cleanup manifest that never litters the working directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

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
        rel = t.write_file(f"p=a/f{i}.parquet", NOW - 9 * DAY)
        t.commit([{"add": t.add_action(rel, NOW - 9 * DAY)}], NOW - 9 * DAY + i)
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


def test_unreadable_means_exit_2_for_every_command(run_cli, tmp_path):
    t = _table(tmp_path / "t", orphans=1)
    latest = t.log / f"{t.version:020d}.json"
    latest.write_text(latest.read_text()[:-30] + "\n")  # a truncated last line
    codes = {}
    for command in ("audit", "history", "orphans", "repair"):
        out = run_cli(command, str(t.root), "--json")
        codes[command] = out.returncode
        assert "Traceback" not in out.stderr
        if command != "orphans":
            json.loads(out.stdout)  # what could be read is still reported
    assert codes == {"audit": 2, "history": 2, "orphans": 2, "repair": 2}
