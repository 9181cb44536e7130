"""Every `deltaguard` command shown in README.md and docs/**/*.md is checked, then run.

The commands are the lines starting with ``deltaguard`` in the fenced ``bash`` blocks, as
written. Each is parsed by the CLI's own click definitions (an unknown command or option, or a
bad value, fails the fast test). Then each is run for real, in order, by bash (redirections
included) with the installed ``deltaguard`` on PATH: S3 tables at ``s3://lake/<name>`` are
uploaded to LocalStack first (into a fresh bucket that stands for ``lake``) and ``--endpoint`` is pointed at it; local tables (``./events``)
are written in the working directory. Each command must end with the exit code
:data:`EXPECTED_EXIT` gives it (README's table: 0 nothing to act on, 1 findings or files to
clean, ...), and no traceback. Commands that start a Spark JVM (``--engine spark``) run in a
test of their own, marked ``spark``, so ``make test-fast`` leaves them out.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.localstack.table_copies import upload_table
from deltaguard.tools.cli import main

REPO = Path(__file__).resolve().parents[1]
#: README.md, then the commit-path guide (it renders the properties and creates the DynamoDB
#: table that later pages' commands use), then every other page by path.
SETUP_GUIDE = REPO / "docs" / "guides" / "commit-path.md"
DOCS = [
    REPO / "README.md",
    SETUP_GUIDE,
    *sorted(p for p in (REPO / "docs").rglob("*.md") if p != SETUP_GUIDE),
]
FENCE = re.compile(r"^```(\w*)\s*$")
SHELL_OPERATORS = {">", ">>", "|", "&&", ";", "2>"}
#: 2023-11-14: before every timestamp the docs time-travel to.
T0_MS = 1_700_000_000_000


#: The exit code of each documented command, keyed by the command as the docs show it (comment
#: cut off), on the tables this test builds: S3 tables and ``./events``, each with one file no
#: commit names. On S3 that file was uploaded just now (S3 sets the modification time), so it
#: is ``recent`` and there is nothing to clean (exit 0); in ``./events`` it is old (exit 1 for a
#: report or a dry run). The commands run in order (:data:`DOCS`: README.md, the commit-path guide, then docs/**/*.md by path),
#: once each. A new command in the docs needs its line here.
EXPECTED_EXIT: dict[str, int] = {
    "deltaguard jar": 0,
    "deltaguard packages --spark-version 3.5": 0,
    "deltaguard conf render s3-conditional --table-root s3://lake/events > lake.properties": 0,
    "deltaguard conf render s3-conditional --table-root s3://lake/entities > lake.properties": 0,
    "deltaguard conf render s3-conditional --spark-version 3.5 --table-root s3://lake/events": 0,
    "deltaguard conf render s3-dynamodb --table-root s3://lake/events --dynamodb-table delta_log "
    "--region eu-west-1": 0,
    "deltaguard conf check lake.properties": 0,
    "deltaguard conf render s3-dynamodb-transition --table-root s3://lake/events --dynamodb-table "
    "delta_log --region eu-west-1 > events.properties": 0,
    "deltaguard conf check events.properties": 0,
    "deltaguard probe s3://lake/events --endpoint https://s3.example.com --path-style": 0,
    "deltaguard dynamodb create-table delta_log --region eu-west-1": 0,
    "deltaguard audit s3://lake/events": 0,
    "deltaguard audit s3://lake/events --version 1 --json": 0,
    "deltaguard audit ./events --timestamp 2026-11-01T12:00:00": 0,
    "deltaguard audit ./events --no-check-files": 0,
    "deltaguard audit ./events --check exists": 0,
    "deltaguard audit s3a://lake/events --dynamodb-table delta_log --region eu-west-1": 0,
    "deltaguard history s3://lake/events --limit 20": 0,
    "deltaguard history s3://lake/events --limit 20 --json": 0,
    "deltaguard orphans s3://lake/events": 0,  # the uncommitted file is recent on S3
    "deltaguard log-cleanup s3://lake/events": 0,  # uploaded just now: nothing expired
    "deltaguard log-cleanup s3://lake/events --json > log-cleanup.json": 0,
    "deltaguard log-cleanup s3://lake/events --yes --manifest log-cleanups": 0,
    "deltaguard orphans s3://lake/events --delete": 0,
    "deltaguard orphans s3://lake/events --delete --yes --manifest deleted": 0,
    "deltaguard orphans s3://lake/events --json > orphans.json": 0,
    "deltaguard orphans s3://lake/events --format tsv > candidates.tsv": 0,
    "deltaguard history s3://lake/events --format tsv > commits.tsv": 0,
    "deltaguard repair s3://lake/events": 0,  # healthy: nothing to repair
    "deltaguard repair s3://lake/events --check exists --yes": 0,
    "deltaguard repair s3a://lake/events --commit-protocol dynamodb --dynamodb-table delta_log "
    "--region eu-west-1 --yes": 0,
    "deltaguard checkpoint s3://lake/events": 0,
    "deltaguard checkpoint s3://lake/events --version 0": 0,  # older: _last_checkpoint left
    "deltaguard checkpoint ./events --json": 0,
    "deltaguard checkpoint ./v2-table --v2-format parquet": 0,
    "deltaguard orphans events --engine spark --delete": 1,  # ./events: dry run, to clean
    # ./events-inventory: a Parquet USING INVENTORY table of ./events (_inventory)
    "deltaguard orphans ./events --inventory ./events-inventory --inventory-date "
    "2026-11-20T00:00:00Z": 1,
}


def shown_command(line: str) -> str:
    """A documented command line as :data:`EXPECTED_EXIT` keys it: its comment cut off."""
    return line.split("#", 1)[0].strip()


def doc_commands() -> list[tuple[str, str]]:
    """(``file:line``, command line) of every ``deltaguard`` line in a bash block."""
    found = []
    for path in DOCS:
        language = None
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            fence = FENCE.match(line.strip())
            if fence:
                language = None if language is not None else fence.group(1)
                continue
            if language == "bash" and line.strip().startswith("deltaguard "):
                found.append((f"{path.relative_to(REPO)}:{number}", line.strip()))
    return found


def cli_args(line: str) -> list[str]:
    """The arguments of ``deltaguard`` on a shell line: comments and redirections cut off."""
    words = shlex.split(line, comments=True)[1:]
    for i, word in enumerate(words):
        if word in SHELL_OPERATORS:
            return words[:i]
    return words


def parse(args: list[str]) -> click.Context:
    """Resolves the sub-commands and parses the options as the CLI would, without running."""
    command: click.Command = main
    parent = click.Context(main, info_name="deltaguard")
    name = "deltaguard"
    while isinstance(command, click.Group):
        sub = command.get_command(parent, args[0])
        assert sub is not None, f"no command {args[0]!r} in {name}"
        parent = click.Context(command, info_name=name, parent=parent)
        command, name, args = sub, args[0], args[1:]
    return command.make_context(name, list(args), parent=parent)


COMMANDS = doc_commands()


def test_docs_show_every_job():
    shown = {tuple(cli_args(line)[:1]) for _, line in COMMANDS}
    assert {("audit",), ("history",), ("orphans",), ("probe",), ("conf",), ("dynamodb",)} <= shown


@pytest.mark.parametrize(("where", "line"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_doc_command_parses(where, line):
    try:
        parse(cli_args(line))
    except click.ClickException as exc:
        pytest.fail(f"{where}: `{line}`: {exc.format_message()}")


def test_every_doc_command_has_an_expected_exit_code():
    shown = {shown_command(line) for _, line in COMMANDS}
    missing = sorted(shown - EXPECTED_EXIT.keys())
    assert missing == [], f"documented commands without an exit code in EXPECTED_EXIT: {missing}"
    assert sorted(EXPECTED_EXIT.keys() - shown) == [], "EXPECTED_EXIT names commands no doc shows"


#: The protocol and property of a table that takes V2 checkpoints (``./v2-table``).
V2_PROTOCOL = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["v2Checkpoint"],
    "writerFeatures": ["v2Checkpoint"],
}


def _synthetic(root: Path, *, v2: bool = False) -> None:
    """A two-version table (create, one append) with one never-committed file; ``v2``: one
    that takes V2 checkpoints."""
    table = SyntheticTable(root)
    if v2:
        table.protocol = V2_PROTOCOL
        table.configuration = {"delta.checkpointPolicy": "v2"}
    table.create(T0_MS)
    rel = "p=a/part-00000.parquet"
    size = table.write_parquet(rel, T0_MS, [1, 2, 3])
    table.commit([{"add": table.add_action(rel, T0_MS, size=size)}], T0_MS + 60_000)
    table.write_file("p=a/part-00001-failed.parquet", T0_MS)


def _inventory(root: Path, out: Path) -> None:
    """A Parquet ``USING INVENTORY`` table of every file below ``root``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = [p for p in sorted(root.rglob("*")) if p.is_file()]
    out.mkdir()
    rows = {
        "path": [f"file:{p}" for p in files],
        "length": [p.stat().st_size for p in files],
        "isDir": [False] * len(files),
        "modificationTime": [p.stat().st_mtime_ns // 1_000_000 for p in files],
    }
    pq.write_table(pa.table(rows), out / "part-0.parquet")


def _point_at(args: list[str], endpoint: str) -> list[str]:
    """``args`` with every S3/DynamoDB endpoint on LocalStack (path-style)."""
    out = list(args)
    if "--endpoint" in out:
        out[out.index("--endpoint") + 1] = endpoint
    elif args[0] == "dynamodb" or any(a.startswith(("s3://", "s3a://")) for a in args):
        out += ["--endpoint", endpoint]
    if any(a.startswith(("s3://", "s3a://")) for a in args) and args[0] != "conf":
        if "--path-style" not in out:
            out.append("--path-style")
        if "--dynamodb-table" in out and "--dynamodb-endpoint" not in out:
            out += ["--dynamodb-endpoint", endpoint]
    if args[0] == "probe" and "--rounds" not in out:
        out += ["--rounds", "3"]  # the race check itself, fewer rounds: this tests the command
    return out


def needs_spark(args: list[str]) -> bool:
    """Whether a documented command starts a Spark JVM (``--engine spark``): those run in
    :func:`test_doc_spark_commands_run`, outside ``make test-fast``."""
    return "--engine" in args and args[args.index("--engine") + 1 :][:1] == ["spark"]


@pytest.mark.slow  # about 35 CLI processes: `make test`; test-fast parses them only
def test_doc_commands_run(localstack, ls_bucket, tmp_path):
    """Every documented command but those that start a Spark JVM."""
    _run_doc_commands(localstack, ls_bucket, tmp_path, spark=False)


@pytest.mark.spark
def test_doc_spark_commands_run(localstack, ls_bucket, tmp_path):
    """The documented commands that start a Spark JVM (``--engine spark``)."""
    _run_doc_commands(localstack, ls_bucket, tmp_path, spark=True)


def _run_doc_commands(localstack, ls_bucket, tmp_path, *, spark: bool) -> None:
    """Runs the documented commands that start a Spark JVM (``spark``) or the others, in
    order. The docs' bucket ``lake`` is this test's own fresh bucket."""
    commands = [(w, line) for w, line in COMMANDS if needs_spark(cli_args(line)) is spark]
    assert commands, "no documented command of this kind: the split is stale"
    endpoint = localstack.endpoint
    s3 = endpoint.s3_client()
    tables = {m.group(1) for _, line in commands for m in re.finditer(r"s3a?://lake/(\w+)", line)}
    for name in sorted(tables):
        _synthetic(tmp_path / "tables" / name)
        upload_table(tmp_path / "tables" / name, s3, ls_bucket, name)
    work = tmp_path / "work"
    work.mkdir()
    _synthetic(work / "events")
    _synthetic(work / "v2-table", v2=True)
    _inventory(work / "events", work / "events-inventory")
    env = {
        **os.environ,
        **endpoint.credentials_env(),
        "AWS_DEFAULT_REGION": endpoint.region,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    failures = []
    ran: set[str] = set()
    for where, line_shown in commands:
        line = re.sub(r"(s3a?)://lake/", rf"\1://{ls_bucket}/", line_shown)
        args = cli_args(line)
        rest = line.split("#", 1)[0].strip()[len("deltaguard ") :]
        tail = rest[len(shlex.join(args)) :] if rest.startswith(shlex.join(args)) else ""
        command = shlex.join(["deltaguard", *_point_at(args, endpoint.url)]) + tail
        if command in ran:
            continue  # the same line shown in two places runs once
        ran.add(command)
        expected = EXPECTED_EXIT[shown_command(line_shown)]
        out = subprocess.run(
            ["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=600
        )
        if out.returncode != expected or "Traceback" in out.stderr:
            failures.append(
                f"{where}: `{command}` exit {out.returncode}, expected {expected}: "
                f"{out.stderr[-600:]}"
            )
    assert failures == [], "\n".join(failures)
