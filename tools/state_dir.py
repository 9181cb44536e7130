"""Where deltaguard keeps what it writes about its own runs (cleanup manifests, the traces of
unexpected errors): never the working directory, so a run from inside a repository leaves
nothing in its work tree.

The state directory is ``$DELTAGUARD_STATE_DIR`` if set, else ``$XDG_STATE_HOME/deltaguard``,
else ``~/.local/state/deltaguard`` (the XDG Base Directory default). An explicit ``--manifest``
path always wins.
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path


def state_dir() -> Path:
    """The state directory (see the module docstring); not created here."""
    explicit = os.environ.get("DELTAGUARD_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg and Path(xdg).is_absolute() else None
    return (base or Path.home() / ".local" / "state") / "deltaguard"


def manifests_dir() -> Path:
    """``<state dir>/orphans``: where cleanup manifests go without ``--manifest``."""
    return state_dir() / "orphans"


def log_cleanup_manifests_dir() -> Path:
    """``<state dir>/log-cleanup``: where ``log-cleanup`` manifests go without ``--manifest``."""
    return state_dir() / "log-cleanup"


def trace_log_path(command: str, now: datetime) -> Path:
    """``<state dir>/logs/<command>-<UTC time>-<pid>.log``: where an unexpected error's full
    trace goes (:mod:`deltaguard.tools.cli_errors`), so the terminal shows one line."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", command).strip("-") or "deltaguard"
    stamp = now.strftime("%Y%m%dT%H%M%S.%fZ")
    return state_dir() / "logs" / f"{slug}-{stamp}-{os.getpid()}.log"
