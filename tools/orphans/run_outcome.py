"""How the two cleanup commands, ``orphans`` (:mod:`.run`) and ``log-cleanup``
(:mod:`.log_cleanup_run`), end a run, written once for both: the one-line failures
(:class:`RunFailed`), the ``--yes`` steps around the command's delete (:func:`clean_up`: the
unfinished earlier run continued, a new manifest directory, the delete under
:func:`.interrupt.stop_on_signals`), the exit code (:func:`outcome_code`) and the outcome in
each format (:func:`render`: the JSON document, the terminal report, or the TSV rows with the
outcome lines on stderr; after a signal, the outcome without the report).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import orjson
from rich.console import Console

from deltaguard.tools.exit_codes import ExitCode
from deltaguard.tools.orphans.classify import FileClass, ScanResult
from deltaguard.tools.orphans.cleanup import (
    CleanupInterruptedError,
    CleanupResult,
    continues_line,
    how_to_finish,
    nothing_left,
    stopped_by,
    summary,
    unfinished,
)
from deltaguard.tools.orphans.interrupt import CleanupStopped, StopSignal, stop_on_signals
from deltaguard.tools.orphans.manifest import Manifest, new_run_dir, unfinished_run
from deltaguard.tools.output import stdout_console
from deltaguard.tools.storage.errors import DeltaLogError


class RunFailed(Exception):
    """A step that ends the run: stderr says ``deltaguard <command>: <what>`` (one line) and
    the command exits with ``code`` (:func:`one_line_failures`)."""

    def __init__(self, what: str, code: ExitCode = ExitCode.UNREADABLE) -> None:
        super().__init__(what)
        self.what = what
        self.code = code


def error_console() -> Console:
    """The console of a cleanup command's stderr lines."""
    return Console(stderr=True, soft_wrap=True)


def one_line_failures(command: str, run: Callable[[], int]) -> int:
    """``run()``'s exit code, or, when a step raises :class:`RunFailed`, its line on stderr
    and its code."""
    try:
        return run()
    except RunFailed as failed:
        error_console().print(f"deltaguard {command}: {failed.what}", highlight=False)
        return failed.code


def outcome_code(planned: int, damaged: int, cleanup: dict[str, Any] | None) -> ExitCode:
    """The exit code of a scan (and its cleanup): 4 if a signal stopped the cleanup
    (:func:`.cleanup.stopped_by`); 3 if a cleanup left deletions failed or unknown or failed
    after deleting began (:func:`.cleanup.unfinished`); else 1 if files to clean remain
    planned (dry run) or the scan found damage (``stranded-commit``, ``lost-commit``); else
    0."""
    if cleanup is not None:
        if stopped_by(cleanup):
            return ExitCode.INTERRUPTED
        if unfinished(cleanup):
            return ExitCode.DELETE_FAILED
        return ExitCode.FOUND if damaged else ExitCode.CLEAN
    return ExitCode.FOUND if planned or damaged else ExitCode.CLEAN


#: What the summary line says of each damage class (never deleted), after the count.
_DAMAGE = {
    FileClass.STRANDED_COMMIT: "DynamoDB temp commit(s) of retained versions whose N.json is "
    "missing (class stranded-commit): never deleted; see their reasons and "
    "docs/guides/cleanup.md",
    FileClass.LOST_COMMIT: "file(s) only a lost commit names (class lost-commit): never "
    "deleted; see deltaguard audit and docs/guides/repair.md (repair --restore-lost)",
}


def damage_line(damage: FileClass, count: int) -> str | None:
    """The summary line for ``count`` files of the class ``damage`` (``stranded-commit``,
    ``lost-commit``), or None if there are none."""
    return f"damage: {count} {_DAMAGE[damage]}" if count else None


def stopping_line(signal_name: str, command: str = "orphans") -> None:
    """Says on stderr, from the signal handler, that the cleanup is stopping. Written
    straight to the file: the handler may run while the console holds its lock."""
    sys.stderr.write(
        f"deltaguard {command}: {signal_name}: stopping: no new deletes are sent; waiting for "
        "the answers to the requests in flight\n"
    )
    sys.stderr.flush()


def stopped_before_deleting(stopped: CleanupStopped, manifest: Path) -> str:
    """What stderr says (after ``deltaguard <command>: ``) when a signal stopped the cleanup
    before deleting began: nothing deleted, the manifest, and how to finish."""
    return (
        f"stopped by {stopped.signal_name} before deleting began: nothing deleted; manifest: "
        f"{manifest} (status interrupted); to finish, run the same command again"
    )


class CleanupAsks(Protocol):
    """What :func:`interrupted_lines` and :func:`render` need of a cleanup command's
    request."""

    @property
    def as_json(self) -> bool: ...

    @property
    def tsv(self) -> bool: ...

    @property
    def manifest_path(self) -> Path | None: ...


def interrupted_lines(
    cleanup: dict[str, Any], req: CleanupAsks, command: str = "orphans"
) -> list[str]:
    """What stderr says after a signal stopped the cleanup: how to finish, after what was
    deleted with ``--json`` (stdout has it otherwise); nothing if no signal did."""
    if not stopped_by(cleanup):
        return []
    lines = [f"deltaguard {command}: {summary(cleanup, cleanup['manifest_path'])}"]
    finish = [f"deltaguard {command}: {how_to_finish(cleanup, req.manifest_path is not None)}"]
    return lines + finish if req.as_json else finish


def _no_engine_failure(_exc: Exception) -> str | None:
    return None


@dataclass(frozen=True)
class CleanupSteps:
    """What :func:`clean_up` needs of a command: its name, where its manifests go, the
    classes it deletes, and its delete."""

    command: str
    manifests: Path
    classes: tuple[FileClass, ...]
    #: Deletes the scan's targets, writing the manifest directory it is given, under the stop
    #: signal, continuing the earlier unfinished run (or None). Raises what
    #: :func:`.cleanup.execute` raises.
    delete: Callable[[Path, StopSignal, Manifest | None], CleanupResult]
    #: The one line for an engine's own failure, or None (the exception then propagates).
    failure: Callable[[Exception], str | None] = _no_engine_failure


def clean_up(steps: CleanupSteps, result: ScanResult, planned: int) -> dict[str, Any] | None:
    """``--yes``: the cleanup's manifest summary plus ``manifest_path`` (and ``unwritten``,
    the outcome records the manifest could not take: never lost), or None when there was
    nothing to do. With nothing planned it only says that the table's unfinished earlier run
    (:func:`.manifest.unfinished_run`) is finished, if there is one. Raises
    :class:`RunFailed` when it ends the run (nothing deleted: 2; stopped before deleting: 4;
    deleting began and then failed: 3)."""
    earlier, cleanup = _earlier_run(steps, result, planned)
    if not planned:
        return cleanup
    manifest, done = _delete(steps, result.table, earlier)
    cleanup = {**done.summary, "manifest_path": str(manifest)}
    if done.unwritten:  # known outcomes the manifest could not take: never lost
        cleanup["unwritten"] = done.unwritten
    if cleanup.get("error"):
        error_console().print(
            f"deltaguard {steps.command}: {summary(cleanup, str(manifest))}", highlight=False
        )
    return cleanup


def _earlier_run(
    steps: CleanupSteps, result: ScanResult, planned: int
) -> tuple[Manifest | None, dict[str, Any] | None]:
    """The table's unfinished earlier run, and, when nothing is planned, the summary of the
    new run that says it is finished."""
    try:
        earlier = unfinished_run(steps.manifests, result.table, command=steps.command)
        if earlier is None or planned:
            return earlier, None
        manifest = new_run_dir(steps.manifests, result.table)
        cleanup = nothing_left(manifest, result, steps.classes, earlier, steps.command)
    except OSError as exc:
        raise RunFailed(f"nothing deleted: {exc}") from None
    cleanup["manifest_path"] = str(manifest)
    return earlier, cleanup


def _delete(
    steps: CleanupSteps, table: str, earlier: Manifest | None
) -> tuple[Path, CleanupResult]:
    """The delete, in a new manifest directory, under the stop signal."""
    try:
        manifest = new_run_dir(steps.manifests, table)
        with stop_on_signals(partial(stopping_line, command=steps.command)) as stop:
            return manifest, steps.delete(manifest, stop, earlier)
    except CleanupStopped as stopped:
        raise RunFailed(stopped_before_deleting(stopped, manifest), ExitCode.INTERRUPTED) from None
    except CleanupInterruptedError as exc:  # deleting had begun: never "nothing deleted"
        raise RunFailed(summary(exc.manifest, str(manifest)), ExitCode.DELETE_FAILED) from None
    except (DeltaLogError, ValueError, OSError) as exc:
        raise RunFailed(f"nothing deleted: {exc}") from None
    except Exception as exc:
        if (what := steps.failure(exc)) is None:
            raise
        raise RunFailed(f"nothing deleted: {what}") from None


@dataclass(frozen=True)
class Outcome:
    """What a cleanup command's run came to, and its views, for :func:`render`."""

    command: str
    #: The cleanup's summary (:func:`clean_up`), None without one.
    cleanup: dict[str, Any] | None
    #: Files (and bytes) the run plans to delete.
    planned: int
    planned_bytes: int
    #: Files the scan found damaged (they make the exit code 1).
    damaged: int
    #: The damage lines, said after the report (None: nothing to say).
    findings: tuple[str | None, ...]
    #: Whether the dry run only lacks ``--yes`` (else it lacks ``--delete --yes``).
    only_yes_missing: bool
    #: The ``--json`` document, given the cleanup's summary.
    json_doc: Callable[[dict[str, Any] | None], dict[str, Any]]
    #: The terminal report, on the console given.
    text: Callable[[Console], None]
    #: The TSV rows on stdout; the lines that follow them go to the console given (stderr).
    tsv: Callable[[Console], None]

    @property
    def code(self) -> ExitCode:
        return outcome_code(self.planned, self.damaged, self.cleanup)


def render(outcome: Outcome, req: CleanupAsks) -> int:
    """Prints ``outcome`` as ``req`` asks and returns its exit code: ``--json``: the
    document on stdout (after a signal, what was deleted and how to finish on stderr); after
    a signal, only the outcome (the report would scroll it away); else the report (TSV: the
    rows on stdout, the rest on stderr), the damage, and the outcome or the dry run."""
    out, err = stdout_console(), error_console()
    cleanup, command = outcome.cleanup, outcome.command
    if req.as_json:
        for text in interrupted_lines(cleanup, req, command) if cleanup else []:
            err.print(text, highlight=False)
        doc = orjson.dumps(outcome.json_doc(cleanup), option=orjson.OPT_INDENT_2).decode()
        out.file.write(doc + "\n")
    elif outcome.code is ExitCode.INTERRUPTED:
        assert cleanup is not None
        _print_cleanup(cleanup, out, with_records=False)
        for text in interrupted_lines(cleanup, req, command):
            err.print(text, highlight=False)
    else:
        _print_text(outcome, req, out, err)
    return outcome.code


def _print_cleanup(cleanup: dict[str, Any], out: Console, *, with_records: bool) -> None:
    """The run it continues, what it did, and (``with_records``) the outcomes the manifest
    could not take."""
    if line := continues_line(cleanup):
        out.print(line, highlight=False, soft_wrap=True)
    out.print(summary(cleanup, cleanup["manifest_path"]), highlight=False, soft_wrap=True)
    for record in cleanup.get("unwritten", []) if with_records else []:
        out.print(f"  {record['outcome']} {record['path']}", highlight=False, soft_wrap=True)


def _print_text(outcome: Outcome, req: CleanupAsks, out: Console, err: Console) -> None:
    """The report (or the TSV rows, the lines after them on stderr), the damage, then the
    outcome: nothing to clean up, the dry run, or what the cleanup did."""
    if req.tsv:  # stdout: the rows only; the outcome lines go to stderr
        outcome.tsv(err)
        out = err
    else:
        outcome.text(out)
    for line in outcome.findings:
        if line:
            out.print(line, highlight=False, soft_wrap=True)
    cleanup = outcome.cleanup
    if not outcome.planned:
        if cleanup is not None and (line := continues_line(cleanup)):
            out.print(line, highlight=False, soft_wrap=True)
        out.print("nothing to clean up")
        if cleanup is not None:  # it finished an earlier run: where that is written
            out.print(summary(cleanup, cleanup["manifest_path"]), highlight=False, soft_wrap=True)
    elif cleanup is None:
        verb, hint = "cleanup would delete", " (--delete --yes to delete)"
        if outcome.only_yes_missing:
            verb, hint = "would delete", " (add --yes to delete)"
        out.print(f"dry run: {verb} {outcome.planned} files, {outcome.planned_bytes} bytes{hint}")
    else:
        _print_cleanup(cleanup, out, with_records=True)
