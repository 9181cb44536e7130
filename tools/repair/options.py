"""The options of ``deltaguard repair`` that are its own (the S3 and DynamoDB ones are the
shared decorators of :mod:`deltaguard.tools.cli`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from deltaguard.tools.repair.modes import CheckMode, CommitProtocol

F = TypeVar("F", bound=Callable[..., Any])

HELP = """Fix what the audit finds in TABLE (a local path, s3:// or s3a://): remove the live
entries whose data or deletion vector file is missing or of another size than the log says
(or, with --check footers, has an unreadable Parquet footer) in one commit, and put back DynamoDB temp commits their DynamoDB entry proves.
Dry run unless --yes; commits through the table's own protocol (--commit-protocol), safe next
to live writers (docs/guides/repair.md).

Exit code 0: nothing to repair, or all repaired; 1: something to repair (dry run), a gap no
repair can fill, or a temp commit that may be stranded (give --dynamodb-table to check); 2: the table could not be read or was refused, a setting was refused, or a
commit's outcome is unknown (nothing committed unless the message says so)."""


def repair_options(f: F) -> F:
    """--check, --commit-protocol, --yes, --json."""
    for option in reversed(
        (
            click.option(
                "--check",
                type=click.Choice([m.value for m in CheckMode]),
                default=CheckMode.EXISTS.value,
                show_default=True,
                help="exists: files that are missing or of another size than the log's (the "
                "listing only, as audit); footers: also an unreadable Parquet footer or deletion "
                "vector (reads each)",
            ),
            click.option(
                "--commit-protocol",
                type=click.Choice([p.value for p in CommitProtocol]),
                help="S3: how the table's writers commit (default conditional; dynamodb and "
                "transition need --dynamodb-table)",
            ),
            click.option("--yes", is_flag=True, help="really commit (default: a dry run)"),
            click.option("--json", "as_json", is_flag=True, help="print the report as JSON"),
        )
    ):
        f = option(f)
    return f


def repair_request(table: str, dynamodb: Any, **options: Any) -> Any:
    """The :class:`~deltaguard.tools.repair.run.RepairRequest` of the command line: TABLE, the
    DynamoDB check the shared options built, and the remaining options by name (``endpoint``,
    ``region``, ``path_style``, ``check``, ``commit_protocol``, ``yes``, ``as_json``)."""
    from deltaguard.tools.repair.run import RepairRequest
    from deltaguard.tools.storage import S3Options

    protocol = options["commit_protocol"]
    return RepairRequest(
        table,
        S3Options(options["endpoint"], options["region"], options["path_style"]),
        dynamodb,
        CommitProtocol(protocol) if protocol else None,
        CheckMode(options["check"]),
        options["yes"],
        options["as_json"],
    )
