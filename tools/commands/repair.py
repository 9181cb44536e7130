"""``deltaguard repair``: options -> :class:`~deltaguard.tools.repair.run.RepairRequest` ->
:func:`run` -> exit code (the shape of every command: :mod:`deltaguard.tools.commands`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from deltaguard.tools.cli_options import (
    check_option,
    combine,
    dynamodb_check,
    dynamodb_options,
    dynamodb_table_path_option,
    s3_options,
)
from deltaguard.tools.deltalog.check_depth import CheckMode
from deltaguard.tools.output import TSV, format_option
from deltaguard.tools.repair.modes import CommitProtocol
from deltaguard.tools.storage import S3Options

if TYPE_CHECKING:  # the runner and its imports load when the command runs
    from deltaguard.tools.repair.run import RepairRequest

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


options = combine(
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
    format_option,
    s3_options,
    dynamodb_options,
    dynamodb_table_path_option,
)


def request(table: str, **o: Any) -> RepairRequest:
    """The :class:`~deltaguard.tools.repair.run.RepairRequest` of the command line."""
    from deltaguard.tools.repair.run import RepairRequest

    protocol = o["commit_protocol"]
    ddb = (o["dynamodb_table"], o["dynamodb_endpoint"], o["dynamodb_region"])
    return RepairRequest(
        table,
        S3Options(o["endpoint"], o["region"], o["path_style"]),
        dynamodb_check(table, o["table_paths"], *ddb, o["endpoint"], o["region"]),
        CommitProtocol(protocol) if protocol else None,
        CheckMode(o["check_mode"] or CheckMode.FOOTERS),
        o["yes"],
        o["as_json"],
        tsv=o["fmt"] == TSV,
        restore_lost=o["restore_lost"],
    )


def run(req: RepairRequest) -> int:
    """Plans, and with ``--yes`` commits; returns the exit code
    (:func:`~deltaguard.tools.repair.run.run_repair`)."""
    from deltaguard.tools.repair.run import run_repair

    return run_repair(req)
