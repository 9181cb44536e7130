"""One measurement in a fresh process: ``python -m MODULE ARGS...`` whose last stdout line is a
JSON object (the sample)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def work_dir(prefix: str) -> Iterator[Path]:
    """A new temporary directory for one bench run, deleted when the block ends normally and
    kept when it raises (its worker logs are what the error points at; the path goes to
    stderr)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    except BaseException:
        print(f"bench: kept {path} (the logs of the failed run)", file=sys.stderr)
        raise
    shutil.rmtree(path, ignore_errors=True)
