"""``deltaguard orphans --engine spark`` (and ``audit --engine spark``) refuses what the local
engine refuses, before a Spark JVM starts (these run in the fast tier: no JVM)."""

from __future__ import annotations

from pathlib import Path


def test_spark_engine_names_a_missing_table_before_starting_spark(run_cli, tmp_path: Path) -> None:
    done = run_cli("orphans", str(tmp_path / "nowhere"), "--engine", "spark", timeout=60)
    assert done.returncode == 2
    assert "nowhere does not exist" in done.stderr
    assert "Spark" not in done.stderr and "Traceback" not in done.stderr


def test_spark_engine_refuses_a_short_retention_for_cleanup(run_cli, tmp_path: Path) -> None:
    done = run_cli(
        "orphans", str(tmp_path), "--engine", "spark", "--retention", "1", "--delete", timeout=60
    )
    assert done.returncode == 2
    assert "under 24 hours" in done.stderr and "--unsafe-retention" in done.stderr


def test_spark_audit_refuses_before_starting_spark(run_cli, tmp_path: Path) -> None:
    done = run_cli("audit", str(tmp_path / "nowhere"), "--engine", "spark", timeout=60)
    assert done.returncode == 2
    assert "nowhere does not exist" in done.stderr
    assert "Spark" not in done.stderr and "Traceback" not in done.stderr
    done = run_cli("audit", str(tmp_path), "--engine", "spark", "--version", "1", timeout=60)
    assert done.returncode == 2 and "--engine spark checks the latest version" in done.stderr
