"""The options of ``deltaguard checkpoint`` that are its own (the S3 ones are the shared
decorators of :mod:`deltaguard.tools.cli_options`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from deltaguard.tools.cli_options import MAX_VERSION, bounded
from deltaguard.tools.output import TSV, format_option

F = TypeVar("F", bound=Callable[..., Any])

HELP = """Write a checkpoint of TABLE (a local path, s3:// or s3a://) at its latest version, or
--version N, without Spark: a classic single-file parquet checkpoint
(N.checkpoint.parquet, created only if absent: never over an existing file), then
_delta_log/_last_checkpoint pointing at it (only ever forward). Tables that need V2
checkpoints (writer feature v2Checkpoint) are refused (docs/guides/checkpoint.md).

Exit code 0: written, or the version already has a checkpoint; 2: the table or version could
not be read, or the table was refused (nothing written unless the line says so)."""


def checkpoint_options(f: F) -> F:
    """--version, --json and --format (text, json, tsv: the shared
    :func:`~deltaguard.tools.output.format_option`)."""
    for option in reversed(
        (
            click.option(
                "--version",
                "version",
                type=bounded(0, MAX_VERSION),
                help="the version to checkpoint (default: the latest); it must still be "
                "retained (its commits, or a checkpoint, in _delta_log)",
            ),
            click.option(
                "--json", "as_json", is_flag=True, help="print the report as JSON (= --format json)"
            ),
        )
    ):
        f = option(f)
    return format_option(f)


def checkpoint_request(table: str, **options: Any) -> Any:
    """The :class:`~deltaguard.tools.checkpoint.run.CheckpointRequest` of the command line:
    TABLE and the options by name (``version``, ``endpoint``, ``region``, ``path_style``,
    ``as_json``, ``fmt``)."""
    from deltaguard.tools.checkpoint.run import CheckpointRequest
    from deltaguard.tools.storage import S3Options

    return CheckpointRequest(
        table,
        options["version"],
        S3Options(options["endpoint"], options["region"], options["path_style"]),
        options["as_json"],
        tsv=options["fmt"] == TSV,
    )
