"""``deltaguard migrate status``: options -> :class:`MigrateStatusRequest` -> :func:`run` -> exit
code (the shape of every command: :mod:`deltaguard.tools.commands`). The classification
itself is :func:`deltaguard.tools.migrate_status.migrate_status`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import click

from deltaguard.tools.cli_options import (
    Duration,
    combine,
    dynamodb_table_path_option,
    dynamodb_table_paths,
    endpoint_option,
    s3_options,
)
from deltaguard.tools.exit_codes import ExitCode
from deltaguard.tools.progress import progress_option
from deltaguard.tools.storage import S3Options

GROUP_HELP = (
    "Moving a live table from the DynamoDB LogStore to conditional writes "
    "(docs/guides/migration.md)."
)

STATUS_HELP = """Name the phase TABLE is in (dynamodb, transition, conditional), the evidence,
and what is safe to do next.

Exit code 0: consistently in a phase; 1: an unsafe mix (a plain DynamoDB commit after a
conditional one); 2: the table, its log or the DynamoDB table could not be read."""

status_options = combine(
    click.option("--dynamodb-table", required=True, help="the DynamoDB LogStore's table"),
    endpoint_option("--dynamodb-endpoint", help="DynamoDB endpoint URL (default: AWS)"),
    click.option("--dynamodb-region", help="DynamoDB region (default: --region's rule)"),
    dynamodb_table_path_option,
    click.option(
        "--window-hours",
        "--window",
        "window_hours",
        type=Duration(positive=True),
        default="6h",
        show_default=True,
        help="commits younger than this are the evidence (capped at the entries' TTL): 6h, "
        "2d, 90m, or hours; make it longer than your longest job",
    ),
    click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="print the status as JSON (deltaguard.migrate-status/1)",
    ),
    progress_option,
    s3_options,
)


@dataclass(frozen=True)
class MigrateStatusRequest:
    """The command line, as plain values."""

    table: str
    dynamodb_table: str
    #: The ``tablePath`` values the DynamoDB writers use.
    table_paths: tuple[str, ...]
    s3: S3Options = field(default_factory=S3Options)
    dynamodb_endpoint: str | None = None
    dynamodb_region: str | None = None
    window_s: float = 6 * 3600
    as_json: bool = False


def status_request(table: str, **o: Any) -> MigrateStatusRequest:
    """The :class:`MigrateStatusRequest` of the command line."""
    return MigrateStatusRequest(
        table,
        o["dynamodb_table"],
        dynamodb_table_paths(table, o["table_paths"]),
        S3Options(o["endpoint"], o["region"], o["path_style"]),
        o["dynamodb_endpoint"],
        o["dynamodb_region"],
        o["window_hours"] * 3600,
        o["as_json"],
    )


def run_status(req: MigrateStatusRequest) -> int:
    """Names the phase, prints the evidence, returns the status's exit code; what cannot be
    read is one line on stderr and :attr:`ExitCode.UNREADABLE`."""
    from botocore.exceptions import BotoCoreError

    from deltaguard.tools.cli_options import dynamodb_client_for
    from deltaguard.tools.migrate_status import MigrateStatusError, migrate_status, render_text
    from deltaguard.tools.storage import open_table
    from deltaguard.tools.storage.errors import DeltaLogError

    where = (req.dynamodb_endpoint or req.s3.endpoint, req.dynamodb_region or req.s3.region)
    try:
        status = migrate_status(
            open_table(req.table, req.s3),
            dynamodb_client_for(*where),
            req.dynamodb_table,
            req.table_paths,
            window_s=req.window_s,
        )
    except (MigrateStatusError, DeltaLogError, OSError, BotoCoreError) as exc:
        click.echo(f"deltaguard migrate status: {exc}", err=True)
        return ExitCode.UNREADABLE
    click.echo(json.dumps(status.to_json(), indent=2) if req.as_json else render_text(status))
    return int(status.exit_code)
