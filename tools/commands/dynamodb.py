"""``deltaguard dynamodb create-table`` (the shape of every command:
:mod:`deltaguard.tools.commands`). The table's schema and its checks are
:mod:`deltaguard.logstore.dynamodb_table`'s."""

from __future__ import annotations

from dataclasses import dataclass

import click

from deltaguard.tools.cli_options import REGION_HELP, combine, endpoint_option, profile_option
from deltaguard.tools.exit_codes import ExitCode

GROUP_HELP = "The DynamoDB LogStore's table."
CREATE_HELP = """Create table NAME for the DynamoDB LogStore (PAY_PER_REQUEST, TTL on expireTime).

Idempotent; an existing table with another key schema is an error (exit 1); the table
could not be read or created (credentials, endpoint, access): exit 2."""

create_options = combine(
    click.option("--region", default=None, help=f"DynamoDB {REGION_HELP}"),
    endpoint_option("--endpoint", "--endpoint-url", help="DynamoDB endpoint URL (default: AWS)"),
    profile_option,
)


@dataclass(frozen=True)
class CreateTableRequest:
    """The command line, as plain values."""

    name: str
    region: str | None = None
    endpoint: str | None = None


def run_create(req: CreateTableRequest) -> int:
    """Creates the table (or finds it right), prints one line, returns the exit code: FOUND
    for a table of another schema, UNREADABLE when it cannot be read or created."""
    from deltaguard.logstore.dynamodb_table import (
        CommitTableAccessError,
        CommitTableError,
        create_table,
    )
    from deltaguard.tools.cli_options import dynamodb_client_for

    try:
        result = create_table(dynamodb_client_for(req.endpoint, req.region), req.name)
    except CommitTableAccessError as exc:
        click.echo(f"deltaguard dynamodb create-table: {exc}", err=True)
        return ExitCode.UNREADABLE
    except CommitTableError as exc:
        click.echo(f"deltaguard dynamodb create-table: {exc}", err=True)
        return ExitCode.FOUND
    state = "created" if result.created else "already exists with the right schema"
    ttl = "; TTL enabled on expireTime" if result.ttl_enabled_now else ""
    click.echo(f"table {req.name}: {state} ({result.billing_mode}){ttl}")
    return ExitCode.CLEAN
