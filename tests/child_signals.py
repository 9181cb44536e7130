"""What a test's child process needs to receive the signals the test sends it."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """``preexec_fn`` of a child the test will interrupt: SIGINT back to its default action, so
    the child's Python installs its KeyboardInterrupt handler even when the test run itself was
    started with SIGINT ignored (a background job, ``cmd &`` in a non-interactive shell, which
    every child inherits)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
