"""The options of ``deltaguard repair`` that are its own (the S3 and DynamoDB ones are the
shared decorators of :mod:`deltaguard.tools.cli_options`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from deltaguard.tools.cli_options import check_option
from deltaguard.tools.deltalog.check_depth import CheckMode
from deltaguard.tools.output import TSV, format_option
from deltaguard.tools.repair.modes import CommitProtocol

F = TypeVar("F", bound=Callable[..., Any])

HELP = """Fix what the audit finds in TABLE (a local path, s3:// or s3a://): remove the live
entries whose data or deletion vector file is missing or of another size than the log says
or has an unreadable Parquet footer or deletion vector (--check footers, the default) in one commit, and put back DynamoDB temp commits their DynamoDB entry proves.
Rebuild broken checkpoints (unreadable, truncated, missing a part, disagreeing with the
commits) from the commits and point _last_checkpoint at the newest good one.
Dry run unless --yes; commits through the table's own protocol (--commit-protocol), safe next
to live writers (docs/guides/repair.md).

With --restore-lost: re-commit each lost blind append (an N.json a concurrent writer
overwrote, kept by bucket versioning) as a new version; anything else is reported.

Exit code 0: nothing to repair, or all repaired; 1: something to repair (dry run), a gap no
repair can fill, older versions no checkpoint or commit can rebuild (named; nothing written), a temp commit that may be stranded (give --dynamodb-table to check), or a
lost commit that is not restorable; 2: the table could not be read (its latest version among those no checkpoint or commit can rebuild: nothing written) or was refused, a setting
was refused, lost commits could not be looked for (no bucket versioning), or a
commit's outcome is unknown (nothing committed unless the message says so)."""


def repair_options(f: F) -> F:
    """--check, --commit-protocol, --yes, --json and --format (text, json, tsv: the shared
    :func:`~deltaguard.tools.output.format_option`)."""
    for option in reversed(
        (
            check_option(),
            click.option(
                "--commit-protocol",
                type=click.Choice([p.value for p in CommitProtocol]),
                help="S3: how the table's writers commit (default conditional; dynamodb and "
                "transition need --dynamodb-table)",
            ),
            click.option(
                "--restore-lost",
                is_flag=True,
                help="instead: re-commit the lost blind appends bucket versioning kept "
                "(docs/guides/repair.md#lost-commits)",
            ),
            click.option("--yes", is_flag=True, help="really commit (default: a dry run)"),
            click.option(
                "--json", "as_json", is_flag=True, help="print the report as JSON (= --format json)"
            ),
        )
    ):
        f = option(f)
    return format_option(f)


def repair_request(table: str, dynamodb: Any, **options: Any) -> Any:
    """The :class:`~deltaguard.tools.repair.run.RepairRequest` of the command line: TABLE, the
    DynamoDB check the shared options built, and the remaining options by name (``endpoint``,
    ``region``, ``path_style``, ``check_mode``, ``commit_protocol``, ``restore_lost``, ``yes``,
    ``as_json``, ``fmt``)."""
    from deltaguard.tools.repair.run import RepairRequest
    from deltaguard.tools.storage import S3Options

    protocol = options["commit_protocol"]
    return RepairRequest(
        table,
        S3Options(options["endpoint"], options["region"], options["path_style"]),
        dynamodb,
        CommitProtocol(protocol) if protocol else None,
        CheckMode(options["check_mode"] or CheckMode.FOOTERS),
        options["yes"],
        options["as_json"],
        tsv=options["fmt"] == TSV,
        restore_lost=options["restore_lost"],
    )
