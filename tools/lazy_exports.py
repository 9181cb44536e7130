"""A package's public names, imported on first use (PEP 562).

Importing any submodule runs its package's ``__init__`` first. Were that ``__init__`` to import
the package's public names, importing one small submodule (the CLI's option modules import a
few enums) would load the whole package, and through it botocore and pyarrow: most of a
``deltaguard`` start-up. So a package lists its public names twice, in one place each way:
under ``TYPE_CHECKING`` (what type checkers and readers follow) and in the map given to
:func:`lazy_exports` (what the interpreter imports); ``tests/test_lazy_exports.py`` checks the
two agree::

    if TYPE_CHECKING:
        from deltaguard.tools.storage.open import open_table
    else:  # hidden from type checkers, so a misspelt name stays an error there
        __getattr__ = lazy_exports(__name__, {"open_table": "open"})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """The module ``__getattr__`` of ``package``: a name of ``names`` (public name -> the
    submodule defining it, relative to ``package``) is imported from its submodule on first use
    and kept in the package; any other name raises ``AttributeError`` (so ``from package import
    submodule`` still imports the submodule)."""

    def __getattr__(name: str) -> object:
        submodule = names.get(name)
        if submodule is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{submodule}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
