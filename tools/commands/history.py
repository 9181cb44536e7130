"""``deltaguard history``: options -> :class:`HistoryRequest` -> :func:`run` -> exit code (the
shape of every command: :mod:`deltaguard.tools.commands`). The reading itself is
:func:`deltaguard.tools.deltalog.history.read_history`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from deltaguard.tools.cli_options import (
    MAX_VERSION,
    bounded,
    combine,
    dynamodb_check,
    dynamodb_options,
    dynamodb_table_path_option,
    s3_options,
)
from deltaguard.tools.exit_codes import ExitCode
from deltaguard.tools.output import JSON, TSV, format_option, stdout_console
from deltaguard.tools.progress import progress_option
from deltaguard.tools.storage import S3Options

if TYPE_CHECKING:
    from deltaguard.tools.deltalog.history import HistoryEntry
    from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck

HELP = """TABLE's retained versions, newest first: version, timestamp, operation, parameters,
metrics, txn app ids, engine, the commit path (which store or protocol created the commit
file: deltaguard's stores by their mark, delta-rs/Trino by engineInfo, Delta's own stores by
their traces, including the DynamoDB entries with --dynamodb-table; unknown on local disk),
and the state of its commit file (ok, damaged, unreadable, missing), with the audit's finding
when it is not ok (one line on stderr for each such version, naming its file; the others are
still printed).

Exit code 0: every version read; 1: only missing commits a checkpoint covers
(version-gap-covered); 2: the table could not be read, a commit could not be read or
parsed, or a commit the latest version needs is missing (version-gap)."""

options = combine(
    click.option("--limit", type=bounded(1, MAX_VERSION), help="newest N versions only"),
    click.option(
        "--json", "as_json", is_flag=True, help="print the history as JSON (deltaguard.history/4)"
    ),
    format_option,
    progress_option,
    s3_options,
    dynamodb_options,
    dynamodb_table_path_option,
)


@dataclass(frozen=True)
class HistoryRequest:
    """The command line, as plain values."""

    table: str
    limit: int | None = None
    s3: S3Options = field(default_factory=S3Options)
    #: ``--dynamodb-table``: its entries say which unmarked commits Delta's DynamoDB store made.
    dynamodb: DynamoDBCheck | None = None
    #: ``text``, ``json`` or ``tsv`` (:mod:`deltaguard.tools.output`).
    fmt: str = "text"


def request(table: str, **o: Any) -> HistoryRequest:
    """The :class:`HistoryRequest` of the command line."""
    ddb = (o["dynamodb_table"], o["dynamodb_endpoint"], o["dynamodb_region"])
    return HistoryRequest(
        table,
        o["limit"],
        S3Options(o["endpoint"], o["region"], o["path_style"]),
        dynamodb_check(table, o["table_paths"], *ddb, o["endpoint"], o["region"]),
        o["fmt"],
    )


def _entry_versions(check: DynamoDBCheck) -> set[int]:
    from deltaguard.logstore.commit_names import commit_version
    from deltaguard.tools.deltalog.temp_commits import read_entries

    named = (commit_version(name) for name in read_entries(check))
    return {v for v in named if v is not None}


def run(req: HistoryRequest) -> ExitCode:
    """Reads the history, prints it in ``req.fmt``, one line on stderr per version whose
    commit file is not ok, and returns :func:`history_exit_code`;
    a table (or DynamoDB table) that cannot be read is one line on stderr and
    :attr:`ExitCode.UNREADABLE`."""
    from deltaguard.tools.deltalog.history import history_json, read_history
    from deltaguard.tools.storage.errors import DeltaLogError

    try:
        versions = _entry_versions(req.dynamodb) if req.dynamodb is not None else None
        entries = read_history(req.table, s3=req.s3, limit=req.limit, dynamodb_versions=versions)
    except (DeltaLogError, OSError) as exc:
        click.echo(f"deltaguard history: {exc}", err=True)
        return ExitCode.UNREADABLE
    if req.fmt == JSON:
        click.echo(json.dumps(history_json(req.table, entries), indent=2))
    elif req.fmt == TSV:
        from deltaguard.tools.deltalog.render import history_tsv

        history_tsv(entries)
    else:
        from deltaguard.tools.deltalog.render import print_history

        print_history(entries, stdout_console())
    for entry in entries:  # newest first, as printed
        if entry.problem:
            click.echo(
                f"deltaguard history: {entry.file}: {entry.state} ({entry.finding}): "
                f"{entry.problem}",
                err=True,
            )
    return history_exit_code(entries)


def history_exit_code(entries: Sequence[HistoryEntry]) -> ExitCode:
    """``deltaguard history``'s code, the audit's for the same trouble: UNREADABLE if some
    commit could not be read or parsed, or a commit the latest version needs is missing (the
    audit's ``version-gap``, an error: its snapshot cannot be rebuilt); FOUND if the only
    trouble is missing commits a checkpoint covers (``version-gap-covered``, a warning);
    else CLEAN."""
    from deltaguard.tools.deltalog.findings import CODES, Severity
    from deltaguard.tools.deltalog.history import CommitState

    trouble = [e for e in entries if e.state is not CommitState.OK]
    if any(e.state is not CommitState.MISSING for e in trouble):
        return ExitCode.UNREADABLE
    if any(e.finding and CODES[e.finding][0] is Severity.ERROR for e in trouble):
        return ExitCode.UNREADABLE
    return ExitCode.FOUND if trouble else ExitCode.CLEAN
