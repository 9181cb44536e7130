"""Every module of the ``deltaguard`` namespace is under a layer of :data:`layers.LAYERS` (the
one list, rendered into docs/architecture.md) and imports only what its layer may. Read from
the source with ``ast`` (every import: top-level, function-local and ``TYPE_CHECKING`` ones), so
a lazy import cannot hide an upward one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from layers import LAYERS, layer_of, may_import

REPO = Path(__file__).resolve().parents[1]

#: Source folder -> the import path it maps to (pyproject's ``package-dir``).
ROOTS = {
    "logstore/python": "deltaguard.logstore",
    "spark_conf": "deltaguard.spark_conf",
    "tools": "deltaguard.tools",
    "localstack": "deltaguard.localstack",
}


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
    """The imports of ``module`` its layer may not make (a module no layer covers: all)."""
    importer = layer_of(module)
    if importer is None and module in PARENTS:
        return sorted(imported)
    found = []
    for name in sorted(imported - PARENTS):
        target = layer_of(name)
        if importer is None or target is None or not may_import(importer, target):
            found.append(name)
    return found


def _violations() -> list[tuple[str, str]]:
    return [
        (rel, name) for rel, module, imported in _sources() for name in _upward(module, imported)
    ]


def test_every_module_is_under_a_layer() -> None:
    """Every module has a layer, but the parent packages, which import nothing."""
    uncovered = [
        (rel, imported)
        for rel, module, imported in _sources()
        if layer_of(module) is None and (module not in PARENTS or imported)
    ]
    assert uncovered == []


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
    assert _upward("deltaguard.tools.orphans.run", imported) == ["deltaguard.tools.cli"]
    assert _upward("deltaguard.tools.orphans.new_module", {"deltaguard.tools.orphans.run"}) == [
        "deltaguard.tools.orphans.run"
    ], "a library may not import a runner"


@pytest.mark.parametrize(
    ("module", "imported"),
    [
        ("deltaguard.tools.repair.remove_commit", "deltaguard.tools.spark_engine.session"),
        ("deltaguard.spark_conf.presets", "deltaguard.tools.orphans.classify"),
        ("deltaguard.tools.fanout.writer", "deltaguard.localstack.endpoints"),
        ("deltaguard.logstore.probe", "deltaguard.spark_conf.presets"),
        ("deltaguard.tools.orphans.cleanup", "deltaguard.tools.exit_codes"),
        ("deltaguard.localstack.demo", "deltaguard.tools.cli"),
        ("deltaguard.tools.cli", "deltaguard.localstack.demo"),
        ("deltaguard.tools.orphans.classify", "deltaguard.spark_conf.presets"),
        ("deltaguard.tools.newthing", "deltaguard.logstore.errors"),
    ],
)
def test_made_up_imports_fail(module: str, imported: str) -> None:
    """Imports the layers forbid: a library reaching the Spark engine, Spark settings reaching
    a library, the product importing the test bed, a library knowing an exit code or Spark's settings, anything
    importing the CLI, and a module no layer covers."""
    assert _upward(module, {imported}) == [imported]


def test_each_layer_covers_modules() -> None:
    """Every pattern of :data:`LAYERS` names modules (a renamed package would silently leave
    its rule checking nothing)."""
    modules = [module for _rel, module, _imported in _sources()]
    for layer in LAYERS:
        for pattern in layer.modules:
            assert any(layer_of(m) == layer and _covers(m, pattern) for m in modules), pattern


def _covers(module: str, pattern: str) -> bool:
    from layers import _matches

    return _matches(module, pattern)


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
