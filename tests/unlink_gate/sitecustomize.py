"""A gate on local deletes, for the CLI processes of test_orphans_interrupt.py (this directory
goes on their PYTHONPATH; Python imports ``sitecustomize`` at start-up).

With ``DELTAGUARD_TEST_UNLINK_GATE=<dir>`` and ``DELTAGUARD_TEST_UNLINK_ROOT=<table root>``:
the first ``os.unlink`` of a file under the root runs; every later one waits until
``<dir>/go`` exists, after writing ``<dir>/held`` (once the first has returned). The deletes
are real, only their pace is the test's: a signal sent while ``held`` exists lands mid-run
by construction (one file gone, the others not), whatever the machine's load."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

_GATE = os.environ.get("DELTAGUARD_TEST_UNLINK_GATE")
_ROOT = os.environ.get("DELTAGUARD_TEST_UNLINK_ROOT")

if _GATE and _ROOT:
    _real_unlink = os.unlink
    _lock = threading.Lock()
    _first_done = threading.Event()
    _calls = 0

    def _gated_unlink(path: Any, *, dir_fd: int | None = None) -> None:
        global _calls
        if not os.fspath(path).startswith(str(_ROOT)):
            _real_unlink(path, dir_fd=dir_fd)
            return
        with _lock:
            _calls += 1
            first = _calls == 1
        if first:
            try:
                _real_unlink(path, dir_fd=dir_fd)
            finally:
                _first_done.set()
            return
        _first_done.wait()
        held = os.path.join(str(_GATE), "held")
        with _lock:
            if not os.path.exists(held):
                open(held, "w").close()
        while not os.path.exists(os.path.join(str(_GATE), "go")):
            time.sleep(0.005)
        _real_unlink(path, dir_fd=dir_fd)

    os.unlink = _gated_unlink
