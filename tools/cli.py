"""The ``deltaguard`` command.

Every failure ends with one line, ``deltaguard <command>: <what>``, and a documented exit code,
never a traceback (:mod:`deltaguard.tools.cli_errors`); shared option types and options (the
region rule, ``--profile``, ``--endpoint-url``, durations): :mod:`deltaguard.tools.cli_options`.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import click

# pyarrow starts jemalloc's background thread when it is imported. A thread that does not block
# SIGINT and SIGTERM can be the one the kernel hands them to; the main thread, blocked in a read
# (a FIFO, a socket), would then never run the handler and the command would not stop. The
# thread inherits the signal mask of the thread that starts it: block both around the import,
# then restore the mask (a signal that came meanwhile is delivered then, to the main thread).
_MASK = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
try:
    import pyarrow  # noqa: F401
finally:
    signal.pthread_sigmask(signal.SIG_SETMASK, _MASK)

from deltaguard.tools.cli_errors import CliGroup, debug_option  # noqa: E402
from deltaguard.tools.cli_options import (  # noqa: E402
    TableLocation,
)
from deltaguard.tools.commands import (  # noqa: E402
    audit,
    checkpoint,
    conf,
    dynamodb,
    history,
    log_cleanup,
    migrate,
    orphans,
    probe,
    repair,
)


@click.group("deltaguard", cls=CliGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="deltaguard", prog_name="deltaguard")
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


@main.group("dynamodb", help=dynamodb.GROUP_HELP)
def dynamodb_group() -> None:
    pass


@dynamodb_group.command("create-table", help=dynamodb.CREATE_HELP)
@click.argument("name")
@dynamodb.create_options
def dynamodb_create_table(name: str, region: str | None, endpoint: str | None) -> None:
    sys.exit(dynamodb.run_create(dynamodb.CreateTableRequest(name, region, endpoint)))


@main.command("orphans", help=orphans.HELP)
@click.argument("table", type=TableLocation())
@orphans.options
def orphans_command(table: str, **o: Any) -> None:
    sys.exit(orphans.run(orphans.request(table, **o)))


@main.command("audit", help=audit.HELP)
@click.argument("table", type=TableLocation())
@audit.options
def audit_command(table: str, **o: Any) -> None:
    sys.exit(audit.run(audit.request(table, **o)))


@main.command("log-cleanup", help=log_cleanup.HELP)
@click.argument("table", type=TableLocation())
@log_cleanup.options
def log_cleanup_command(table: str, **o: Any) -> None:
    sys.exit(log_cleanup.run(log_cleanup.request(table, **o)))


@main.command("repair", help=repair.HELP)
@click.argument("table", type=TableLocation())
@repair.options
def repair_command(table: str, **o: Any) -> None:
    sys.exit(repair.run(repair.request(table, **o)))


@main.command("checkpoint", help=checkpoint.HELP)
@click.argument("table", type=TableLocation())
@checkpoint.options
def checkpoint_command(table: str, **o: Any) -> None:
    sys.exit(checkpoint.run(checkpoint.request(table, **o)))


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
