"""One measurement in a fresh process: ``python -m MODULE ARGS...`` whose last stdout line is a
JSON object (the sample)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).parent.parent


def run_worker(
    module: str, args: list[str], log: Path, python: str | None = None
) -> dict[str, Any]:
    """Runs ``module`` with ``args`` from the repository root (with ``python``, default this
    interpreter, e.g. another Spark line's), its stderr appended to ``log``;
    returns the JSON object of its last stdout line with ``wall_s`` (the whole process) added.
    Raises RuntimeError naming the log if the process fails."""
    started = time.monotonic()
    with log.open("a") as err:
        proc = subprocess.run(
            [python or sys.executable, "-m", module, *args],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            check=False,
            cwd=REPO,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"{module} {' '.join(args)} failed (exit {proc.returncode}); see {log}")
    sample: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    sample["wall_s"] = round(time.monotonic() - started, 1)
    return sample
