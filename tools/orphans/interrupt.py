"""SIGINT and SIGTERM during ``orphans --delete --yes``: stop sending deletes, keep the record.

Contract of :func:`stop_on_signals` (both engines install it around their cleanup):

* **Before deleting begins** (the re-read of the log, the plan records) a signal raises
  :class:`CleanupStopped` at once: nothing has been deleted, so there is nothing to settle,
  and the re-read of a large table is not waited for.
* **Once armed** (:meth:`StopSignal.arm`, right before the ``deleting`` summary is written) a
  signal only sets the flag: no new delete request is sent after it (each batch and each
  retry asks :meth:`StopSignal.is_set` first, and the S3 client's own retries are refused,
  :mod:`deltaguard.tools.storage`), the requests already sent are waited for and
  their per-key answers recorded (or the batch recorded ``unknown``), and the summary ends
  ``interrupted``. A second signal changes nothing: the answers in flight are still read
  (a request is bounded by the client's timeouts). ``on_stop`` callbacks run once, on the
  first signal, in a thread of their own (the Spark engine cancels its delete job there).
* The previous handlers come back when the context ends. Outside the main thread (signals
  cannot be caught there) the context only provides the flag.

The exit code of an interrupted cleanup is
:attr:`~deltaguard.tools.exit_codes.ExitCode.INTERRUPTED`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

#: The signals that stop a cleanup.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class CleanupStopped(KeyboardInterrupt):
    """A stop signal arrived before deleting began: nothing was deleted. ``signal_name``:
    ``SIGINT`` or ``SIGTERM``."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


class StopSignal:
    """The stop flag of one cleanup (see the module docstring). Thread-safe."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._armed = False
        self._callbacks: list[Callable[[], None]] = []
        self.signal_name: str | None = None

    def is_set(self) -> bool:
        return self._event.is_set()

    def arm(self) -> None:
        """From now on a signal sets the flag instead of raising :class:`CleanupStopped`."""
        self._armed = True

    def on_stop(self, callback: Callable[[], None]) -> None:
        """Runs ``callback`` (in a thread of its own) when the flag is first set."""
        self._callbacks.append(callback)

    def stop(self, signal_name: str) -> None:
        """Sets the flag as a signal named ``signal_name`` does (once: later calls only
        return). Raises :class:`CleanupStopped` if not armed yet."""
        if not self._event.is_set():
            self.signal_name = signal_name
            self._event.set()
            for callback in self._callbacks:
                threading.Thread(target=callback, name="stop-callback", daemon=True).start()
        if not self._armed:
            raise CleanupStopped(self.signal_name or signal_name)


@contextmanager
def stop_on_signals(
    on_signal: Callable[[str], None] | None = None,
) -> Iterator[StopSignal]:
    """A :class:`StopSignal` that SIGINT and SIGTERM set while the context is open (module
    docstring). ``on_signal(name)`` is called for each signal once the flag is armed (the
    command's "stopping" line)."""
    stop = StopSignal()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if stop._armed and on_signal is not None:
            on_signal(name)
        stop.stop(name)

    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield stop
    finally:
        for s, old in previous.items():
            signal.signal(s, old)
