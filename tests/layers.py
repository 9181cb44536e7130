"""The package's layers: the one list, lowest first.

``tests/test_layering.py`` checks every module of the ``deltaguard`` namespace against it and
``docs/generate.py`` renders it into ``docs/architecture.md``; nothing else restates it.

Each module (but the namespace packages ``deltaguard`` and ``deltaguard.tools``, whose
``__init__`` holds a docstring only) belongs to the first layer, from the top of the list down, one of whose patterns
matches it (so ``tools.orphans.run`` is a command, the rest of ``tools.orphans`` a library). A
pattern names a module and everything below it; ``*`` matches one name. A module imports only
modules of its own layer and of the layers its :attr:`Layer.uses` names (by default every
layer below it). Names are written without the ``deltaguard.`` prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

PREFIX = "deltaguard."


@dataclass(frozen=True)
class Layer:
    name: str
    #: Module patterns, without :data:`PREFIX`.
    modules: tuple[str, ...]
    #: What the layer is for (one sentence, shown in docs/architecture.md).
    summary: str
    #: The lower layers it may import; ``None``: every layer below it.
    uses: tuple[str, ...] | None = None


LAYERS: tuple[Layer, ...] = (
    Layer("logstore", ("logstore",), "the commit protocols on boto3, S3 plumbing, the probe"),
    Layer("spark_conf", ("spark_conf",), "Spark settings: presets, conf check, jars, lines"),
    Layer(
        "fanout",
        ("tools.fanout",),
        "the fan-out write library users' Spark jobs import (needs the `spark` extra)",
        uses=("logstore", "spark_conf"),
    ),
    Layer(
        "utilities",
        ("tools.progress", "tools.output", "tools.state_dir", "tools.lazy_exports"),
        "progress on stderr, output formats, the state directory, lazy package exports",
    ),
    Layer("storage", ("tools.storage",), "local and S3 table access (`TableStore`)"),
    Layer(
        "deltalog",
        ("tools.deltalog",),
        "the Delta log reader (listing, replay, audit, history) and the commit API",
    ),
    Layer(
        "libraries",
        ("tools.orphans", "tools.repair", "tools.checkpoint"),
        "what the commands do, with no Spark and no exit code",
        uses=("logstore", "utilities", "storage", "deltalog"),
    ),
    Layer(
        "spark_engine",
        ("tools.spark_engine",),
        "the Spark engine of orphans and of audit's file check (implements the orphans seam)",
    ),
    Layer(
        "commands",
        (
            "tools.commands",
            "tools.*.run",
            "tools.orphans.log_cleanup_run",
            "tools.orphans.run_outcome",
            "tools.migrate_status",
            "tools.exit_codes",
            "tools.cli_errors",
            "tools.cli_signals",
            "tools.cli_options",
        ),
        "each command's options, typed request and runner; exit codes",
    ),
    Layer(
        "entry points",
        ("tools.cli", "tools.spark_job"),
        "the `deltaguard` console script and the spark-submit script; nothing else imports them",
    ),
    Layer(
        "test bed",
        ("localstack",),
        "servers, workloads, demo, soak: imports the product, never the reverse",
        uses=(
            "logstore",
            "spark_conf",
            "fanout",
            "utilities",
            "storage",
            "deltalog",
            "libraries",
            "spark_engine",
            "commands",
        ),
    ),
)


def _matches(module: str, pattern: str) -> bool:
    names, wanted = module.removeprefix(PREFIX).split("."), pattern.split(".")
    return len(names) >= len(wanted) and all(map(fnmatchcase, names, wanted))


def layer_of(module: str) -> Layer | None:
    """The layer ``module`` (a dotted name, with or without :data:`PREFIX`) belongs to."""
    for layer in reversed(LAYERS):
        if any(_matches(module, pattern) for pattern in layer.modules):
            return layer
    return None


def may_import(importer: Layer, imported: Layer) -> bool:
    """Whether a module of ``importer`` may import one of ``imported``."""
    if importer == imported:
        return True
    below = LAYERS[: LAYERS.index(importer)]
    allowed = below if importer.uses is None else [x for x in below if x.name in importer.uses]
    return imported in allowed
