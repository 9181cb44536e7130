"""How SIGINT and SIGTERM reach a running ``deltaguard`` command: both stop it at once, even
when its main thread is blocked in a system call (:mod:`deltaguard.tools.cli_errors` turns
what they raise into the command's one line and exit code).

- :func:`sigterm_raises`: SIGTERM raises :class:`~deltaguard.tools.exit_codes.Terminated`, as
  SIGINT raises ``KeyboardInterrupt``.
- :func:`interrupts_cut_blocking_calls`: Python runs a signal's handler in the main thread,
  between bytecodes or when a system call the signal cut short returns (EINTR). A signal that
  arrives after the main thread's last such check and before it enters a blocking call (the
  read of a FIFO, of a socket whose peer holds the answer) interrupts nothing: the call would
  wait until its data came, or forever. So a thread that does nothing else learns of each
  handled signal from Python's wakeup fd and, after a SIGINT or SIGTERM, sends the main
  thread a no-op signal (:data:`NUDGE`) every :data:`NUDGE_EVERY_S` seconds until the command
  ends: the blocking call returns EINTR and the pending handler runs.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType

from deltaguard.tools.exit_codes import Terminated

#: The signal that cuts short the main thread's blocking call after an interrupt; its
#: handler does nothing.
NUDGE = signal.SIGUSR1
#: How often the main thread is nudged after an interrupt, until the command ends.
NUDGE_EVERY_S = 0.05
_STOPS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`~deltaguard.tools.exit_codes.Terminated` while the command runs
    (when the process left it at the default, on the main thread), so it ends as one line and
    exit 143, not a silent kill. A command that needs its own handling (a cleanup settling its
    deletes) installs its own handler over this one."""

    def terminated(_signum: int, _frame: FrameType | None) -> None:
        raise Terminated()

    installed = _on_main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    if installed:
        signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        if installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def interrupts_cut_blocking_calls() -> Iterator[None]:
    """For the block, the nudging thread of the module docstring (on the main thread only:
    elsewhere Python delivers no signal to the block). Its own signal mask blocks every signal,
    so the kernel never picks it to take SIGINT or SIGTERM."""
    if not _on_main_thread():
        yield
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    done = threading.Event()
    main = threading.main_thread().ident
    assert main is not None

    def nudge_after_interrupt() -> None:
        while not done.is_set():
            if _STOPS.intersection(os.read(read_end, 256)):
                while not done.wait(NUDGE_EVERY_S):
                    signal.pthread_kill(main, NUDGE)

    previous_nudge = signal.signal(NUDGE, _ignore)
    # the thread starts with every signal blocked (it inherits this thread's mask)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        watcher = threading.Thread(target=nudge_after_interrupt, name="nudge", daemon=True)
        watcher.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        done.set()
        with suppress(BlockingIOError):  # full: the thread is nudging, and `done` ends that
            os.write(write_end, b"\0")  # wakes the thread if it waits for a signal
        watcher.join()
        signal.signal(NUDGE, previous_nudge)
        os.close(read_end)
        os.close(write_end)


def _ignore(_signum: int, _frame: FrameType | None) -> None:
    """:data:`NUDGE`'s handler: the nudge only cuts a blocking call short."""


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
