"""The console script, run as a user runs it."""

from __future__ import annotations

from pathlib import Path

from deltaguard.logstore.jars import plugin_jar


def test_jar_prints_the_packaged_jar(run_cli):
    out = run_cli("jar")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(plugin_jar())


def test_packages_prints_coordinates(run_cli):
    out = run_cli("packages")
    assert out.returncode == 0
    assert "io.delta:delta-spark_4.2_2.13:4.4.0" in out.stdout.split(",")[0]


def test_unknown_command_is_a_clean_error(run_cli):
    out = run_cli("frobnicate")
    assert out.returncode == 2
    assert "No such command" in out.stderr
    assert "Traceback" not in out.stderr


def test_version(run_cli):
    out = run_cli("--version")
    version = (Path(__file__).resolve().parents[1] / "VERSION").read_text().strip()
    assert out.returncode == 0 and version in out.stdout
