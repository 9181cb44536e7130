"""``deltaguard log-cleanup``: options -> :class:`LogCleanupRequest` -> :func:`run` -> exit code
(the shape of every command: :mod:`deltaguard.tools.commands`). The runner is
:func:`deltaguard.tools.orphans.log_cleanup_run.run_log_cleanup`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deltaguard.tools.cli_options import (
    cleanup_options,
    combine,
    dynamodb_check,
    dynamodb_options,
    dynamodb_table_path_option,
    s3_options,
)
from deltaguard.tools.storage import S3Options

if TYPE_CHECKING:  # the runner and its imports load when the command runs
    from deltaguard.tools.orphans.log_cleanup_run import LogCleanupRequest

HELP = """Remove the _delta_log files of TABLE (a local path, s3:// or s3a://) that no retained
version needs: Delta's own log cleanup (commits, checksums, checkpoints and compactions
below the newest reliable checkpoint older than delta.logRetentionDuration; sidecars no
kept checkpoint names; backfilled _commits/ files), plus what no Delta writer removes:
DynamoDB temp commits the log no longer needs (--dynamodb-table says which) and parts
of incomplete checkpoints older than the retention. Dry run unless --yes; every version
from the truncation checkpoint on stays readable (docs/guides/log-cleanup.md).

Exit code 0: nothing to clean, or everything planned was deleted; 1: files to clean
(dry run), or a stranded commit; 2: the table could not be read (or a setting was
refused); 3: some deletions failed or their outcome is unknown; 4: stopped by Ctrl-C or
SIGTERM while deleting (the manifest says what was deleted; run it again to finish)."""

options = combine(
    s3_options,
    cleanup_options(
        retention="how old a log file must be: 30d, 36h, or hours (default: the table's "
        "delta.logRetentionDuration, 30 days if unset); the cut-off is truncated to the UTC day",
        yes="really delete (default: a dry run)",
        manifest="the directory of --yes manifests: each run adds a new one and continues the "
        "table's latest unfinished log-cleanup run there (docs/guides/log-cleanup.md; default: "
        "the state directory's log-cleanup/)",
    ),
    dynamodb_options,
    dynamodb_table_path_option,
)


def request(table: str, **o: Any) -> LogCleanupRequest:
    """The :class:`LogCleanupRequest` of the command line."""
    from deltaguard.tools.orphans.log_cleanup_run import LogCleanupRequest

    hours = o["retention_hours"]
    ddb = (o["dynamodb_table"], o["dynamodb_endpoint"], o["dynamodb_region"])
    return LogCleanupRequest(
        table=table,
        s3=S3Options(o["endpoint"], o["region"], o["path_style"]),
        retention_ms=None if hours is None else round(hours * 3_600_000),
        unsafe_retention=o["unsafe_retention"],
        yes=o["yes"],
        as_json=o["as_json"],
        tsv=o["fmt"] == "tsv",
        manifest_path=o["manifest_path"],
        dynamodb=dynamodb_check(table, o["table_paths"], *ddb, o["endpoint"], o["region"]),
    )


def run(req: LogCleanupRequest) -> int:
    """Scans, reports, and with ``--yes`` deletes; returns the exit code
    (:func:`~deltaguard.tools.orphans.log_cleanup_run.run_log_cleanup`)."""
    from deltaguard.tools.orphans.log_cleanup_run import run_log_cleanup

    return run_log_cleanup(req)
