"""The packages whose public names load on first use (:mod:`deltaguard.tools.lazy_exports`):
what a type checker reads under ``TYPE_CHECKING`` is what the interpreter imports; the CLI
starts without loading the log reader, botocore or the Spark engine, and a command on a local
table never loads boto3 or botocore's parsers (what an S3 client needs)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from deltaguard.localstack.synthetic_table import SyntheticTable

REPO = Path(__file__).resolve().parents[1]

LAZY_PACKAGES = {
    "deltaguard.tools.deltalog": REPO / "tools/deltalog/__init__.py",
    "deltaguard.tools.storage": REPO / "tools/storage/__init__.py",
    "deltaguard.tools.orphans": REPO / "tools/orphans/__init__.py",
}


def _type_checking_imports(init: Path) -> dict[str, str]:
    """Public name -> the module it is imported from, under ``if TYPE_CHECKING:``."""
    out: dict[str, str] = {}
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for inner in node.body:
                assert isinstance(inner, ast.ImportFrom) and inner.module
                out.update((alias.name, inner.module) for alias in inner.names)
    return out


@pytest.mark.parametrize("package", sorted(LAZY_PACKAGES))
def test_every_declared_name_is_the_object_its_module_defines(package: str) -> None:
    declared = _type_checking_imports(LAZY_PACKAGES[package])
    module = importlib.import_module(package)
    assert declared, "the package declares its public names under TYPE_CHECKING"
    assert sorted(declared) == sorted(module.__all__)
    for name, source in declared.items():
        assert getattr(module, name) is getattr(importlib.import_module(source), name), name


def test_an_unknown_name_is_an_attribute_error_and_a_submodule_still_imports() -> None:
    module = importlib.import_module("deltaguard.tools.orphans")
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018
    from deltaguard.tools.orphans import manifest

    assert manifest.__name__ == "deltaguard.tools.orphans.manifest"


def test_the_cli_starts_without_the_readers_or_botocore() -> None:
    """The command modules import only what their options need: a start (``--help``, a usage
    error) does not pay for botocore, the log reader or the Spark engine."""
    code = (
        "import sys, deltaguard.tools.cli\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] == 'botocore'"
        " or m.startswith(('deltaguard.tools.deltalog.actions', 'deltaguard.tools.storage.s3',"
        " 'deltaguard.tools.spark_engine', 'deltaguard.tools.orphans.classify')))))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert loaded == []


@pytest.mark.parametrize(
    "command", ["audit", "history", "orphans", "repair", "checkpoint", "log-cleanup"]
)
def test_a_command_on_a_local_table_loads_no_s3_client(command: str, tmp_path: Path) -> None:
    table = SyntheticTable(tmp_path / "t")
    table.create(1_700_000_000_000)
    rel = "part-0.parquet"
    size = table.write_parquet(rel, 1_700_000_000_000, [1])
    table.commit([{"add": table.add_action(rel, 1_700_000_000_000, size=size)}], 1_700_000_001_000)
    code = (
        "import sys\n"
        "from deltaguard.tools.cli import main\n"
        "try:\n"
        f"    main([{command!r}, {str(table.root)!r}])\n"
        "except SystemExit as exit:\n"
        "    print('exit', exit.code)\n"
        "print(' '.join(m for m in ('boto3', 'botocore.parsers', 'botocore.session')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[-2:] == ["exit 0", ""], out.stdout + out.stderr
