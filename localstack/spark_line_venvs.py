"""One cached virtualenv per Spark line, so a test can start a driver on Spark 3.5 or 4.0 next to
the project's own (newest) line. The ``3.5-hadoop3.4`` line is pyspark 3.5 with Hadoop 3.4.1's
client jars ahead of its own 3.3.4 (as in a Spark 3.5 built on Hadoop 3.4).

:func:`ensure` installs, on first use, ``$DELTAGUARD_CACHE/spark-lines/<line>-<hash>/`` (one per line and checkout): the
line's pyspark and delta-spark (``SparkLine.pip``), this checkout of deltaguard (editable, with
its own dependencies, so it also proves the package installs next to that pyspark) and of its
test bed (``localstack/``, a development-only distribution: see ``pyproject.toml``), and the
line's runtime jars (resolved by the venv's own interpreter, which knows its pyspark's jars).
A stamp records the inputs; later calls with the same inputs return at once. One installer
at a time (a file lock), as for the LocalStack test bed.

``python -m deltaguard.localstack.spark_line_venvs 3.5 4.0`` (``make spark-lines``) installs
ahead of the tests.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from deltaguard.spark_conf.jvm_deps import cache_dir
from deltaguard.spark_conf.spark_lines import LINE_MARKER, SparkLine, by_name

REPO = Path(__file__).resolve().parents[1]
#: The test bed's own distribution (development only), installed next to deltaguard.
TESTBED_PYPROJECT = REPO / "localstack" / "pyproject.toml"


class LineVenvError(RuntimeError):
    """A line's virtualenv could not be installed; the message holds the installer's output."""


def _uv() -> str:
    return os.environ.get("UV") or str(cache_dir() / "bootstrap" / "bin" / "uv")


def _inputs(line: SparkLine) -> str:
    pyprojects = (REPO / "pyproject.toml").read_bytes() + TESTBED_PYPROJECT.read_bytes()
    digest = hashlib.sha256(pyprojects + repr(line).encode()).hexdigest()[:12]
    return f"{line.name} {' '.join(line.pip)} {digest} {REPO}"


def venv_dir(line: SparkLine) -> Path:
    """One per line and checkout: the venv holds this checkout as an editable install, and
    several checkouts share the cache."""
    digest = hashlib.sha256(f"{' '.join(line.pip)} {REPO}".encode()).hexdigest()[:8]
    return cache_dir() / "spark-lines" / f"{line.name}-{digest}"


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if result.returncode != 0:
        raise LineVenvError(
            f"{' '.join(cmd)} failed ({result.returncode}):\n"
            f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )


def ensure(line: SparkLine) -> Path:
    """The Python interpreter of ``line``'s virtualenv, installed if needed. Raises
    LineVenvError (naming the failed command) if it cannot be installed."""
    venv = venv_dir(line)
    python = venv / "bin" / "python"
    stamp = venv / ".deltaguard-stamp"
    want = _inputs(line)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with (venv.parent / f"{venv.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and stamp.read_text() == want and python.is_file():
            return python
        started = time.monotonic()
        print(f"[spark_line_venvs] installing Spark line {line.name} into {venv}", file=sys.stderr)
        shutil.rmtree(venv, ignore_errors=True)
        uv = _uv()
        _run([uv, "venv", "-q", "-p", "python3.11", str(venv)])
        if not line.pip_hadoop:
            # pyspark ships another Hadoop: the venv names its line, whose runtime jars put
            # this line's Hadoop client ahead of pyspark's (a Spark built on that Hadoop).
            (venv / LINE_MARKER).write_text(line.name)
        env = {**os.environ, "VIRTUAL_ENV": str(venv)}
        env.pop("PYTHONPATH", None)
        install = ["-e", f"{REPO}[test]", "-e", str(TESTBED_PYPROJECT.parent), *line.pip]
        _run([uv, "pip", "install", "-q", *install], env=env)
        _run([str(python), "-m", "deltaguard.spark_conf.jvm_deps"], env=env)
        stamp.write_text(want)
        print(
            f"[spark_line_venvs] Spark line {line.name} ready in "
            f"{time.monotonic() - started:.0f} s",
            file=sys.stderr,
        )
    return python


def main(names: list[str]) -> int:
    for name in names:
        print(ensure(by_name(name)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
