"""``deltaguard checkpoint``: options -> :class:`~deltaguard.tools.checkpoint.run.CheckpointRequest`
-> :func:`run` -> exit code (the shape of every command: :mod:`deltaguard.tools.commands`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from deltaguard.tools.cli_options import MAX_VERSION, bounded, combine, s3_options
from deltaguard.tools.deltalog.names import TopLevelFormat
from deltaguard.tools.output import TSV, format_option
from deltaguard.tools.storage import S3Options

if TYPE_CHECKING:  # the runner and its imports load when the command runs
    from deltaguard.tools.checkpoint.run import CheckpointRequest

HELP = """Write a checkpoint of TABLE (a local path, s3:// or s3a://) at its latest version, or
--version N, without Spark, in the form the table takes: a classic single-file parquet
checkpoint (N.checkpoint.parquet), or for a table with writer feature v2Checkpoint and
delta.checkpointPolicy=v2 a V2 checkpoint (sidecars in _delta_log/_sidecars/, then
N.checkpoint.<uuid>.json or .parquet naming them); each file created only if absent (never
over an existing file); then _delta_log/_last_checkpoint pointing at it (only ever forward).
See docs/guides/checkpoint.md.

Exit code 0: written, or the version already has a checkpoint; 2: the table or version could
not be read, or the table was refused (nothing written unless the line says so)."""


options = combine(
    click.option(
        "--version",
        "version",
        type=bounded(0, MAX_VERSION),
        help="the version to checkpoint (default: the latest); it must still be "
        "retained (its commits, or a checkpoint, in _delta_log)",
    ),
    click.option(
        "--v2-format",
        "v2_format",
        type=click.Choice([f.value for f in TopLevelFormat]),
        default=TopLevelFormat.JSON.value,
        show_default=True,
        help="the top-level file of a V2 checkpoint (JSON is Delta Spark's default); "
        "ignored for a table that takes classic checkpoints",
    ),
    click.option(
        "--json", "as_json", is_flag=True, help="print the report as JSON (= --format json)"
    ),
    format_option,
    s3_options,
)


def request(table: str, **o: Any) -> CheckpointRequest:
    """The :class:`~deltaguard.tools.checkpoint.run.CheckpointRequest` of the command line."""
    from deltaguard.tools.checkpoint.run import CheckpointRequest

    return CheckpointRequest(
        table,
        o["version"],
        S3Options(o["endpoint"], o["region"], o["path_style"]),
        o["as_json"],
        tsv=o["fmt"] == TSV,
        v2_format=TopLevelFormat(o["v2_format"]),
    )


def run(req: CheckpointRequest) -> int:
    """Replays, writes the checkpoint and the hint, returns the exit code
    (:func:`~deltaguard.tools.checkpoint.run.run_checkpoint`)."""
    from deltaguard.tools.checkpoint.run import run_checkpoint

    return run_checkpoint(req)
