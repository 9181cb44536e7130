"""``deltaguard orphans``: options -> :class:`OrphansRun` -> :func:`run` -> exit code (the shape
of every command: :mod:`deltaguard.tools.commands`). The orchestrator is
:func:`deltaguard.tools.orphans.run.run_orphans`, over the local or the Spark engine."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import click

from deltaguard.tools.cli_options import (
    bounded,
    cleanup_options,
    combine,
    dynamodb_check,
    dynamodb_options,
    dynamodb_table_path_option,
    engine_option,
    s3_options,
    spark_master_option,
)

if TYPE_CHECKING:  # the engines and their imports load when the command runs
    from deltaguard.tools.orphans.engine import OrphansRequest

HELP = """Find files failed jobs left in TABLE (a local path, s3:// or s3a://), and remove them.

Classes: orphan (no retained log entry names it), expired-tombstone (what VACUUM would
delete), recent (younger than the retention: kept), log-temp (leftovers in _delta_log),
pending-commit (a DynamoDB temp commit the log may still need: never deleted),
stranded-commit (damage: a temp commit of a retained version whose N.json is missing).
--dynamodb-table lets the DynamoDB LogStore's table say which temp commits are done.

Exit code 0: nothing to clean, or everything planned was deleted; 1: files to clean found
(dry run), or a stranded commit; 2: the table could not be read (or a setting was
refused); 3: some deletions failed or their outcome is unknown; 4: stopped by Ctrl-C or
SIGTERM during --delete --yes (the manifest says what was deleted; run it again to
finish)."""

options = combine(
    s3_options,
    click.option(
        "--delete", is_flag=True, help="delete orphan and log-temp files (dry run without --yes)"
    ),
    click.option("--include-tombstones", is_flag=True, help="also delete expired-tombstone files"),
    cleanup_options(
        retention="how long a file must be untouched before cleanup: 7d, 36h, 90m, or hours "
        "(default: the table's delta.deletedFileRetentionDuration, 7 days if unset)",
        yes="with --delete: really delete",
        manifest="the directory of --delete --yes manifests: each run adds a new one "
        "(manifest.json and Parquet records, both engines) and continues the table's latest "
        "unfinished run there, so the same --manifest works on every run "
        "(docs/guides/cleanup.md; a .json path is refused; default: the state directory's "
        "orphans/, $DELTAGUARD_STATE_DIR or $XDG_STATE_HOME/deltaguard)",
    ),
    click.option(
        "--workers",
        type=bounded(1, 1024),
        default=None,
        help="directories listed at once  [default: 8 on S3, 2 on local disk]",
    ),
    engine_option(
        "local: one process; spark: a Spark job (listing and classification in executors, "
        "docs/guides/cleanup.md)"
    ),
    click.option("--report-table", help="--engine spark: where the candidates' parquet table goes"),
    click.option(
        "--list-range-files",
        type=bounded(0, 1_000_000_000),
        default=None,
        help="on S3: a directory the log says holds at least twice this many files is listed "
        "in key ranges of about this many, by several threads (or Spark tasks) at once; 0: "
        "never  [default: 20000]",
    ),
    click.option(
        "--inventory",
        metavar="LOCATION",
        help="read the data files from an inventory instead of listing them: an S3 Inventory "
        "manifest.json, or a Parquet or Delta table with USING INVENTORY columns "
        "(docs/guides/cleanup.md, Inventory mode)",
    ),
    click.option(
        "--inventory-date",
        metavar="ISO",
        help="with a Parquet or Delta --inventory: when it was taken (default: its newest "
        "modificationTime); files modified since are never candidates",
    ),
    spark_master_option,
    dynamodb_options,
    dynamodb_table_path_option,
)


@dataclass(frozen=True)
class OrphansRun:
    """The command line, as plain values: the engines' request and which engine runs it."""

    request: OrphansRequest
    #: ``local`` or ``spark``.
    engine: str = "local"
    #: ``--engine spark``: ``--report-table`` and ``--spark-master``.
    report_table: str | None = None
    spark_master: str | None = None


def request(table: str, **o: Any) -> OrphansRun:
    """The :class:`OrphansRun` of the command line."""
    from deltaguard.tools.orphans.engine import OrphansRequest

    ddb = (o["dynamodb_table"], o["dynamodb_endpoint"], o["dynamodb_region"])
    req = OrphansRequest(
        table=table,
        endpoint=o["endpoint"],
        region=o["region"],
        path_style=o["path_style"],
        retention_hours=o["retention_hours"],
        delete=o["delete"],
        yes=o["yes"],
        include_tombstones=o["include_tombstones"],
        unsafe_retention=o["unsafe_retention"],
        as_json=o["as_json"],
        tsv=o["fmt"] == "tsv",
        manifest_path=o["manifest_path"],
        workers=o["workers"],
        dynamodb=dynamodb_check(table, o["table_paths"], *ddb, o["endpoint"], o["region"]),
        inventory=o["inventory"],
        inventory_date=o["inventory_date"],
    )
    if o["list_range_files"] is not None:
        req = replace(req, range_files=o["list_range_files"])
    return OrphansRun(req, o["engine"], o["report_table"], o["spark_master"])


def run(command: OrphansRun) -> int:
    """Runs the orchestrator over the chosen engine; its exit code
    (:func:`deltaguard.tools.orphans.run_outcome.outcome_code`)."""
    from deltaguard.tools.orphans.run import run_orphans

    if command.engine == "spark":
        from deltaguard.tools.spark_engine.orphans_engine import (
            SparkEngineOptions,
            SparkOrphansEngine,
        )

        options = SparkEngineOptions(command.report_table, command.spark_master)
        return run_orphans(command.request, SparkOrphansEngine(options))
    from deltaguard.tools.orphans.run import LocalEngine

    return run_orphans(command.request, LocalEngine())
