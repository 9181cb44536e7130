"""``deltaguard probe``: options -> :class:`ProbeRequest` -> :func:`run` -> exit code (the shape
of every command: :mod:`deltaguard.tools.commands`). The probe itself is
:func:`deltaguard.logstore.probe.run_probe`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import click

from deltaguard.tools.cli_options import bounded, combine, dynamodb_options, s3_options
from deltaguard.tools.exit_codes import ExitCode
from deltaguard.tools.output import stdout_console
from deltaguard.tools.progress import progress_option
from deltaguard.tools.storage import S3Options

HELP = """Check that s3://bucket/prefix really honours conditional writes, atomically.

Exit code 0: safe (a preset is recommended); 1: unsafe; 2: the probe could not run, or
could not decide (transient errors outlasted the retry budget)."""

options = combine(
    s3_options,
    dynamodb_options,
    click.option(
        "--writers",
        type=bounded(2, 256),
        default=8,
        show_default=True,
        help="concurrent writers per race round",
    ),
    click.option(
        "--rounds", type=bounded(1, 10_000), default=20, show_default=True, help="race rounds"
    ),
    click.option(
        "--json", "as_json", is_flag=True, help="print the report as JSON (deltaguard.probe/1)"
    ),
    progress_option,
)


@dataclass(frozen=True)
class ProbeRequest:
    """The command line, as plain values."""

    target: str
    s3: S3Options = field(default_factory=S3Options)
    #: ``--dynamodb-table`` and where it is (endpoint, region; None: the S3 ones' rule).
    dynamodb_table: str | None = None
    dynamodb_endpoint: str | None = None
    dynamodb_region: str | None = None
    writers: int = 8
    rounds: int = 20
    as_json: bool = False


def request(target: str, **o: Any) -> ProbeRequest:
    """The :class:`ProbeRequest` of the command line."""
    return ProbeRequest(
        target,
        S3Options(o["endpoint"], o["region"], o["path_style"]),
        o["dynamodb_table"],
        o["dynamodb_endpoint"],
        o["dynamodb_region"],
        o["writers"],
        o["rounds"],
        o["as_json"],
    )


def run(req: ProbeRequest) -> int:
    """Races the writers, prints the report, returns its exit code (0 safe, 1 unsafe, 2
    undecided); a probe that cannot run is one line on stderr and
    :attr:`ExitCode.UNREADABLE`."""
    from deltaguard.logstore.clients import commit_client, read_client
    from deltaguard.logstore.probe import ProbeAbortedError, print_report, run_probe
    from deltaguard.tools.cli_options import dynamodb_client_for
    from deltaguard.tools.progress import phase

    s3 = req.s3
    try:
        ddb = None
        if req.dynamodb_table:
            where = (req.dynamodb_endpoint or s3.endpoint, req.dynamodb_region or s3.region)
            ddb = dynamodb_client_for(*where)
        with phase(f"probe: {req.writers} writers racing, rounds", total=req.rounds) as shown:
            report = run_probe(
                req.target,
                lambda: commit_client(s3.endpoint, s3.region, s3.path_style),
                make_read_client=lambda: read_client(s3.endpoint, s3.region, s3.path_style),
                writers=req.writers,
                rounds=req.rounds,
                dynamodb_client=ddb,
                dynamodb_table=req.dynamodb_table,
                on_round=shown.advance,
            )
    except (ProbeAbortedError, ValueError) as exc:
        click.echo(f"deltaguard probe: {exc}", err=True)
        return ExitCode.UNREADABLE
    if req.as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        print_report(report, stdout_console())
    return int(report.exit_code)
