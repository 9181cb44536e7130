"""Every failure of every ``deltaguard`` command is one line, ``deltaguard <command>: <what>``,
on stderr, with the documented exit code, and never a traceback (tools/cli_errors.py).

The matrix is built from the click group itself: each command found in it gets the bad inputs
its parameters admit (a TABLE argument: malformed URIs, missing, non-Delta and damaged tables,
S3 with an unknown profile, no credentials or a dead endpoint; an endpoint option: a URL
without a scheme; ``--profile``: an unknown profile; a number or duration option: a negative
value; every command: an unknown option), so a new command is covered without editing this
file. Cases run in-process (click's runner; boto3's default session, which reads the AWS
settings once, is reset for each), the few that need a process of their own (a missing module,
a signal) in a subprocess; no Spark JVM starts.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from test_packaging import cli_commands

from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.tools.cli import main
from deltaguard.tools.cli_options import (
    MAX_DURATION_HOURS,
    Duration,
    EndpointURL,
    TableLocation,
    describe_range,
)
from deltaguard.tools.exit_codes import ExitCode

DELTAGUARD = str(Path(sys.executable).with_name("deltaguard"))
T0_MS = 1_700_000_000_000
UNREADABLE = int(ExitCode.UNREADABLE)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


DEAD = f"http://127.0.0.1:{_closed_port()}"
#: AWS settings of a machine with nothing configured, one attempt per request (a dead endpoint
#: fails at once) and dummy credentials; cases override parts of it.
AWS_BASE = {
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_MAX_ATTEMPTS": "1",
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_PROFILE": None,
    "AWS_DEFAULT_PROFILE": None,
    "AWS_REGION": None,
    "AWS_DEFAULT_REGION": None,
    "AWS_SESSION_TOKEN": None,
}


@dataclass(frozen=True)
class Case:
    command: tuple[str, ...]
    bad: str
    args: tuple[str, ...]
    code: int = UNREADABLE
    env: dict[str, str | None] = field(default_factory=dict)
    #: Words the line must hold.
    words: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{' '.join(self.command)}:{self.bad}"


def _params(command: tuple[str, ...]) -> list[click.Parameter]:
    cmd: click.Command = main
    for name in command:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[name]
    return list(cmd.params)


def _required(command: tuple[str, ...]) -> list[str]:
    """Values for the command's required options other than what a case is about."""
    out: list[str] = []
    for p in _params(command):
        if isinstance(p, click.Option) and p.required:
            out += [p.opts[0], "x"]
    return out


def _table_arg(command: tuple[str, ...]) -> bool:
    return any(
        isinstance(p, click.Argument) and isinstance(p.type, TableLocation)
        for p in _params(command)
    )


def _positional(command: tuple[str, ...], table: str) -> list[str]:
    """Values for the command's arguments: TABLE is ``table``; a file argument a missing file,
    a choice its first choice, anything else ``x``."""
    out: list[str] = []
    for p in _params(command):
        if not isinstance(p, click.Argument):
            continue
        if isinstance(p.type, TableLocation):
            out.append(table)
        elif isinstance(p.type, click.Choice):
            out.append(str(p.type.choices[0]))
        else:
            out.append("x")
    return out


def _s3_options(command: tuple[str, ...]) -> list[str]:
    names = {o for p in _params(command) if isinstance(p, click.Option) for o in p.opts}
    args = []
    for option in ("--endpoint", "--dynamodb-endpoint"):
        if option in names:
            args += [option, DEAD]
    return args


def _above(param_type: click.ParamType) -> str:
    """A value just above a numeric option's documented range."""
    if isinstance(param_type, Duration):
        return f"{MAX_DURATION_HOURS + 1}h"
    assert isinstance(param_type, click.IntRange | click.FloatRange)
    assert param_type.max is not None, "every numeric option has a maximum"
    return str(param_type.max + 1)


def cases(tables: dict[str, str]) -> list[Case]:
    """The matrix (see the module docstring). ``tables``: local tables by what is wrong."""
    found: list[Case] = []
    for path in cli_commands(main, []):
        command = tuple(path)
        params = _params(command)
        options = [p for p in params if isinstance(p, click.Option)]
        base = [*_positional(command, tables["good"]), *_required(command)]
        found.append(Case(command, "unknown-option", (*base, "--no-such-option"), 2))
        for p in options:
            name = p.opts[0]
            if isinstance(p.type, EndpointURL):
                found.append(
                    Case(
                        command,
                        f"endpoint{name}",
                        (*base, name, "127.0.0.1:9000"),
                        2,
                        words=(name,),
                    )
                )
            if isinstance(p.type, click.IntRange | Duration | click.FloatRange):
                found.append(
                    Case(command, f"negative{name}", (*base, name, "-5"), 2, words=(name,))
                )
                found.append(
                    Case(command, f"not-a-number{name}", (*base, name, "abc"), 2, words=(name,))
                )
                found.append(
                    Case(command, f"too-large{name}", (*base, name, _above(p.type)), 2,
                         words=(name,))
                )  # fmt: skip
            if isinstance(p.type, click.Choice):
                found.append(
                    Case(command, f"choice{name}", (*base, name, "bogus"), 2, words=(name,))
                )
            if name == "--profile":
                found.append(
                    Case(command, "profile-option", (*base, name, "typo"), 2, words=("typo",))
                )
        for p in params:
            if isinstance(p, click.Argument) and isinstance(p.type, click.Path):
                missing = [tables["missing"] if a == "x" else a for a in base]
                found.append(Case(command, f"missing-{p.name}", tuple(missing), 2,
                                  words=("no-such-table",)))  # fmt: skip
        if not _table_arg(command):
            continue

        def args(table: str, command: tuple[str, ...] = command) -> tuple[str, ...]:
            return (*_positional(command, table), *_required(command))

        s3 = (*args("s3://lake/t"), *_s3_options(command))
        arg = next(
            p for p in params if isinstance(p, click.Argument) and isinstance(p.type, TableLocation)
        )
        for uri in ("s3:/lake/t", "s3://"):
            found.append(
                Case(command, f"uri {uri}", args(uri), 2, words=(arg.human_readable_name,))
            )
        found += [
            Case(command, "aws-profile-env", s3, env={"AWS_PROFILE": "typo"}, words=("typo",)),
            Case(command, "no-credentials", s3,
                 env={"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None},
                 words=("credentials",)),
            Case(command, "dead-endpoint", s3, words=(DEAD.split("//")[1],)),
        ]  # fmt: skip
        if command == ("probe",):
            continue  # S3 only: a local path is a malformed URI, covered above
        ddb = _s3_options(command)  # migrate status reads DynamoDB after the log
        found += [
            Case(command, "missing-path", (*args(tables["missing"]), *ddb),
                 words=("does not exist",)),
            Case(command, "not-delta", (*args(tables["empty"]), *ddb),
                 words=("not a Delta table",)),
            Case(command, "damaged-commit", (*args(tables["damaged_commit"]), *ddb),
                 words=() if ddb else ("00000000000000000001.json",)),
            Case(command, "damaged-checkpoint", (*args(tables["damaged_checkpoint"]), *ddb),
                 code=0 if command == ("history",) else UNREADABLE),
        ]  # fmt: skip
    return found


def _tables(root: Path) -> dict[str, str]:
    good = SyntheticTable(root / "good")
    good.create(T0_MS)
    damaged = SyntheticTable(root / "damaged_commit")
    damaged.create(T0_MS)
    rel = damaged.write_file("p=a/part-0.parquet", T0_MS)
    damaged.commit([{"add": damaged.add_action(rel, T0_MS)}], T0_MS + 1)
    with (damaged.log / "00000000000000000001.json").open("a") as f:
        f.write('{"add": {"path": \n')
    checkpointed = SyntheticTable(root / "damaged_checkpoint")
    checkpointed.create(T0_MS)
    for i in range(2):
        rel = checkpointed.write_file(f"p=a/part-{i}.parquet", T0_MS)
        checkpointed.commit([{"add": checkpointed.add_action(rel, T0_MS)}], T0_MS + 1 + i)
    (checkpointed.log / "00000000000000000002.checkpoint.parquet").write_bytes(b"not parquet")
    (checkpointed.log / "_last_checkpoint").write_text(json.dumps({"version": 2, "size": 3}))
    for v in (0, 1):  # cleaned up: the checkpoint is the only way to version 2
        (checkpointed.log / f"{v:020d}.json").unlink()
    (root / "empty").mkdir()
    return {
        "good": str(good.root),
        "damaged_commit": str(damaged.root),
        "damaged_checkpoint": str(checkpointed.root),
        "empty": str(root / "empty"),
        "missing": str(root / "no-such-table"),
    }


#: Built with placeholders (``<good>``): the ids must not depend on where the tables are.
MATRIX = cases(
    {k: f"<{k}>" for k in ("good", "damaged_commit", "damaged_checkpoint", "empty", "missing")}
)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _tables(tmp_path_factory.mktemp("failure-tables"))


def _fill(args: tuple[str, ...], tables: dict[str, str]) -> list[str]:
    """The case's arguments with the ``<kind>`` placeholders replaced by the tables' paths."""
    return [tables[a[1:-1]] if a.startswith("<") and a[1:-1] in tables else a for a in args]


def check_one_line(case: Case, code: int, stdout: str, stderr: str) -> None:
    everything = stdout + stderr
    assert "Traceback" not in everything, everything
    assert code == case.code, (case.id, code, stdout, stderr)
    if code in (0, 1):
        return
    prefix = f"deltaguard {' '.join(case.command)}: "
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, (case.id, stderr)
    assert lines[0].startswith(prefix), (case.id, stderr)
    for word in case.words:
        assert word in lines[0], (case.id, word, stderr)


@pytest.mark.parametrize("case", MATRIX, ids=[c.id for c in MATRIX])
def test_every_failure_is_one_line_with_its_exit_code(case: Case, tables, tmp_path, monkeypatch):
    args = _fill(case.args, tables)
    env = {**AWS_BASE, "DELTAGUARD_STATE_DIR": str(tmp_path / "state"), **case.env}
    import boto3

    # boto3's default session resolves the profile and credentials once per process
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    result = CliRunner().invoke(main, [*case.command, *args], env=env)
    check_one_line(case, result.exit_code, result.stdout, result.stderr)


def test_every_command_is_in_the_matrix():
    covered = {c.command for c in MATRIX}
    assert covered == {tuple(p) for p in cli_commands(main, [])}
    bad = {c.bad for c in MATRIX}
    for kind in ("uri s3:/lake/t", "uri s3://", "aws-profile-env", "no-credentials",
                 "dead-endpoint", "missing-path", "not-delta", "damaged-commit",
                 "damaged-checkpoint", "profile-option", "endpoint--endpoint",
                 "negative--retention"):  # fmt: skip
        assert kind in bad, kind


def test_every_numeric_option_has_documented_bounds():
    """Each integer, float or duration option of every command has a maximum as well as a
    minimum, written next to it in docs/reference/cli.md (docs/generate.py): the
    ``too-large`` cases above check that a value past it is exit 2 naming the option
    (``orphans --retention 99999999999999`` was exit 70, a pyarrow overflow)."""
    reference = (Path(__file__).resolve().parents[1] / "docs/reference/cli.md").read_text()
    numeric = []
    for path in cli_commands(main, []):
        for p in _params(tuple(path)):
            assert p.type not in (click.INT, click.FLOAT), (path, p.name, "an unbounded number")
            bounds = describe_range(p.type)
            if isinstance(p, click.Option) and bounds is not None:
                numeric.append(p.opts[0])
                assert "<=x<=" in bounds or "<x<=" in bounds, (path, p.opts, bounds)
                assert bounds.replace("|", "\\|") in reference, (path, p.opts, bounds)
    assert len(numeric) >= 9, numeric
    assert {f"too-large{o}" for o in numeric} <= {c.bad for c in MATRIX}


def test_a_missing_optional_dependency_is_named(tables, tmp_path):
    """``--engine spark`` from a wheel without the spark extra: pyspark and py4j cannot be
    imported (a directory first on the path makes them fail as if absent)."""
    blocker = tmp_path / "no-spark"
    for name in ("pyspark", "py4j"):
        (blocker / name).mkdir(parents=True)
        (blocker / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {name!r}'!r}, name={name!r})\n"
        )
    path = os.pathsep.join(filter(None, [str(blocker), os.environ.get("PYTHONPATH")]))
    for command in ("orphans", "audit"):
        done = subprocess.run(
            [DELTAGUARD, command, tables["good"], "--engine", "spark"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": path},
        )
        case = Case((command,), "no-pyspark", (), words=("deltaguard[spark]",))
        check_one_line(case, done.returncode, done.stdout, done.stderr)


def test_an_unexpected_error_is_one_line_naming_its_trace(tables, tmp_path, monkeypatch):
    """A bug: exit 70, one line naming the log file with the trace; --debug prints it."""
    import deltaguard.tools.deltalog.history as history

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("something deltaguard did not expect")

    monkeypatch.setattr(history, "read_history", broken)
    env = {"DELTAGUARD_STATE_DIR": str(tmp_path / "state"), "DELTAGUARD_DEBUG": None}
    result = CliRunner().invoke(main, ["history", tables["good"]], env=env)
    assert result.exit_code == ExitCode.UNEXPECTED == 70
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("deltaguard history: unexpected error RuntimeError: something")
    (log,) = (tmp_path / "state" / "logs").iterdir()
    assert str(log) in line and "Traceback" in log.read_text()
    debug = CliRunner().invoke(main, ["--debug", "history", tables["good"]], env=env)
    assert debug.exit_code == 70 and "Traceback" in debug.stderr


def test_a_bare_group_prints_its_help():
    """Not a failure line: ``deltaguard conf`` shows what it holds (click's exit code 2)."""
    result = CliRunner().invoke(main, ["conf"])
    assert result.exit_code == 2 and "Usage: deltaguard conf" in result.stderr
    assert "render" in result.stderr and "check" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["packages", "--spark-version", "4.0", "--hadoop-version", "3.3.4"],
        ["jar", "--spark-version", "3.5", "--hadoop-version", "9.9.9"],
        ["conf", "render", "s3-single-driver"],
        ["conf", "render", "s3-dynamodb", "--ttl", "5"],
    ],
)
def test_a_refused_setting_is_exit_2(args):
    """Settings the command refuses (not click's usage errors): one line, exit 2."""
    result = CliRunner().invoke(main, args)
    command = tuple(a for a in args[:2] if not a.startswith("-"))
    command = command[:2] if command[0] == "conf" else command[:1]
    check_one_line(Case(command, "refused", ()), result.exit_code, result.stdout, result.stderr)
