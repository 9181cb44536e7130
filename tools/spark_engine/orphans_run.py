"""``deltaguard orphans --engine spark``: the command behind :mod:`deltaguard.tools.cli`.

Same exit codes, same terminal report and same ``--json`` document
(``deltaguard.orphans.report/1``) as the local engine (:mod:`..cli_run`), with two additions to
the JSON: ``report_table`` (the parquet table holding every candidate) and, when there are more
than ``--max-report-files`` candidates, an empty ``files`` list (the totals and partitions are
complete; a note says where the files are). The manifest of ``--delete --yes`` is the local
engine's directory (:mod:`deltaguard.tools.orphans.manifest`), written by :mod:`.cleanup`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from rich.console import Console

from deltaguard.tools.deltalog.errors import DeltaLogError
from deltaguard.tools.deltalog.listing import list_log
from deltaguard.tools.deltalog.storage import S3Options, TableStore
from deltaguard.tools.exit_codes import ExitCode
from deltaguard.tools.orphans.classify import FileClass
from deltaguard.tools.orphans.cleanup import CleanupInterruptedError, summary
from deltaguard.tools.orphans.cli_run import (
    OrphansRequest,
    check_manifest_free,
    damage_line,
    interrupted_lines,
    inventory_of,
    outcome_code,
    stopped_before_deleting_line,
    stopping_line,
)
from deltaguard.tools.orphans.deleter import OutsideTableError
from deltaguard.tools.orphans.interrupt import CleanupStopped, stop_on_signals
from deltaguard.tools.orphans.report import (
    largest_first,
    print_report,
    to_json,
    write_tsv_report,
)
from deltaguard.tools.orphans.rules import RetentionTooShortError, check_retention
from deltaguard.tools.output import stdout_console
from deltaguard.tools.progress import phase
from deltaguard.tools.spark_engine.log_refs import require_reconstructable
from deltaguard.tools.spark_engine.orphans_cleanup import execute_spark
from deltaguard.tools.spark_engine.orphans_scan import (
    DEFAULT_MAX_REPORT_FILES,
    SparkScan,
    scan_spark,
)
from deltaguard.tools.spark_engine.session import engine_session, session_running
from deltaguard.tools.spark_engine.store_spec import StoreSpec
from deltaguard.tools.state_dir import default_manifest_path

_ERROR = re.compile(r"deltaguard\.tools\.[\w.]+\.(\w+Error): (.+)")
#: Spark's error for a file a job could not read (a log line that is not JSON, a truncated
#: parquet), and the causes below it in a Java stack trace.
_READ_FILE = re.compile(r"Encountered error while reading file (\S+?)\.?\s+SQLSTATE")
_CAUSE = re.compile(r"^Caused by: [\w.$]+: (?:\[[\w.]+\] )?(.+)$", re.M)


@dataclass(frozen=True)
class SparkEngineOptions:
    """Where the report table goes (default: next to the default manifests, under the state
    directory), the master for a session the command builds itself, how many candidates the
    report may carry."""

    report_table: str | None = None
    master: str | None = None
    driver_memory: str | None = None
    max_report_files: int = DEFAULT_MAX_REPORT_FILES


def spark_failure(exc: Exception) -> str | None:
    """The deltaguard error a Spark job failed with (``CorruptLogError: file:line: ...``), or
    the file a job could not read with the innermost cause (``cannot read F: why``), or None
    if the failure is neither."""
    text = str(exc)
    match = _ERROR.search(text)
    if match:
        return f"{match.group(1)}: {match.group(2)}"
    read = _READ_FILE.search(text)
    if read is None:
        return None
    causes = _CAUSE.findall(text)
    return f"cannot read {read.group(1)}: {causes[-1].strip() if causes else 'unreadable'}"


def json_report(
    scan: SparkScan, store: TableStore, cleanup: dict[str, Any] | None
) -> dict[str, Any]:
    """The local engine's JSON report with the Spark-computed totals and partitions and the
    ``report_table`` pointer."""
    doc = to_json(scan.result, store, cleanup)
    doc["totals"], doc["partitions"] = scan.totals, largest_first(scan.partitions)
    doc["report_table"] = scan.report_path
    return doc


def run_orphans_spark(req: OrphansRequest, options: SparkEngineOptions) -> int:
    """Runs the command with the Spark engine; returns the exit code."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    out = stdout_console()
    err = Console(stderr=True, soft_wrap=True)
    retention_ms = None if req.retention_hours is None else round(req.retention_hours * 3_600_000)
    s3 = S3Options(req.endpoint, req.region, req.path_style)
    stamp = datetime.now(UTC)
    spec = StoreSpec(req.table, s3)  # until the session is known: see below
    default = default_manifest_path(req.table, stamp)
    report = options.report_table or str(default.with_name(f"{default.name}.report.parquet"))
    cleanup: dict[str, Any] | None = None
    manifest = req.manifest_path or default
    try:
        check_manifest_free(req)
        if retention_ms is not None and req.delete:
            check_retention(retention_ms, req.unsafe_retention)
        inventory = inventory_of(req)  # resolved on the driver, before a JVM starts
        if not session_running():  # the session will be built from the command's options
            store = spec.open()
            require_reconstructable(list_log(store), req.table, store)  # before a JVM starts
        with phase("orphans: starting Spark"):
            spark = engine_session(
                req.table, s3, master=options.master, driver_memory=options.driver_memory
            )
        spec = StoreSpec.of_session(spark, req.table, s3)  # one I/O stack: .hadoop_s3
        if not req.as_json:
            err.print(f"scanning {req.table} with Spark ({spark.sparkContext.master})")
        with phase("orphans: scanning with Spark (listing and classifying jobs)"):
            scan = scan_spark(
                spark,
                spec,
                report,
                retention_ms=retention_ms,
                max_report_files=options.max_report_files,
                dynamodb=req.dynamodb,
                inventory=inventory,
                range_files=req.range_files,
            )
        if spec.note:
            scan.result.notes.append(spec.note)
        if req.delete:
            check_retention(scan.result.retention_ms, req.unsafe_retention)
        planned = sum(scan.totals[c]["files"] for c in _classes(req))
        if req.delete and req.yes and planned:
            with (
                stop_on_signals(stopping_line) as stop,
                phase(f"orphans: re-reading the log, deleting {planned:,} files with Spark"),
            ):
                cleanup = execute_spark(
                    spark,
                    spec,
                    scan,
                    manifest_dir=manifest,
                    include_tombstones=req.include_tombstones,
                    unsafe_retention=req.unsafe_retention,
                    given_retention=retention_ms is not None,
                    dynamodb=req.dynamodb,
                    stop=stop,
                )
            cleanup["manifest_path"] = str(manifest)
    except CleanupStopped as stopped:
        err.print(stopped_before_deleting_line(stopped, manifest, req), highlight=False)
        return ExitCode.INTERRUPTED
    except (RetentionTooShortError, ValueError) as exc:
        err.print(f"deltaguard orphans: {exc}", highlight=False)
        return ExitCode.UNREADABLE
    except DeltaLogError as exc:
        err.print(f"deltaguard orphans: cannot read {req.table}: {exc}", highlight=False)
        return ExitCode.UNREADABLE
    except CleanupInterruptedError as exc:  # deleting had begun: never "nothing deleted"
        err.print(f"deltaguard orphans: {summary(exc.manifest, str(manifest))}", highlight=False)
        return ExitCode.DELETE_FAILED
    except (PySparkException, Py4JError) as exc:
        ours = spark_failure(exc)
        what = ours or str(exc).strip().splitlines()[0]
        verb = "nothing deleted" if req.delete and req.yes else "scan failed"
        err.print(f"deltaguard orphans: {verb}: {what}", highlight=False)
        return ExitCode.UNREADABLE
    except (OutsideTableError, OSError) as exc:
        err.print(f"deltaguard orphans: nothing deleted: {exc}", highlight=False)
        return ExitCode.UNREADABLE
    damaged = scan.totals[FileClass.STRANDED_COMMIT.value]["files"]
    code = outcome_code(planned, damaged, cleanup)
    if cleanup is not None and cleanup.get("error"):
        err.print(
            f"deltaguard orphans: {summary(cleanup, cleanup['manifest_path'])}", highlight=False
        )
    for text in interrupted_lines(cleanup, req) if cleanup and req.as_json else []:
        err.print(text, highlight=False)
    if req.as_json:
        doc = json_report(scan, spec.open(), cleanup)
        out.file.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
        return code
    if code is ExitCode.INTERRUPTED:  # the report would scroll the outcome away
        assert cleanup is not None
        out.print(summary(cleanup, cleanup["manifest_path"]), highlight=False, soft_wrap=True)
        for text in interrupted_lines(cleanup, req):
            err.print(text, highlight=False)
        return code
    if req.tsv:  # stdout: the rows only; the outcome lines go to stderr
        write_tsv_report(scan.result, spec.open())
        out = err  # with more than --max-report-files candidates: in the report table only
    elif scan.complete:
        print_report(scan.result, out, partitions=scan.partitions)
    else:
        out.print(
            f"{scan.result.table} version {scan.result.version}: {scan.result.listed_files} files listed"
        )
        if scan.result.inventory is not None:
            out.print(scan.result.inventory.line(), highlight=False, soft_wrap=True)
        for cls, tot in scan.totals.items():
            out.print(f"{cls}: {tot['files']} files, {tot['bytes']} bytes")
        for note in scan.result.notes:
            out.print(f"note: {note}")
    out.print(f"report table: {scan.report_path}")
    if line := damage_line(damaged):
        out.print(line, highlight=False, soft_wrap=True)
    if not planned:
        out.print("nothing to clean up")
    elif cleanup is None:
        hint = " (add --yes to delete)" if req.delete else " (--delete --yes to delete)"
        total = sum(scan.totals[c]["bytes"] for c in _classes(req))
        out.print(f"dry run: would delete {planned} files, {total} bytes{hint}")
    else:
        out.print(summary(cleanup, cleanup["manifest_path"]), highlight=False, soft_wrap=True)
    return code


def _classes(req: OrphansRequest) -> list[str]:
    from deltaguard.tools.orphans.cleanup import cleanup_classes

    return [c.value for c in cleanup_classes(req.include_tombstones)]
