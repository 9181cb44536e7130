"""``deltaguard audit``: options -> :class:`AuditRequest` -> :func:`run` -> exit code (the shape
of every command: :mod:`deltaguard.tools.commands`). The audit itself is
:func:`deltaguard.tools.deltalog.audit.audit_table`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

from deltaguard.tools.cli_options import (
    MAX_VERSION,
    bounded,
    check_option,
    combine,
    dynamodb_check,
    dynamodb_options,
    dynamodb_table_path_option,
    engine_option,
    parse_timestamp,
    s3_options,
    spark_master_option,
)
from deltaguard.tools.deltalog.check_depth import CheckMode
from deltaguard.tools.exit_codes import ExitCode
from deltaguard.tools.output import JSON, TSV, format_option, stdout_console
from deltaguard.tools.progress import progress_option
from deltaguard.tools.storage import S3Options

if TYPE_CHECKING:
    from deltaguard.tools.deltalog.audit import AuditReport
    from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck

F = TypeVar("F", bound=Callable[..., Any])

HELP = """Read every file of TABLE's Delta log, replay a snapshot and report what is wrong.

TABLE is a local path or an s3:// / s3a:// URI. Exit code 0: healthy; 1: findings
(errors or warnings); 2: the table, or the snapshot asked for, could not be read (the
findings say why)."""

options = combine(
    click.option(
        "--version",
        "version",
        type=bounded(0, MAX_VERSION),
        help="audit this version (default: the latest)",
    ),
    click.option(
        "--timestamp", help="audit the version current at this time (ISO 8601 or epoch ms)"
    ),
    click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="print the report as JSON (schema deltaguard.audit/1)",
    ),
    format_option,
    progress_option,
    click.option(
        "--check-files/--no-check-files",
        default=True,
        show_default=True,
        help="list the table to find live files and deletion vectors that are missing or of "
        "another size than the log's",
    ),
    check_option("exists with --engine spark, whose executors list the table only"),
    dynamodb_table_path_option,
    engine_option(
        "the file check's engine: local (one process lists the table) or spark (executors "
        "list it; the latest version only; docs/guides/audit.md)"
    ),
    spark_master_option,
    s3_options,
    dynamodb_options,
)


@dataclass(frozen=True)
class AuditRequest:
    """The command line, as plain values."""

    table: str
    version: int | None = None
    timestamp_ms: int | None = None
    s3: S3Options = field(default_factory=S3Options)
    dynamodb: DynamoDBCheck | None = None
    check_files: bool = True
    check_mode: CheckMode = CheckMode.FOOTERS
    #: ``local`` or ``spark``: who lists the table for the file check.
    engine: str = "local"
    spark_master: str | None = None
    #: ``text``, ``json`` or ``tsv`` (:mod:`deltaguard.tools.output`).
    fmt: str = "text"


def request(table: str, **o: Any) -> AuditRequest:
    """The :class:`AuditRequest` of the command line. Raises :class:`click.UsageError` for
    options that contradict each other."""
    spark = o["engine"] == "spark"
    if o["version"] is not None and o["timestamp"] is not None:
        raise click.UsageError("give --version or --timestamp, not both")
    if spark and (o["version"] is not None or o["timestamp"] is not None):
        raise click.UsageError("--engine spark checks the latest version: no --version/--timestamp")
    mode = CheckMode(o["check_mode"] or (CheckMode.EXISTS if spark else CheckMode.FOOTERS))
    if spark and mode is CheckMode.FOOTERS:
        raise click.UsageError(
            "--check footers reads the footers in this process: use --engine local"
        )
    ddb = (o["dynamodb_table"], o["dynamodb_endpoint"], o["dynamodb_region"])
    return AuditRequest(
        table,
        o["version"],
        parse_timestamp(o["timestamp"]) if o["timestamp"] is not None else None,
        S3Options(o["endpoint"], o["region"], o["path_style"]),
        dynamodb_check(table, o["table_paths"], *ddb, o["endpoint"], o["region"]),
        o["check_files"],
        mode,
        o["engine"],
        o["spark_master"],
        o["fmt"],
    )


def _spark_file_check(req: AuditRequest) -> Any:
    from deltaguard.tools.spark_engine.audit_files import spark_file_check
    from deltaguard.tools.spark_engine.session import engine_session
    from deltaguard.tools.spark_engine.store_spec import StoreSpec

    return spark_file_check(
        lambda: engine_session(req.table, req.s3, master=req.spark_master),
        StoreSpec(req.table, req.s3),
    )


def _fail(what: object) -> ExitCode:
    click.echo(f"deltaguard audit: {what}", err=True)
    return ExitCode.UNREADABLE


def run(req: AuditRequest) -> ExitCode:
    """Audits, prints the report in ``req.fmt`` (and the unreadable snapshot's line on stderr)
    and returns :func:`audit_exit_code`; a table that cannot be
    read at all is one line on stderr and :attr:`ExitCode.UNREADABLE`."""
    from deltaguard.tools.deltalog.audit import audit_table
    from deltaguard.tools.storage.errors import DeltaLogError

    spark = req.engine == "spark"
    try:
        report = audit_table(
            req.table,
            req.version,
            req.timestamp_ms,
            s3=req.s3,
            dynamodb=req.dynamodb,
            check_files=req.check_files,
            file_check=_spark_file_check(req) if spark else None,
            footers=req.check_mode is CheckMode.FOOTERS,
        )
    except (DeltaLogError, OSError) as exc:
        return _fail(exc)
    except Exception as exc:  # a Spark job's failure (pyspark/py4j are optional imports)
        from deltaguard.tools.spark_engine.errors import spark_failure

        if not spark or type(exc).__module__.split(".")[0] not in ("pyspark", "py4j"):
            raise
        return _fail(spark_failure(exc) or str(exc).strip().splitlines()[0])
    if req.fmt == JSON:
        click.echo(json.dumps(report.to_json(), indent=2))
    elif req.fmt == TSV:
        from deltaguard.tools.deltalog.render import audit_tsv

        audit_tsv(report)
    else:
        from deltaguard.tools.deltalog.render import print_audit

        print_audit(report, stdout_console())
    unreadable = report.unreadable_line()
    if unreadable is not None:
        click.echo(f"deltaguard audit: {unreadable}", err=True)
    return audit_exit_code(report)


def audit_exit_code(report: AuditReport) -> ExitCode:
    """``deltaguard audit``'s code: UNREADABLE if the audit could not read what it needed
    (:attr:`~deltaguard.tools.deltalog.audit.AuditReport.unreadable`), else CLEAN for a healthy
    table, FOUND for findings (warnings or errors)."""
    if report.unreadable:
        return ExitCode.UNREADABLE
    return ExitCode.CLEAN if report.healthy else ExitCode.FOUND
