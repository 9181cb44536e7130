"""The distribution: one wheel carrying the plugin jar and the whole `deltaguard` namespace,
and a CLI that works from that wheel without Spark (`pip install deltaguard`, no extra)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.logstore.jars import JAR_NAMES
from deltaguard.spark_conf.jvm_deps import cache_dir

REPO = Path(__file__).resolve().parents[1]


UV = os.environ.get("UV") or str(cache_dir() / "bootstrap" / "bin" / "uv")
#: Every command of the CLI-only install, as `deltaguard ARGS --help`.
CLI_COMMANDS = [
    ["audit"],
    ["history"],
    ["orphans"],
    ["probe"],
    ["conf", "render"],
    ["conf", "check"],
    ["dynamodb", "create-table"],
    ["jar"],
    ["packages"],
]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("wheel")
    # setuptools writes build/ into the project it builds: build a copy, not the work tree
    source = tmp_path / "src"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "*.egg-info", "target", "__pycache__", ".*_cache"
        ),
    )
    out = subprocess.run(
        [UV, "build", "--wheel", "-q", "-o", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    (built,) = tmp_path.glob("deltaguard-*.whl")
    return built


def test_wheel_carries_jar_and_namespace(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for jar in JAR_NAMES.values():
        assert f"deltaguard/logstore/jars/{jar}" in names
    assert "deltaguard/localstack/install.sh" in names
    assert "deltaguard/spark_conf/ivysettings.xml" in names, "presets with jars=packages name it"
    assert "deltaguard/tools/deltalog/snapshot.py" in names
    top_level = {n.split("/")[0] for n in names if not n.startswith("deltaguard-")}
    assert top_level == {"deltaguard"}, "no top-level module besides deltaguard"
    assert not [n for n in names if n.startswith("deltaguard/__init__")], (
        "deltaguard is a namespace"
    )
    assert {f"deltaguard/{p}/py.typed" for p in ("logstore", "spark_conf", "tools")} <= set(names)
    assert "deltaguard/tools/fanout/writer.py" in names
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    requires = [
        line
        for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
        if line.startswith("Requires-Dist:")
    ]
    core = [r for r in requires if "extra ==" not in r]
    assert not [r for r in core if "pyspark" in r or "delta-spark" in r], core
    assert [r for r in requires if "pyspark" in r and 'extra == "spark"' in r]


def test_cli_works_from_the_wheel_without_spark(wheel, tmp_path):
    """`pip install deltaguard` (no `spark` extra) into a fresh venv: every command's --help,
    and an audit and orphans dry run of a local table, with no pyspark importable."""
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "-q", "-p", "python3.11", str(venv)], check=True)
    install = subprocess.run(
        [UV, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stderr
    python = str(venv / "bin" / "python")
    no_spark = subprocess.run(
        [python, "-c", "import importlib.util as u; print(u.find_spec('pyspark'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert no_spark.stdout.strip() == "None", "the CLI-only install pulled in pyspark"
    cli = str(venv / "bin" / "deltaguard")
    for command in CLI_COMMANDS:
        out = subprocess.run([cli, *command, "--help"], capture_output=True, text=True)
        assert out.returncode == 0, (command, out.stderr)
        assert "Usage: deltaguard" in out.stdout, command
    table = SyntheticTable(tmp_path / "events")
    table.create(1_700_000_000_000)
    rel = table.write_file("p=a/part-0.parquet", 1_700_000_000_000)
    table.commit([{"add": table.add_action(rel, 1_700_000_000_000)}], 1_700_000_001_000)
    audit = subprocess.run(
        [cli, "audit", str(table.root), "--json"], capture_output=True, text=True
    )
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert json.loads(audit.stdout)["latest_version"] == 1
    orphans = subprocess.run([cli, "orphans", str(table.root)], capture_output=True, text=True)
    assert orphans.returncode == 0, orphans.stdout + orphans.stderr
    assert (tmp_path / "events" / rel).is_file()
