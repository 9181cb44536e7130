"""The exit codes of every ``deltaguard`` command: one meaning each, for every command (the
README's table is this one). Every failure also prints one line on stderr,
``deltaguard <command>: <what>`` (:mod:`deltaguard.tools.cli_errors`).

``0`` (:attr:`ExitCode.CLEAN`)
    done, nothing to act on: healthy table, history read, nothing to clean, cleanup that
    deleted everything it meant to delete, safe store, a checkpoint written (or the version
    already had one).
``1`` (:attr:`ExitCode.FOUND`)
    done, and something needs attention: audit findings (warnings or errors), files to clean
    or damage to repair in a dry run, damage ``orphans`` found (``stranded-commit``, ``lost-commit``), a gap
    ``repair`` cannot fill, a temp commit ``repair`` cannot prove without
    ``--dynamodb-table``, damage ``repair`` leaves (``not repaired: ...`` lines: errors no
    remove commit fixes, a grown data file delta-rs still reads; ``not restorable: ...``: a
    lost commit ``repair --restore-lost`` leaves), missing commits a checkpoint
    covers (``history``, as ``audit``), an unsafe store.
``2`` (:attr:`ExitCode.UNREADABLE`)
    the command could not read what its answer needs, so the answer is incomplete: no
    ``_delta_log``, storage or credential errors that outlasted the retries, a snapshot that
    cannot be rebuilt (missing or damaged commit or checkpoint it needs: ``history`` too), a
    commit that cannot be read or parsed, a refused table (catalog-managed, unknown reader feature); also a refused
    setting or argument, and a probe that could not run or decide. Whatever could be read is
    still printed (audit findings, history entries with their ``problem``).
``3`` (:attr:`ExitCode.DELETE_FAILED`)
    ``orphans --delete --yes`` or ``log-cleanup --yes``: some deletions failed or their outcome is unknown, or the run
    failed after deleting began (a failed delete job, a manifest that could not be written).
    The message and the manifest say what was deleted and what is unknown; never "nothing
    deleted" once deleting began (that message, with code 2, means nothing was).
``4`` (:attr:`ExitCode.INTERRUPTED`)
    ``orphans --delete --yes`` or ``log-cleanup --yes`` stopped by SIGINT (Ctrl-C) or SIGTERM: no delete was sent
    after the signal, the requests in flight were settled (or their files recorded
    ``unknown``), and the manifest says ``"status": "interrupted"`` with the counts. Run the
    same command again to finish (docs/guides/cleanup.md, Interrupting a cleanup).
``70`` (:attr:`ExitCode.UNEXPECTED`)
    an error deltaguard does not know (a bug): the line says where the full trace was written
    (under the state directory, :func:`deltaguard.tools.state_dir.trace_log_path`);
    ``--debug`` prints it instead.
``130`` (:attr:`ExitCode.SIGINT`), ``143`` (:attr:`ExitCode.SIGTERM`)
    every other command, read-only ones included, stopped by Ctrl-C (SIGINT) or SIGTERM (128 +
    the signal number, what a shell reports for a process killed by it), with one line
    ``deltaguard <command>: interrupted (...)``, at once (requests in flight are not waited
    for): nothing was changed, except what ``repair``'s line says was done.
``141`` (:attr:`ExitCode.SIGPIPE`)
    stdout was closed by its reader (``deltaguard history T | head -1``): the command dies of
    SIGPIPE at the write that failed, silently, as coreutils and git do; a shell reports 128 +
    13 (a process's parent sees the signal). Neither a finding (1) nor a failure line: under
    ``set -o pipefail`` the pipeline fails with 141, as ``yes | head -1`` does.

Usage errors (an unknown option, a bad value, a malformed URI or endpoint, an unknown AWS
profile) are code 2 too, as click gives them.

The libraries below the commands (the Delta log reader) know no exit code: they report what they
found, and each command maps that to a code here (:func:`~deltaguard.tools.commands.audit.audit_exit_code`,
:func:`~deltaguard.tools.commands.history.history_exit_code`).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    CLEAN = 0
    FOUND = 1
    UNREADABLE = 2
    DELETE_FAILED = 3
    INTERRUPTED = 4
    UNEXPECTED = 70
    SIGINT = 130
    SIGPIPE = 141
    SIGTERM = 143


class Terminated(BaseException):
    """SIGTERM arrived while a command ran (raised by the handler
    :meth:`deltaguard.tools.cli_errors.CliGroup.main` installs; the command exits
    :attr:`ExitCode.SIGTERM`). A ``BaseException``, like ``KeyboardInterrupt``, so ``except
    Exception`` in a command does not swallow it; a runner that keeps a record catches both."""
