"""Signals and a closed stdout keep the exit codes' meaning (tools/exit_codes.py), for every
command, read-only ones included: a real ``deltaguard`` process, a real signal, sent once the
command provably runs (a request reached the endpoint, or a line was read from its stdout),
never after a sleep.

* SIGINT / SIGTERM: exactly one line ``deltaguard <command>: interrupted ...`` on stderr and
  130 / 143, at once, also while worker threads wait on S3 (a fake endpoint that lists the
  log and never answers a GET).
* A reader that closes stdout (``| head -1``): the command dies of SIGPIPE, silently, as
  coreutils and git do (a shell reports 141), never 1 ("needs attention").
"""

from __future__ import annotations

import errno
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from child_signals import default_sigint

from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.tools.exit_codes import ExitCode

DELTAGUARD = str(Path(sys.executable).with_name("deltaguard"))
T0_MS = 1_700_000_000_000
#: Commits of the fake endpoint's table: more than the reading threads, so GETs are in flight.
COMMITS = 30
ENV = {
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_MAX_ATTEMPTS": "1",
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_REGION": "us-east-1",
}


class _SlowS3(BaseHTTPRequestHandler):
    """Lists ``lake/t/_delta_log/`` as COMMITS commit files; a GET of an object (or any other
    request) is held until the test ends; the first sets ``server.hanging``."""

    server: _Server

    def log_message(self, *_args: object) -> None:
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        if parts.path.rstrip("/") == "/lake" and "list-type" in query:
            prefix = query.get("prefix", [""])[0]
            keys = [f"t/_delta_log/{v:020d}.json" for v in range(COMMITS)]
            keys = (
                [k for k in keys if k.startswith(prefix)] if prefix.endswith("_delta_log/") else []
            )
            body = "".join(
                f"<Contents><Key>{k}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
                f'<Size>100</Size><ETag>"x"</ETag></Contents>'
                for k in keys
            )
            xml = (
                '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
                f"<Name>lake</Name><Prefix>{prefix}</Prefix><KeyCount>{len(keys)}</KeyCount>"
                f"<MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>{body}</ListBucketResult>"
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(xml)))
            self.end_headers()
            self.wfile.write(xml)
            return
        self._hang()

    def do_HEAD(self) -> None:
        self._hang()

    def do_PUT(self) -> None:
        self._hang()

    def do_POST(self) -> None:
        self._hang()

    def _hang(self) -> None:
        self.server.hanging.set()
        self.server.done.wait(60)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    hanging: threading.Event
    done: threading.Event


@contextmanager
def slow_s3() -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), _SlowS3)
    server.hanging, server.done = threading.Event(), threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.done.set()
        server.shutdown()
        server.server_close()


#: Every command that reaches AWS, with its arguments (``{url}``: the fake endpoint, which holds
#: the first request that is not a listing of the log).
S3_COMMANDS = {
    "history": ["history", "s3://lake/t", "--endpoint-url", "{url}", "--path-style"],
    "audit": ["audit", "s3://lake/t", "--endpoint-url", "{url}", "--path-style"],
    "probe": ["probe", "s3://lake/t", "--endpoint-url", "{url}", "--path-style"],
    "repair": ["repair", "s3://lake/t", "--endpoint-url", "{url}", "--path-style"],
    "checkpoint": ["checkpoint", "s3://lake/t", "--endpoint-url", "{url}", "--path-style"],
    "orphans": ["orphans", "s3://lake/t", "--endpoint-url", "{url}", "--path-style"],
    "log-cleanup": ["log-cleanup", "s3://lake/t", "--endpoint-url", "{url}", "--path-style"],
    "migrate status": ["migrate", "status", "s3://lake/t", "--endpoint-url", "{url}",
                       "--path-style", "--dynamodb-table", "d", "--dynamodb-endpoint", "{url}"],
    "dynamodb create-table": ["dynamodb", "create-table", "d", "--endpoint-url", "{url}"],
}  # fmt: skip


def _start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [DELTAGUARD, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or {**os.environ, **ENV},
        preexec_fn=default_sigint,
    )


def _stopped(command: str, proc: subprocess.Popen[str], signum: int) -> None:
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=30)
    code = ExitCode.SIGINT if signum == signal.SIGINT else ExitCode.SIGTERM
    assert proc.returncode == code, (command, proc.returncode, stdout, stderr)
    lines = stderr.splitlines()
    assert len(lines) == 1, (command, stderr)
    assert lines[0].startswith(f"deltaguard {command}: interrupted"), (command, stderr)
    assert "Traceback" not in stdout + stderr


def _signal_cases() -> list[Any]:
    """Each command that reaches AWS with one signal (alternating), repair and checkpoint with
    both (they handle Ctrl-C themselves); history's SIGINT (the issue's case) in the quick
    loop, the others ``slow`` (a process start each)."""
    cases = []
    both = ("checkpoint", "repair")
    for i, command in enumerate([*sorted(set(S3_COMMANDS) - set(both)), *both]):
        signals = (signal.SIGINT, signal.SIGTERM) if command in both else (
            (signal.SIGINT, signal.SIGTERM)[i % 2],)  # fmt: skip
        for signum in signals:
            quick = command == "history" and signum == signal.SIGINT
            cases.append(
                pytest.param(
                    command,
                    signum,
                    id=f"{command}-{signum.name}",
                    marks=() if quick else (pytest.mark.slow,),
                )
            )
    return cases


@pytest.mark.parametrize(("command", "signum"), _signal_cases())
def test_a_signal_while_waiting_on_aws_is_one_line(command, signum):
    """Ctrl-C or SIGTERM while the command waits for AWS (worker threads included): one line,
    130 / 143, without waiting for the requests in flight."""
    with slow_s3() as server:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        proc = _start([a.replace("{url}", url) for a in S3_COMMANDS[command]])
        assert server.hanging.wait(30), "the command reached the endpoint"
        _stopped(command, proc, signum)


@contextmanager
def _reader_waiting_on(fifo: Path) -> Iterator[int]:
    """Opens ``fifo`` for writing once a reader holds it open (the command blocked on it: an
    ``O_NONBLOCK`` open fails with ENXIO until then), and yields the descriptor; the reader's
    ``read`` then blocks until it is closed."""
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            select.select([], [], [], 0.01)  # poll for the reader's open, not a race
    try:
        yield fd
    finally:
        os.close(fd)


def _local_table(root: Path, commits: int = 3, app_id_chars: int = 1) -> SyntheticTable:
    """A table of ``commits`` commits after the first, each with a txn whose app id is that
    long (what history prints in every format)."""
    t = SyntheticTable(root)
    t.create(T0_MS)
    for i in range(commits):
        txn = {"txn": {"appId": f"{i}" + "x" * app_id_chars, "version": i}}
        t.commit([txn], T0_MS + 1 + i)
    return t


@pytest.mark.parametrize(
    ("command", "signum"),
    [
        pytest.param("conf check", signal.SIGTERM, id="conf-check-SIGTERM"),
        pytest.param("history", signal.SIGINT, id="history-SIGINT", marks=pytest.mark.slow),
    ],
)
def test_a_signal_while_reading_a_local_file_is_one_line(tmp_path, command, signum):
    """Local commands too: a FIFO where the command reads (a commit file, a properties file)
    holds it in ``read`` until the signal."""
    fifo = tmp_path / "fifo"
    if command == "history":
        t = _local_table(tmp_path / "t")
        fifo = t.log / f"{1:020d}.json"
        fifo.unlink()
        args = ["history", str(t.root)]
    else:
        args = ["conf", "check", str(fifo)]
    os.mkfifo(fifo)
    proc = _start(args)
    with _reader_waiting_on(fifo):
        _stopped(command, proc, signum)


#: A child whose main thread reads a FIFO with SIGINT blocked, so another of its threads takes
#: the signal and the read is not cut short by it: the case of a signal that came just before
#: the read began. ``argv``: the FIFO, and whether to run under the nudging thread.
_BLOCKED_READER = """
import os, signal, sys, threading
from contextlib import nullcontext
from deltaguard.tools.cli_signals import interrupts_cut_blocking_calls
fifo, nudged = sys.argv[1], sys.argv[2] == "nudged"
with interrupts_cut_blocking_calls() if nudged else nullcontext():
    threading.Thread(target=threading.Event().wait, daemon=True).start()  # takes the signal
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    fd = os.open(fifo, os.O_RDWR)  # a FIFO open for both ends: the read waits for data
    print(fd, flush=True)
    try:
        os.read(fd, 1)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
"""


#: The ``read`` system call's number, as ``/proc/<pid>/syscall`` shows it.
_READ_SYSCALL = {"x86_64": 0, "aarch64": 63}[os.uname().machine]


def _wait_until_blocked_in_read(pid: int, fd: int) -> None:
    """Returns once the main thread of ``pid`` is inside ``read(fd, ...)`` (its
    ``/proc/<pid>/syscall``), so a signal sent next arrives while the read blocks, never
    before it began (the main thread would then take it between bytecodes)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
        if fields[:1] == [str(_READ_SYSCALL)] and int(fields[1], 16) == fd:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never blocked in read({fd})")


@pytest.mark.parametrize("nudged", [True, False], ids=["nudged", "not-nudged"])
def test_an_interrupt_that_missed_a_blocking_read_still_ends_it(tmp_path, nudged):
    """The CLI's nudging thread (:func:`deltaguard.tools.cli_signals.interrupts_cut_blocking_calls`):
    a SIGINT that did not cut the main thread's read short (another thread took it) ends the
    read at once, as ``KeyboardInterrupt``; without the thread the read stays blocked (the
    control: the case is real)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-c", _BLOCKED_READER, str(fifo), "nudged" if nudged else "plain"],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        assert proc.stdout is not None
        _wait_until_blocked_in_read(proc.pid, int(proc.stdout.readline()))
        proc.send_signal(signal.SIGINT)
        if nudged:
            assert proc.communicate(timeout=30)[0] == "interrupted\n"
        else:
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(timeout=2)
    finally:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize(
    ("fmt", "unbuffered"),
    [
        pytest.param("tsv", "1", id="tsv"),
        pytest.param("text", "", id="text", marks=pytest.mark.slow),
        pytest.param("json", "", id="json", marks=pytest.mark.slow),
    ],
)
def test_a_closed_stdout_is_sigpipe_not_a_finding(tmp_path, fmt, unbuffered):
    """``deltaguard history T | head -1`` with far more to write than a pipe holds: the command
    is still writing when the reader closes, and dies of SIGPIPE, silently (a shell reports
    141), every time (a shell pipeline, then a reader that closes after one line); also with an
    unbuffered stdout (tsv: ``PYTHONUNBUFFERED``), whose short writes Python's text layer would
    otherwise drop without an error."""
    t = _local_table(tmp_path / "t", commits=40, app_id_chars=4096)  # > 160 KiB, a pipe holds 64
    env = {**os.environ, **ENV, "PYTHONUNBUFFERED": unbuffered}
    shell = subprocess.run(
        ["bash", "-c", f'"$0" history "$1" --format {fmt} | head -1 >/dev/null; '
         'echo "${PIPESTATUS[0]}" >&2', DELTAGUARD, str(t.root)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert shell.stderr == f"{128 + signal.SIGPIPE}\n", shell.stderr
    proc = _start(["history", str(t.root), "--format", fmt], env=env)
    assert proc.stdout is not None
    assert proc.stdout.readline()
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=60)
    assert (proc.returncode, stderr) == (-signal.SIGPIPE, "")
