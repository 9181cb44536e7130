"""Signs of life on stderr: the one progress display every long phase reports to.

A command turns it on with :func:`reporting` (the CLI's ``--progress/--no-progress``,
:func:`progress_option`; default: on when stderr is a terminal, ``--json`` runs included).
Code that may run long reports through :func:`phase` and :func:`note`, which cost next to
nothing when no display is on (library use, tests, ``--no-progress``, stderr not a terminal).

Contract:

* **stderr only.** The display is a rich :class:`~rich.progress.Progress` on a stderr console
  that never redirects stdout, so a command's stdout (a report, ``--json``, ``--format tsv``)
  holds exactly what it held without it. The display is transient: it is erased when the last
  phase ends, before the command prints its report.
* **Phases.** ``with phase("reading 120 commits", total=120) as p: ... p.advance()``: one line
  per phase (spinner, description, a bar and ``done/total`` when the total is known, a detail
  text, elapsed time), removed when the phase ends. Phases may nest and may run at once
  (several lines). :meth:`Phase.advance` may be called from several threads and in hot loops:
  it counts under a lock and redraws at most ten times a second.
* **Notes.** :func:`note` prints one line above the display (or alone), e.g. the S3 read
  client's retries, "retrying ListObjectsV2 after 503 (3/8)", which :func:`reporting`
  subscribes to through :func:`deltaguard.logstore.clients.set_retry_listener` (botocore's own
  retry events: the retries stay botocore's).
* A display is only a view: it never changes what a phase does, retries included. Importing this module
  costs the standard library only (rich and click load when a display or the option is made):
  the log reader imports it, also where nothing is shown.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

F = TypeVar("F", bound=Callable[..., Any])

#: Redraws of a phase's counters per second, at most (the display itself refreshes 10/s).
_UPDATES_PER_S = 10


class Phase:
    """One line of the display. The no-op base is what :func:`phase` yields when no display
    is on."""

    def advance(self, n: int = 1) -> None:
        """``n`` more units done."""

    def update(
        self,
        *,
        completed: int | None = None,
        total: int | None = None,
        description: str | None = None,
        detail: str | None = None,
    ) -> None:
        """Sets the counters or texts given."""


class _ShownPhase(Phase):
    def __init__(self, progress: Progress, task: TaskID) -> None:
        self.progress = progress
        self.task = task
        self._lock = threading.Lock()
        self._done = 0
        self._drawn = 0.0

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self._done += n
            now = time.monotonic()
            if now - self._drawn < 1 / _UPDATES_PER_S:
                return
            self._drawn = now
            done = self._done
        self._draw(completed=done)

    def update(
        self,
        *,
        completed: int | None = None,
        total: int | None = None,
        description: str | None = None,
        detail: str | None = None,
    ) -> None:
        fields: dict[str, Any] = {}
        if completed is not None:
            with self._lock:
                self._done = completed
            fields["completed"] = completed
        if total is not None:
            fields["total"] = total
        if description is not None:
            fields["description"] = description
        if detail is not None:
            fields["detail"] = detail
        self._draw(**fields)

    def _draw(self, **fields: Any) -> None:
        """Updates the task, with ``count``: ``done/total``, or ``done`` while the total is
        unknown (nothing before the first unit)."""
        self.progress.update(self.task, **fields)
        task = self.progress.tasks[self.progress.task_ids.index(self.task)]
        done = int(task.completed)
        count = f"{done:,}/{int(task.total):,}" if task.total is not None else f"{done:,}"
        self.progress.update(self.task, count=count if done or task.total else "")


class _Display:
    """The display on one stderr console: a rich Progress, live only while at least one phase
    is open (a new one each time, so a finished display never moves the cursor over what was
    printed after it)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._progress: Progress | None = None
        self._open = 0
        self._lock = threading.Lock()

    def _new_progress(self) -> Progress:
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        return Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(bar_width=20),
            TextColumn("{task.fields[count]}"),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def start(self, description: str, total: int | None) -> _ShownPhase:
        with self._lock:
            if self._progress is None:
                self._progress = self._new_progress()
            progress = self._progress
            count = "" if total is None else f"0/{total:,}"
            task = progress.add_task(description, total=total, detail="", count=count)
            if self._open == 0:
                progress.start()
            self._open += 1
            progress.refresh()  # drawn at least once, however short the phase
        return _ShownPhase(progress, task)

    def end(self, shown: _ShownPhase) -> None:
        with self._lock:
            shown.progress.remove_task(shown.task)
            self._open -= 1
            if self._open == 0:
                shown.progress.stop()
                self._progress = None

    def close(self) -> None:
        """Stops a display a phase left open (an exception unwinding past its block)."""
        with self._lock:
            if self._progress is not None:
                self._progress.stop()
                self._progress = None

    def note(self, message: str) -> None:
        self.console.print(message, highlight=False, markup=False, soft_wrap=True)


_display: _Display | None = None


@contextmanager
def phase(description: str, total: int | None = None) -> Iterator[Phase]:
    """A line on the display for the ``with`` block (see the module docstring); a no-op
    :class:`Phase` when no display is on."""
    display = _display
    if display is None:
        yield Phase()
        return
    shown = display.start(description, total)
    try:
        yield shown
    finally:
        display.end(shown)


def note(message: str) -> None:
    """One line on stderr above the display, if a display is on."""
    display = _display
    if display is not None:
        display.note(message)


def enabled(show: bool | None) -> bool:
    """``--progress`` (True), ``--no-progress`` (False) or auto (None: stderr is a terminal)."""
    return sys.stderr.isatty() if show is None else show


@contextmanager
def reporting(show: bool | None) -> Iterator[None]:
    """Turns the display on for the block if :func:`enabled` (forced on, it draws on stderr
    even when stderr is not a terminal), and shows the S3 read client's retries as notes."""
    global _display
    if not enabled(show) or _display is not None:
        yield
        return
    from rich.console import Console

    from deltaguard.logstore.clients import RetryNotice, set_retry_listener

    def retried(notice: RetryNotice) -> None:
        note(notice.message())

    _display = _Display(Console(stderr=True, force_terminal=True if show else None))
    set_retry_listener(retried)
    try:
        yield
    finally:
        set_retry_listener(None)
        display, _display = _display, None
        if display is not None:
            display.close()


def progress_option(f: F) -> F:
    """``--progress/--no-progress`` on a click command: runs the command inside
    :func:`reporting` (the parameter never reaches the command's function)."""
    import click

    @functools.wraps(f)
    def run(*args: Any, progress: bool | None, **kwargs: Any) -> Any:
        with reporting(progress):
            return f(*args, **kwargs)

    return click.option(
        "--progress/--no-progress",
        default=None,
        help="show what long phases are doing on stderr (default: when stderr is a terminal)",
    )(run)  # type: ignore[return-value]
