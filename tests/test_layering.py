"""The package's layers import downwards only: logstore < tools/storage < tools/deltalog <
engines (orphans, repair, fanout) < commands (tools/cli.py). Read from the source with ``ast``
(every import: top-level, function-local and ``TYPE_CHECKING`` ones), so a lazy import cannot
hide an upward one. Nothing but the console-script entry point (pyproject's
``[project.scripts]``) imports ``deltaguard.tools.cli``."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: Source folder -> the import path it maps to (pyproject's ``package-dir``).
ROOTS = {
    "logstore/python": "deltaguard.logstore",
    "spark_conf": "deltaguard.spark_conf",
    "tools": "deltaguard.tools",
    "localstack": "deltaguard.localstack",
}

#: Leaf utilities any tools layer may use (they import only the logstore layer).
LEAF_UTILITIES = ("deltaguard.tools.progress", "deltaguard.tools.output")

#: Package -> the deltaguard packages its modules may import (a prefix each).
ALLOWED = {
    "deltaguard.logstore": ("deltaguard.logstore",),
    "deltaguard.tools.progress": ("deltaguard.logstore",),
    "deltaguard.tools.output": ("deltaguard.logstore",),
    "deltaguard.tools.storage": (
        "deltaguard.logstore",
        "deltaguard.tools.storage",
        "deltaguard.tools.progress",
    ),
    "deltaguard.tools.deltalog": (
        "deltaguard.logstore",
        "deltaguard.tools.storage",
        "deltaguard.tools.deltalog",
        *LEAF_UTILITIES,
    ),
    # The engines: the local one and the orchestrator over the seam know no Spark; the Spark
    # engine implements the seam (it imports orphans, never the reverse).
    "deltaguard.tools.orphans": (
        "deltaguard.logstore",
        "deltaguard.tools.storage",
        "deltaguard.tools.deltalog",
        "deltaguard.tools.orphans",
        "deltaguard.tools.exit_codes",
        "deltaguard.tools.state_dir",
        *LEAF_UTILITIES,
    ),
    "deltaguard.tools.spark_engine": (
        "deltaguard.logstore",
        "deltaguard.spark_conf",
        "deltaguard.tools.storage",
        "deltaguard.tools.deltalog",
        "deltaguard.tools.orphans",
        "deltaguard.tools.spark_engine",
        "deltaguard.tools.state_dir",
        *LEAF_UTILITIES,
    ),
}

CLI = "deltaguard.tools.cli"
#: The entry points: the console script's module, and the spark-submit script that runs a
#: command inside a Spark job. Nothing else imports the CLI.
ENTRY_POINTS = (CLI, "deltaguard.tools.spark_job")


def _module_of(path: Path) -> str:
    for folder, package in ROOTS.items():
        base = REPO / folder
        if path.is_relative_to(base):
            parts = path.relative_to(base).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            return ".".join((package, *parts))
    raise AssertionError(f"{path} is in no package root")


def _imports(path: Path) -> set[str]:
    """Every deltaguard module ``path`` imports (``from a import b`` counts as ``a`` and, where
    ``b`` is a submodule, ``a.b``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in out if name.startswith("deltaguard.")}


def _sources() -> list[tuple[str, str, set[str]]]:
    """(file relative to the repository, its module, what it imports) for every module."""
    out = []
    for folder in ROOTS:
        for path in sorted((REPO / folder).rglob("*.py")):
            if any(part in ("build", "target", ".venv") for part in path.parts):
                continue
            rel = str(path.relative_to(REPO))
            out.append((rel, _module_of(path), _imports(path)))
    return out


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


#: Parent packages an ``from <parent> import <module>`` names: their ``__init__`` holds only a
#: docstring, so importing them is not a dependency on any layer.
PARENTS = {"deltaguard", "deltaguard.tools"}


def _upward(module: str, imported: set[str]) -> list[str]:
    """The imports of ``module`` its layer does not allow, and any import of the CLI."""
    rules = [allowed for layer, allowed in ALLOWED.items() if _within(module, layer)]
    found = []
    for name in sorted(imported - PARENTS):
        if _within(name, CLI) and module not in ENTRY_POINTS:
            found.append(name)
        elif rules and not any(_within(name, prefix) for prefix in rules[0]):
            found.append(name)
    return found


def _violations() -> list[tuple[str, str]]:
    return [
        (rel, name) for rel, module, imported in _sources() for name in _upward(module, imported)
    ]


def test_layers_import_downwards_only() -> None:
    assert _violations() == []


def test_the_rules_see_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: a lazy upward import and an import of the CLI are both caught."""
    probe = tmp_path / "m.py"
    probe.write_text(
        "def f():\n"
        "    from deltaguard.tools.deltalog.errors import CorruptLogError\n"
        "from deltaguard.tools import cli\n"
        "from deltaguard.tools.storage.errors import StorageError\n"
    )
    imported = _imports(probe)
    assert _upward("deltaguard.tools.storage.s3", imported) == [
        "deltaguard.tools.cli",
        "deltaguard.tools.deltalog.errors",
        "deltaguard.tools.deltalog.errors.CorruptLogError",
    ]
    assert _upward("deltaguard.logstore.probe", {"deltaguard.logstore.errors"}) == []
    assert _upward("deltaguard.logstore.probe", {"deltaguard.spark_conf.presets"}) == [
        "deltaguard.spark_conf.presets"
    ]
    assert _upward("deltaguard.tools.orphans.run", imported) == ["deltaguard.tools.cli"]


def test_each_rule_covers_modules() -> None:
    """Every layer named in :data:`ALLOWED` has modules (a renamed package would silently
    leave its rule checking nothing)."""
    modules = {module for _rel, module, _imported in _sources()}
    for layer in ALLOWED:
        assert any(_within(m, layer) for m in modules), layer


#: Defined in :mod:`deltaguard.tools.storage.errors`; imported from there only, never through
#: :mod:`deltaguard.tools.deltalog.errors` (which imports the base it subclasses).
STORAGE_ERRORS = {"DeltaLogError", "StorageError", "TableNotFoundError", "FileMissingError"}


def test_storage_errors_are_imported_from_their_module() -> None:
    wrong = []
    for folder in (*ROOTS, "tests", "bench"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if any(part in ("build", "target", ".venv") for part in path.parts):
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom) and node.module in (
                    "deltaguard.tools.deltalog",
                    "deltaguard.tools.deltalog.errors",
                    "deltaguard.tools.storage",
                ):
                    names = {alias.name for alias in node.names} & STORAGE_ERRORS
                    wrong += [(str(path.relative_to(REPO)), name) for name in sorted(names)]
    wrong = [w for w in wrong if w[0] != "tools/deltalog/errors.py" or w[1] != "DeltaLogError"]
    assert wrong == []
