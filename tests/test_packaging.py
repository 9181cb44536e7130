"""The distribution: one wheel carrying the product only (the `deltaguard` namespace without
its test bed, with the plugin jars and the presets), and a CLI that works from that wheel
without Spark and without a JVM (`pip install deltaguard`, no extra).

The wheel is built as a new user builds it: the README's install commands, verbatim, in a
fresh `git clone` of this repository (its committed HEAD) with an empty deltaguard cache
(`make wheel` bootstraps its own uv and builds the plugin jars; only Maven's ~/.m2 and uv's
cache are reused), into the venv the README creates. Two substitutions keep it cheap: `pip` is
uv's (`uv pip`, same packages from uv's cache), and the `[spark]` line is left out (it would
download pyspark). Without Java or Maven on PATH, `make wheel` stops with one line naming it."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.logstore.jars import JAR_NAMES
from deltaguard.tools.cli import main as cli_main

pytestmark = pytest.mark.slow  # a wheel build in a fresh clone: `make test`, not test-fast

REPO = Path(__file__).resolve().parents[1]


#: The package that needs the `spark` extra (pyspark, delta-spark): without it, its modules
#: fail to import on exactly those two.
SPARK_EXTRA_PACKAGE = "deltaguard.tools.fanout"
#: Imports each module named in argv; prints {module: "<error type> <missing module or message>"}.
IMPORT_EACH = """
import importlib, json, sys
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as e:
        failed[name] = f"{type(e).__name__} {getattr(e, 'name', None) or e}"
print(json.dumps(failed))
"""


def cli_commands(command: click.Command, path: list[str]) -> list[list[str]]:
    """Every command of the CLI, as the arguments that name it (`["conf", "check"]`)."""
    if isinstance(command, click.Group):
        return [
            found
            for name, sub in sorted(command.commands.items())
            for found in cli_commands(sub, [*path, name])
        ]
    return [path]


def module_names(names: list[str]) -> list[str]:
    """The import names of the wheel's Python modules (``deltaguard/tools/cli.py`` ->
    ``deltaguard.tools.cli``; a package's ``__init__.py`` -> the package)."""
    modules = []
    for name in names:
        if name.startswith("deltaguard/") and name.endswith(".py"):
            parts = name[: -len(".py")].split("/")
            modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(modules)


def readme_install_commands() -> list[str]:
    """The lines of the README's install block (``## Install``), comments cut off."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"^## Install\n.*?^```bash\n(.*?)^```", text, re.M | re.S)
    assert block, "README.md has an install block"
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def path_without(*tools: str, base: Path) -> str:
    """A PATH that finds every program of this one except ``tools`` (links in ``base``)."""
    base.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for program in Path(folder).glob("*") if Path(folder).is_dir() else []:
            link = base / program.name
            if program.name not in tools and not link.exists() and os.access(program, os.X_OK):
                link.symlink_to(program)
    return str(base)


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The README's install commands in a fresh clone with an empty cache (module docstring)."""
    tmp_path = tmp_path_factory.mktemp("fresh-clone")
    clone, home = tmp_path / "clone", tmp_path / "home"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),  # the README's ~/deltaguard-venv
        "DELTAGUARD_CACHE": str(tmp_path / "empty-cache"),
        "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR") or str(Path.home() / ".cache" / "uv"),
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip"),
    }
    for name in ("UV", "VIRTUAL_ENV", "PYTHONPATH", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(name, None)
    no_java = path_without("java", "mvn", base=tmp_path / "no-java-bin")
    refused = subprocess.run(
        ["make", "wheel"], cwd=clone, env={**env, "PATH": no_java}, capture_output=True, text=True
    )
    assert refused.returncode != 0
    assert (
        refused.stderr.strip().splitlines() == [refused.stderr.strip()]
        and "java not found on PATH" in refused.stderr
    ), refused.stdout + refused.stderr
    commands = readme_install_commands()
    assert commands[0] == "make wheel" and "deltaguard jar" in commands
    lines = ["set -eo pipefail", 'pip() { uv pip "$@"; }']
    for command in commands:
        if "[spark]" not in command:
            lines.append(command)
        if command == "make wheel":  # the uv it bootstrapped, for `pip`
            lines.append(f'PATH="{env["DELTAGUARD_CACHE"]}/bootstrap/bin:$PATH"')
    script = "\n".join(lines)
    done = subprocess.run(
        ["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # into a log (not a terminal): no colour escapes from make wheel's Maven and uv
    assert "\x1b[" not in done.stdout + done.stderr, (done.stdout + done.stderr)[:2000]
    jar = Path(done.stdout.strip().splitlines()[-1])
    assert jar.is_file() and jar.is_relative_to(home / "deltaguard-venv"), done.stdout
    (built,) = (clone / "dist").glob("deltaguard-*.whl")
    return Installed(built, home / "deltaguard-venv")


@pytest.fixture(scope="module")
def wheel(installed: Installed) -> Path:
    return installed.wheel


@pytest.fixture(scope="module")
def wheel_names(wheel: Path) -> list[str]:
    return zipfile.ZipFile(wheel).namelist()


def test_wheel_carries_the_product_and_not_the_test_bed(wheel, wheel_names):
    names = wheel_names
    assert not [n for n in names if n.startswith("deltaguard/localstack/")], (
        "the test bed is a development-only distribution (localstack/pyproject.toml)"
    )
    for jar in JAR_NAMES.values():
        assert f"deltaguard/logstore/jars/{jar}" in names
    presets = sorted(p.name for p in (REPO / "spark_conf" / "presets").glob("*.properties"))
    assert presets
    for preset in presets:
        assert f"deltaguard/spark_conf/presets/{preset}" in names
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


def test_the_product_never_imports_the_test_bed(wheel, wheel_names):
    """Not even lazily, inside a function: the installed wheel has no test bed to import."""
    archive = zipfile.ZipFile(wheel)
    found = []
    for name in wheel_names:
        if not name.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(archive.read(name), filename=name)):
            if isinstance(node, ast.ImportFrom):
                targets = [node.module or ""]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            found += [
                f"{name}: {t}" for t in targets if t.split(".")[:2] == ["deltaguard", "localstack"]
            ]
    assert found == []


@pytest.fixture(scope="module")
def wheel_venv(installed: Installed) -> Path:
    """The README's venv with only the wheel installed, no extra: `pip install deltaguard`."""
    return installed.venv


def test_every_product_module_imports_from_the_wheel(wheel_venv, wheel_names, tmp_path):
    """Every module of the wheel imports in the venv that has only the wheel; the fan-out
    library's, which need the `spark` extra, fail on pyspark or delta-spark and nothing else."""
    modules = module_names(wheel_names)
    assert "deltaguard.tools.cli" in modules and "deltaguard.logstore.s3_conditional" in modules
    out = subprocess.run(
        [str(wheel_venv / "bin" / "python"), "-c", IMPORT_EACH, *modules],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    failed = json.loads(out.stdout)
    product = {m: e for m, e in failed.items() if not m.startswith(SPARK_EXTRA_PACKAGE)}
    assert product == {}
    needs_spark = {m: e for m, e in failed.items() if m.startswith(SPARK_EXTRA_PACKAGE)}
    assert needs_spark, "the fan-out library imported without pyspark: update SPARK_EXTRA_PACKAGE"
    assert set(needs_spark.values()) <= {
        "ModuleNotFoundError delta",
        "ModuleNotFoundError pyspark",
    }, needs_spark


def test_cli_works_from_the_wheel_without_spark(wheel_venv, tmp_path):
    """`pip install deltaguard` (no `spark` extra) into a fresh venv: every command's --help,
    and an audit and orphans dry run of a local table, with no pyspark importable and no
    JVM on PATH (only the venv's bin)."""
    python = str(wheel_venv / "bin" / "python")
    no_spark = subprocess.run(
        [python, "-c", "import importlib.util as u; print(u.find_spec('pyspark'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert no_spark.stdout.strip() == "None", "the CLI-only install pulled in pyspark"
    cli = str(wheel_venv / "bin" / "deltaguard")
    commands = cli_commands(cli_main, [])
    assert ["conf", "check"] in commands and ["orphans"] in commands
    for command in commands:
        out = subprocess.run([cli, *command, "--help"], capture_output=True, text=True)
        assert out.returncode == 0, (command, out.stderr)
        assert "Usage: deltaguard" in out.stdout, command
    table = SyntheticTable(tmp_path / "events")
    table.create(1_700_000_000_000)
    rel = "p=a/part-0.parquet"
    size = table.write_parquet(rel, 1_700_000_000_000, [1])
    table.commit([{"add": table.add_action(rel, 1_700_000_000_000, size=size)}], 1_700_000_001_000)
    venv_only = {**os.environ, "PATH": str(wheel_venv / "bin")}
    venv_only.pop("JAVA_HOME", None)
    assert shutil.which("java", path=venv_only["PATH"]) is None
    audit = subprocess.run(
        [cli, "audit", str(table.root), "--json"], capture_output=True, text=True, env=venv_only
    )
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert json.loads(audit.stdout)["latest_version"] == 1
    orphans = subprocess.run(
        [cli, "orphans", str(table.root)], capture_output=True, text=True, env=venv_only
    )
    assert orphans.returncode == 0, orphans.stdout + orphans.stderr
    repair = subprocess.run(
        [cli, "repair", str(table.root), "--yes"], capture_output=True, text=True
    )
    assert repair.returncode == 0 and "nothing to repair" in repair.stdout, repair.stderr
    assert (tmp_path / "events" / rel).is_file()
