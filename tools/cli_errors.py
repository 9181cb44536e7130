"""How every ``deltaguard`` command fails: one line on stderr,
``deltaguard <command>: <what, naming the file, option or setting>``, and an exit code of
:class:`~deltaguard.tools.exit_codes.ExitCode`; never a traceback on the terminal.

The root group is a :class:`CliGroup`; its subgroups and commands inherit the classes
(:attr:`CliGroup.group_class`, :attr:`CliGroup.command_class`), so a new command fails the same
way without doing anything. Where each kind of failure is turned into its line:

- usage errors (click's: unknown option, missing argument, a bad value, including the option
  types of :mod:`deltaguard.tools.cli_options`): :meth:`CliGroup.main`, exit 2, the line ends
  with where the help is;
- an exception out of a command: :meth:`CliCommand.invoke`, through :func:`known_failure` (AWS
  profile, credentials, endpoint, S3 service errors, unreadable logs and files, a missing
  optional dependency: exit 2; Ctrl-C: 130; SIGTERM: 143);
- anything else is a bug: one line naming the error and the file its full trace was written to
  (:func:`~deltaguard.tools.state_dir.trace_log_path`), exit 70. ``deltaguard --debug <command>``
  (or ``DELTAGUARD_DEBUG=1``) prints the trace on stderr instead, for every failure.

Commands that print their own one-line error and exit (``sys.exit``) are left alone.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from types import FrameType
from typing import Any, NoReturn

import click

from deltaguard.tools.exit_codes import ExitCode

#: Optional dependencies a command may import (the ``spark`` extra): a missing one is named,
#: with the install command, never a traceback.
OPTIONAL_MODULES = {"pyspark": "spark", "py4j": "spark", "delta": "spark"}


class Refused(click.ClickException):
    """A setting or argument the command refuses (an unknown Spark line, a preset option out
    of range, a missing plugin jar): one line, exit 2 (``ExitCode.UNREADABLE``: "a refused
    setting"), where click's own :class:`~click.ClickException` would exit 1, the code for
    "found something"."""

    exit_code = int(ExitCode.UNREADABLE)


class Terminated(BaseException):
    """SIGTERM arrived while a command ran (raised by the handler :meth:`CliGroup.main`
    installs). A ``BaseException``, like ``KeyboardInterrupt``, so ``except Exception`` in a
    command does not swallow it."""


def command_name(ctx: click.Context | None) -> str:
    """``deltaguard <command path>`` (``deltaguard migrate status``), whatever name the program
    was started under (an entry point, ``python -m``, click's test runner)."""
    if ctx is None:
        return "deltaguard"
    return " ".join(["deltaguard", *ctx.command_path.split()[1:]])


def one_line(text: str) -> str:
    """``text`` with its lines joined: a failure is one line."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def known_failure(exc: BaseException) -> tuple[ExitCode, str] | None:
    """The exit code and message of a failure a user can cause or fix, or None (a bug)."""
    from botocore import exceptions as aws

    from deltaguard.logstore.aws_errors import describe
    from deltaguard.logstore.s3_location import InvalidS3URIError
    from deltaguard.tools.storage.errors import DeltaLogError

    if isinstance(exc, KeyboardInterrupt | click.Abort):
        return ExitCode.SIGINT, "interrupted (Ctrl-C)"
    if isinstance(exc, Terminated):
        return ExitCode.SIGTERM, "terminated (SIGTERM)"
    if isinstance(exc, aws.ProfileNotFound):
        profile = exc.kwargs.get("profile")
        return ExitCode.UNREADABLE, (
            f"AWS profile {profile!r} (AWS_PROFILE or --profile) is not in "
            f"{_aws_files()}: name one of its profiles"
        )
    if isinstance(exc, aws.NoCredentialsError | aws.PartialCredentialsError):
        return ExitCode.UNREADABLE, (
            f"no usable AWS credentials ({one_line(str(exc))}): set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or --profile / AWS_PROFILE, or run with an instance role"
        )
    if isinstance(exc, aws.ConnectionError | aws.HTTPClientError):
        endpoint = exc.kwargs.get("endpoint_url") or "the endpoint"
        return ExitCode.UNREADABLE, (
            f"cannot reach {endpoint} (--endpoint-url / --region): {one_line(str(exc))}"
        )
    if isinstance(exc, aws.ClientError):
        return ExitCode.UNREADABLE, f"{exc.operation_name}: {describe(exc)}"
    if isinstance(exc, aws.BotoCoreError):
        return ExitCode.UNREADABLE, one_line(str(exc))
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in OPTIONAL_MODULES:
        extra = OPTIONAL_MODULES[(exc.name or "").split(".")[0]]
        return ExitCode.UNREADABLE, (
            f"--engine spark needs the {extra!r} extra (no module {exc.name!r}): "
            f"pip install 'deltaguard[{extra}]'"
        )
    if isinstance(exc, InvalidS3URIError | DeltaLogError):
        return ExitCode.UNREADABLE, one_line(str(exc))
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return ExitCode.UNREADABLE, f"{where}{one_line(exc.strerror or str(exc))}"
    return None


def _aws_files() -> str:
    config = os.environ.get("AWS_CONFIG_FILE", "~/.aws/config")
    credentials = os.environ.get("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials")
    return f"{config} or {credentials}"


def debug_requested(ctx: click.Context | None) -> bool:
    """``deltaguard --debug`` or ``DELTAGUARD_DEBUG=1``: print full traces."""
    if os.environ.get("DELTAGUARD_DEBUG", "") not in ("", "0"):
        return True
    return bool(ctx is not None and ctx.find_root().params.get("debug"))


def _write_trace(exc: BaseException, command: str) -> str | None:
    """Writes ``exc``'s trace to a new log file under the state directory; its path, or None
    if it could not be written."""
    from deltaguard.tools.state_dir import trace_log_path

    path = trace_log_path(command, datetime.now(UTC))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{command} {' '.join(sys.argv[1:])}\n{''.join(_trace(exc))}")
    except OSError:
        return None
    return str(path)


def _trace(exc: BaseException) -> list[str]:
    return traceback.format_exception(type(exc), exc, exc.__traceback__)


def fail(ctx: click.Context | None, exc: BaseException) -> NoReturn:
    """Prints ``exc`` as one line (see the module docstring) and exits with its code."""
    command = command_name(ctx)
    debug = debug_requested(ctx)
    if debug:
        click.echo("".join(_trace(exc)), err=True, nl=False)
    known = known_failure(exc)
    if known is None:
        code = ExitCode.UNEXPECTED
        first = one_line(str(exc))[:300]
        what = f"unexpected error {type(exc).__name__}{': ' + first if first else ''}"
        if debug:
            message = f"{what} (a bug: the trace is above)"
        else:
            where = _write_trace(exc, command)
            shown = f"the full trace is in {where}" if where else "run with --debug for the trace"
            message = f"{what} (a bug: {shown}; 'deltaguard --debug ...' prints it)"
    else:
        code, message = known
    click.echo(f"{command}: {message}", err=True)
    raise click.exceptions.Exit(int(code))


class CliCommand(click.Command):
    """A command whose failures are one line (:func:`fail`)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # raised by the command's body: give it its command
            if exc.ctx is None:
                exc.ctx = ctx
            raise
        except click.ClickException as exc:
            click.echo(f"{command_name(ctx)}: {one_line(exc.format_message())}", err=True)
            raise click.exceptions.Exit(exc.exit_code) from None
        except (click.exceptions.Exit, SystemExit):
            raise
        except BrokenPipeError:  # stdout closed by a reader (`| head`): click's own handling
            raise
        except (Exception, KeyboardInterrupt, Terminated) as exc:
            fail(ctx, exc)


class CliGroup(click.Group):
    """The root group (and, through :attr:`group_class`, every subgroup): usage errors as one
    line, SIGTERM as :class:`Terminated`, and :class:`CliCommand` for every command."""

    command_class = CliCommand
    group_class = type

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            if exc.ctx is None:
                exc.ctx = ctx
            raise

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        with _sigterm_raises():
            try:
                rv = super().main(args, prog_name, complete_var, False, **extra)
            except click.exceptions.NoArgsIsHelpError as exc:  # a bare group: its help
                exc.show()
                sys.exit(exc.exit_code)
            except click.UsageError as exc:
                name = command_name(exc.ctx)
                click.echo(
                    f"{name}: {one_line(exc.format_message())} (see '{name} --help')", err=True
                )
                sys.exit(exc.exit_code)
            except click.ClickException as exc:
                click.echo(f"deltaguard: {one_line(exc.format_message())}", err=True)
                sys.exit(exc.exit_code)
            except (Exception, KeyboardInterrupt, Terminated, click.Abort) as exc:
                try:
                    fail(None, exc)
                except click.exceptions.Exit as code:
                    sys.exit(code.exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` while the command runs (when the process left it at
    the default, on the main thread), so it ends as one line and exit 143, not a silent kill.
    A command that needs its own handling (a cleanup settling its deletes) installs its own
    handler over this one."""
    import threading

    def terminated(_signum: int, _frame: FrameType | None) -> None:
        raise Terminated()

    installed = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    )
    if installed:
        signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        if installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


#: The decorator of the root group's ``--debug`` flag.
debug_option: Callable[[Callable[..., Any]], Callable[..., Any]] = click.option(
    "--debug",
    is_flag=True,
    help="print the full trace of a failure (default: one line; an unexpected error's trace "
    "goes to a log file under the state directory)",
)
