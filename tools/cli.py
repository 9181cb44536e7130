"""The ``deltaguard`` command.

Every failure ends with one line, ``deltaguard <command>: <what>``, and a documented exit code,
never a traceback (:mod:`deltaguard.tools.cli_errors`); shared option types and options (the
region rule, ``--profile``, ``--endpoint-url``, durations): :mod:`deltaguard.tools.cli_options`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeVar

import click

from deltaguard.tools.checkpoint.options import HELP as CHECKPOINT_HELP
from deltaguard.tools.checkpoint.options import checkpoint_options, checkpoint_request
from deltaguard.tools.cli_errors import CliGroup, debug_option
from deltaguard.tools.cli_options import (
    REGION_HELP,
    Duration,
    TableLocation,
    bounded,
    combine,
    dynamodb_check,
    dynamodb_client_for,
    dynamodb_options,
    dynamodb_table_path_option,
    endpoint_option,
    engine_option,
    profile_option,
    s3_options,
    spark_master_option,
)
from deltaguard.tools.commands import audit, conf, history, migrate, probe
from deltaguard.tools.output import format_option
from deltaguard.tools.progress import progress_option
from deltaguard.tools.repair.options import HELP as REPAIR_HELP
from deltaguard.tools.repair.options import repair_options, repair_request

F = TypeVar("F", bound=Callable[..., Any])


@click.group("deltaguard", cls=CliGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("deltaguard"), prog_name="deltaguard")
@debug_option
def main(debug: bool) -> None:
    """Safe concurrent Delta Lake commits on S3."""


@main.command("jar", help=conf.JAR_HELP)
@conf.line_options
def jar_command(spark_version: str | None, hadoop_version: str | None) -> None:
    sys.exit(conf.run_jar(conf.line(spark_version, hadoop_version)))


@main.command("packages", help=conf.PACKAGES_HELP)
@conf.line_options
def packages_command(spark_version: str | None, hadoop_version: str | None) -> None:
    sys.exit(conf.run_packages(conf.line(spark_version, hadoop_version)))


@main.group("conf", help=conf.GROUP_HELP)
def conf_group() -> None:
    pass


@conf_group.command("render", help=conf.RENDER_HELP)
@click.argument("preset", type=conf.PRESET_CHOICE)
@conf.render_options
def conf_render(preset: str, fmt: str, **options: Any) -> None:
    sys.exit(conf.run_render(conf.render_request(preset, fmt, **options)))


@conf_group.command("check", help=conf.CHECK_HELP)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@conf.check_options
def conf_check(files: tuple[Path, ...], as_json: bool) -> None:
    sys.exit(conf.run_check(files, as_json))


@main.command("probe", help=probe.HELP)
@click.argument("target", type=TableLocation())
@probe.options
def probe_command(target: str, **o: Any) -> None:
    sys.exit(probe.run(probe.request(target, **o)))


@main.group("dynamodb")
def dynamodb_group() -> None:
    """The DynamoDB LogStore's table."""


@dynamodb_group.command("create-table")
@click.argument("name")
@click.option("--region", default=None, help=f"DynamoDB {REGION_HELP}")
@endpoint_option("--endpoint", "--endpoint-url", help="DynamoDB endpoint URL (default: AWS)")
@profile_option
def dynamodb_create_table(name: str, region: str | None, endpoint: str | None) -> None:
    """Create table NAME for the DynamoDB LogStore (PAY_PER_REQUEST, TTL on expireTime).

    Idempotent; an existing table with another key schema is an error (exit 1); the table
    could not be read or created (credentials, endpoint, access): exit 2."""
    from deltaguard.logstore.dynamodb_table import (
        CommitTableAccessError,
        CommitTableError,
        create_table,
    )

    try:
        result = create_table(dynamodb_client_for(endpoint, region), name)
    except CommitTableAccessError as exc:
        _fail("dynamodb create-table", exc)
    except CommitTableError as exc:
        raise click.ClickException(str(exc)) from None
    state = "created" if result.created else "already exists with the right schema"
    ttl = "; TTL enabled on expireTime" if result.ttl_enabled_now else ""
    click.echo(f"table {name}: {state} ({result.billing_mode}){ttl}")


def _manifest_dir(path: Path | None) -> Path | None:
    """``--manifest``: a path that can hold the runs' manifest directories, else a usage error
    (exit 2) before anything is scanned."""
    if path is None:
        return None
    from deltaguard.tools.orphans.manifest import ManifestPathError, check_manifests_dir

    try:
        check_manifests_dir(path)
    except ManifestPathError as exc:
        raise click.BadParameter(str(exc)) from exc
    return path


def cleanup_options(retention: str, yes: str, manifest: str) -> Callable[[F], F]:
    """The options ``orphans`` and ``log-cleanup`` share, with each command's help for
    ``--retention``, ``--yes`` and ``--manifest``: the retention and its floor, the report's
    formats and the manifest directory."""
    return combine(
        click.option("--retention", "retention_hours", type=Duration(), help=retention),
        click.option("--yes", is_flag=True, help=yes),
        click.option("--unsafe-retention", is_flag=True, help="allow a retention under 24 hours"),
        click.option(
            "--json",
            "as_json",
            is_flag=True,
            help="print the report as JSON (docs/reference/json-schemas.md)",
        ),
        format_option,
        progress_option,
        click.option(
            "--manifest",
            "manifest_path",
            type=click.Path(file_okay=False, path_type=Path),
            callback=lambda _ctx, _param, value: _manifest_dir(value),
            help=manifest,
        ),
    )


@main.command("orphans")
@click.argument("table", type=TableLocation())
@s3_options
@click.option(
    "--delete", is_flag=True, help="delete orphan and log-temp files (dry run without --yes)"
)
@click.option("--include-tombstones", is_flag=True, help="also delete expired-tombstone files")
@cleanup_options(
    retention="how long a file must be untouched before cleanup: 7d, 36h, 90m, or hours "
    "(default: the table's delta.deletedFileRetentionDuration, 7 days if unset)",
    yes="with --delete: really delete",
    manifest="the directory of --delete --yes manifests: each run adds a new one (manifest.json "
    "and Parquet records, both engines) and continues the table's latest unfinished run there, "
    "so the same --manifest works on every run (docs/guides/cleanup.md; a .json path is "
    "refused; default: the state directory's orphans/, $DELTAGUARD_STATE_DIR or "
    "$XDG_STATE_HOME/deltaguard)",
)
@click.option(
    "--workers",
    type=bounded(1, 1024),
    default=None,
    help="directories listed at once  [default: 8 on S3, 2 on local disk]",
)
@engine_option(
    "local: one process; spark: a Spark job (listing and classification in executors, "
    "docs/guides/cleanup.md)"
)
@click.option("--report-table", help="--engine spark: where the candidates' parquet table goes")
@click.option(
    "--list-range-files",
    type=bounded(0, 1_000_000_000),
    default=None,
    help="on S3: a directory the log says holds at least twice this many files is listed in "
    "key ranges of about this many, by several threads (or Spark tasks) at once; 0: never  "
    "[default: 20000]",
)
@click.option(
    "--inventory",
    metavar="LOCATION",
    help="read the data files from an inventory instead of listing them: an S3 Inventory "
    "manifest.json, or a Parquet or Delta table with USING INVENTORY columns "
    "(docs/guides/cleanup.md, Inventory mode)",
)
@click.option(
    "--inventory-date",
    metavar="ISO",
    help="with a Parquet or Delta --inventory: when it was taken (default: its newest "
    "modificationTime); files modified since are never candidates",
)
@spark_master_option
@dynamodb_options
@dynamodb_table_path_option
def orphans_command(
    table: str,
    endpoint: str | None,
    region: str | None,
    path_style: bool,
    dynamodb_table: str | None,
    dynamodb_endpoint: str | None,
    dynamodb_region: str | None,
    table_paths: tuple[str, ...],
    retention_hours: float | None,
    delete: bool,
    yes: bool,
    include_tombstones: bool,
    unsafe_retention: bool,
    as_json: bool,
    fmt: str,
    manifest_path: Path | None,
    workers: int | None,
    engine: str,
    report_table: str | None,
    list_range_files: int | None,
    inventory: str | None,
    inventory_date: str | None,
    spark_master: str | None,
) -> None:
    """Find files failed jobs left in TABLE (a local path, s3:// or s3a://), and remove them.

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
    from dataclasses import replace

    from deltaguard.tools.orphans.engine import OrphansRequest
    from deltaguard.tools.orphans.run import run_orphans

    request = OrphansRequest(
        table=table,
        endpoint=endpoint,
        region=region,
        path_style=path_style,
        retention_hours=retention_hours,
        delete=delete,
        yes=yes,
        include_tombstones=include_tombstones,
        unsafe_retention=unsafe_retention,
        as_json=as_json,
        tsv=fmt == "tsv",
        manifest_path=manifest_path,
        workers=workers,
        dynamodb=dynamodb_check(
            table,
            table_paths,
            dynamodb_table,
            dynamodb_endpoint,
            dynamodb_region,
            endpoint,
            region,
        ),
        inventory=inventory,
        inventory_date=inventory_date,
    )
    if list_range_files is not None:
        request = replace(request, range_files=list_range_files)
    if engine == "spark":
        from deltaguard.tools.spark_engine.orphans_engine import (
            SparkEngineOptions,
            SparkOrphansEngine,
        )

        options = SparkEngineOptions(report_table, spark_master)
        sys.exit(run_orphans(request, SparkOrphansEngine(options)))
    from deltaguard.tools.orphans.local_engine import LocalEngine

    sys.exit(run_orphans(request, LocalEngine()))


@main.command("log-cleanup")
@click.argument("table", type=TableLocation())
@s3_options
@cleanup_options(
    retention="how old a log file must be: 30d, 36h, or hours (default: the table's "
    "delta.logRetentionDuration, 30 days if unset); the cut-off is truncated to the UTC day",
    yes="really delete (default: a dry run)",
    manifest="the directory of --yes manifests: each run adds a new one and continues the "
    "table's latest unfinished log-cleanup run there (docs/guides/log-cleanup.md; default: the "
    "state directory's log-cleanup/)",
)
@dynamodb_options
@dynamodb_table_path_option
def log_cleanup_command(
    table: str,
    endpoint: str | None,
    region: str | None,
    path_style: bool,
    dynamodb_table: str | None,
    dynamodb_endpoint: str | None,
    dynamodb_region: str | None,
    table_paths: tuple[str, ...],
    retention_hours: float | None,
    yes: bool,
    unsafe_retention: bool,
    as_json: bool,
    fmt: str,
    manifest_path: Path | None,
) -> None:
    """Remove the _delta_log files of TABLE (a local path, s3:// or s3a://) that no retained
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
    from deltaguard.tools.orphans.log_cleanup_run import LogCleanupRequest, run_log_cleanup
    from deltaguard.tools.storage import S3Options

    request = LogCleanupRequest(
        table=table,
        s3=S3Options(endpoint, region, path_style),
        retention_ms=None if retention_hours is None else round(retention_hours * 3_600_000),
        unsafe_retention=unsafe_retention,
        yes=yes,
        as_json=as_json,
        tsv=fmt == "tsv",
        manifest_path=manifest_path,
        dynamodb=dynamodb_check(
            table, table_paths, dynamodb_table, dynamodb_endpoint, dynamodb_region, endpoint, region
        ),
    )
    sys.exit(run_log_cleanup(request))


def _wide_console() -> Any:
    """The console for a text report: :func:`deltaguard.tools.output.stdout_console`."""
    from deltaguard.tools.output import stdout_console

    return stdout_console()


def _fail(command: str, exc: Exception) -> None:
    click.echo(f"deltaguard {command}: {exc}", err=True)
    sys.exit(2)


@main.command("audit", help=audit.HELP)
@click.argument("table", type=TableLocation())
@audit.options
def audit_command(table: str, **o: Any) -> None:
    sys.exit(audit.run(audit.request(table, **o)))


@main.command("repair", help=REPAIR_HELP)
@click.argument("table", type=TableLocation())
@repair_options
@s3_options
@dynamodb_options
@dynamodb_table_path_option
def repair_command(
    table: str,
    table_paths: tuple[str, ...],
    dynamodb_table: str | None,
    dynamodb_endpoint: str | None,
    dynamodb_region: str | None,
    **o: Any,
) -> None:
    from deltaguard.tools.repair.run import run_repair

    ddb = (table, table_paths, dynamodb_table, dynamodb_endpoint, dynamodb_region)
    dynamodb = dynamodb_check(*ddb, o["endpoint"], o["region"])
    sys.exit(run_repair(repair_request(table, dynamodb, **o)))


@main.command("checkpoint", help=CHECKPOINT_HELP)
@click.argument("table", type=TableLocation())
@checkpoint_options
@s3_options
def checkpoint_command(table: str, **o: Any) -> None:
    from deltaguard.tools.checkpoint.run import run_checkpoint

    sys.exit(run_checkpoint(checkpoint_request(table, **o)))


@main.group("migrate", help=migrate.GROUP_HELP)
def migrate_group() -> None:
    pass


@migrate_group.command("status", help=migrate.STATUS_HELP)
@click.argument("table", type=TableLocation())
@migrate.status_options
def migrate_status_command(table: str, **o: Any) -> None:
    sys.exit(migrate.run_status(migrate.status_request(table, **o)))


@main.command("history", help=history.HELP)
@click.argument("table", type=TableLocation())
@history.options
def history_command(table: str, **o: Any) -> None:
    sys.exit(history.run(history.request(table, **o)))
