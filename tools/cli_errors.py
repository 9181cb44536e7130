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
  optional dependency: exit 2; Ctrl-C: 130; SIGTERM: 143, the line ``interrupted (...)``; the
  process then ends at once, not waiting for worker threads still blocked on a request; how
  both signals stop a main thread blocked in a system call: :mod:`deltaguard.tools.cli_signals`);
- stdout closed by its reader (``deltaguard history T | head -1``): the process dies of SIGPIPE
  at the write that failed, silently, as coreutils and git do (:class:`StdoutOrSigpipe`; a
  shell reports 141), never exit 1 or 2;
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
from typing import Any, NoReturn

import click

from deltaguard.tools.cli_signals import interrupts_cut_blocking_calls, sigterm_raises
from deltaguard.tools.exit_codes import ExitCode, Terminated

#: Optional dependencies a command may import (the ``spark`` extra): a missing one is named,
#: with the install command, never a traceback.
OPTIONAL_MODULES = {"pyspark": "spark", "py4j": "spark", "delta": "spark"}


class Refused(click.ClickException):
    """A setting or argument the command refuses (an unknown Spark line, a preset option out
    of range, a missing plugin jar): one line, exit 2 (``ExitCode.UNREADABLE``: "a refused
    setting"), where click's own :class:`~click.ClickException` would exit 1, the code for
    "found something"."""

    exit_code = int(ExitCode.UNREADABLE)


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
        return ExitCode.SIGTERM, "interrupted (SIGTERM)"
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
    if code in (ExitCode.SIGINT, ExitCode.SIGTERM):
        _end_now_if_threads_wait(code)
    raise click.exceptions.Exit(int(code))


def _end_now_if_threads_wait(code: ExitCode) -> None:
    """After an interrupt's line: if worker threads are still alive (blocked on a request the
    signal cannot cut short), ends the process now with ``code`` (stdout and stderr flushed)
    instead of waiting for them at exit. The command has unwound by then: its own handling of
    the interrupt is done."""
    import threading

    main_thread = threading.main_thread()
    if not any(t is not main_thread and not t.daemon for t in threading.enumerate()):
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(int(code))


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
        with sigterm_raises(), interrupts_cut_blocking_calls(), _stdout_or_sigpipe():
            rv = self._main(args, prog_name, complete_var, **extra)
        sys.exit(rv if isinstance(rv, int) else 0)

    def _main(
        self,
        args: Sequence[str] | None,
        prog_name: str | None,
        complete_var: str | None,
        **extra: Any,
    ) -> Any:
        """:meth:`main`'s work: every failure as one line (see the module docstring)."""
        try:
            rv = self._run(args, prog_name, complete_var, **extra)
        except click.exceptions.Exit as exc:  # a command's (or fail's) exit code
            sys.exit(exc.exit_code)
        except click.exceptions.NoArgsIsHelpError as exc:  # a bare group: its help
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            name = command_name(exc.ctx)
            click.echo(f"{name}: {one_line(exc.format_message())} (see '{name} --help')", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            click.echo(f"deltaguard: {one_line(exc.format_message())}", err=True)
            sys.exit(exc.exit_code)
        except (Exception, KeyboardInterrupt, Terminated, click.Abort) as exc:
            try:
                fail(self._context_of(args), exc)
            except click.exceptions.Exit as code:
                sys.exit(code.exit_code)
        return rv

    def _run(
        self,
        args: Sequence[str] | None,
        prog_name: str | None,
        complete_var: str | None,
        **extra: Any,
    ) -> Any:
        """What click's ``main`` does in non-standalone mode, without its own handling of
        Ctrl-C (a blank line on stderr, then ``Abort``) and of a closed stdout (exit 1): both
        are ours (:func:`fail`, :class:`StdoutOrSigpipe`)."""
        from click.utils import _detect_program_name

        if prog_name is None:
            prog_name = _detect_program_name()
        self._main_shell_completion(extra, prog_name, complete_var)
        with self.make_context(
            prog_name, list(sys.argv[1:] if args is None else args), **extra
        ) as ctx:
            return self.invoke(ctx)

    def _context_of(self, args: Sequence[str] | None) -> click.Context | None:
        """A context naming the command ``args`` reach (``deltaguard orphans`` for ``orphans T
        --json``), for a failure outside a command's own code (a signal while the options are
        read), or None."""
        words = list(sys.argv[1:] if args is None else args)
        root = ctx = click.Context(self, info_name="deltaguard")
        group: click.Command = self
        while isinstance(group, click.Group):
            name = next((w for w in words if not w.startswith("-")), None)
            sub = group.commands.get(name) if name is not None else None
            if sub is None:
                break
            words = words[words.index(name) + 1 :]  # type: ignore[arg-type]
            ctx = click.Context(sub, parent=ctx, info_name=name)
            group = sub
        return None if ctx is root else ctx


class StdoutOrSigpipe:
    """``sys.stdout`` while a command runs: the real stream, except that a write or flush the
    reader refused (it closed the pipe: ``| head``) ends the process by SIGPIPE, silently, at
    that write: what coreutils and git do (git's ``check_pipe``), so a shell sees 141 and
    ``set -o pipefail`` treats it as a closed pipe, not as a finding. SIGPIPE itself stays
    ignored (Python's default), so a socket to S3 that the server closed is an error as
    before, never a death."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        """Writes all of ``text``: through the binary layer in a loop when there is one, as
        an unbuffered stdout (``PYTHONUNBUFFERED``, ``-u``) may take part of a write to a pipe
        and the text layer would drop the rest without an error."""
        binary = getattr(self._stream, "buffer", None)
        try:
            if binary is None:
                return int(self._stream.write(text))
            self._stream.flush()
            data = memoryview(text.encode(self._stream.encoding, self._stream.errors))
            while data:
                data = data[binary.write(data) :]
            return len(text)
        except BrokenPipeError:
            die_of_sigpipe()

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            die_of_sigpipe()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def die_of_sigpipe() -> NoReturn:
    """Ends the process by SIGPIPE (stdout's reader is gone): stdout is pointed at
    ``/dev/null`` first, so nothing tries to flush into the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
    except OSError:
        pass
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.raise_signal(signal.SIGPIPE)
    os._exit(128 + signal.SIGPIPE)  # not reached: SIGPIPE's default action ends the process


@contextmanager
def _stdout_or_sigpipe() -> Iterator[None]:
    """``sys.stdout`` is a :class:`StdoutOrSigpipe` for the block; flushed at its end (a
    pipe's last block is written there, and a closed pipe found there)."""
    real = sys.stdout
    sys.stdout = StdoutOrSigpipe(real)
    try:
        yield
    finally:
        try:
            sys.stdout.flush()
        finally:
            sys.stdout = real


#: The decorator of the root group's ``--debug`` flag.
debug_option: Callable[[Callable[..., Any]], Callable[..., Any]] = click.option(
    "--debug",
    is_flag=True,
    help="print the full trace of a failure (default: one line; an unexpected error's trace "
    "goes to a log file under the state directory)",
)
