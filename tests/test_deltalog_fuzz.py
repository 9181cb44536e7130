"""Property: whatever damage a real Delta log suffers, deltaguard ends with a clean finding or
a clean error (a DeltaLogError / exit code 2), never a traceback; and a damaged table a reader
cannot read is never called healthy: whenever delta-rs fails on it, or reads other rows than the
undamaged table holds at that version, ``deltaguard audit`` exits non-zero and its output names a
damaged file (the oracle, shared with test_healthy_means_readable.py: tests/readers_oracle.py).
deltaguard's own replay never calls a table healthy that it cannot replay.

Damage is applied to copies of the Spark-written tables: truncation, bit flips, deleted files,
reordered or duplicated lines, and garbage files with log-like names. The examples are
derandomized: the same 150 every run.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from deltalake import DeltaTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from readers_oracle import audit_names, read_delta_rs

from deltaguard.localstack.delta_tables import TABLES, SparkTables
from deltaguard.localstack.table_copies import copy_table
from deltaguard.tools.cli import main
from deltaguard.tools.deltalog import UnsupportedTableError, load_snapshot
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.deltalog.history import read_history
from deltaguard.tools.deltalog.listing import list_log
from deltaguard.tools.orphans.references import collect_references
from deltaguard.tools.storage import open_table
from deltaguard.tools.storage.errors import DeltaLogError

pytestmark = pytest.mark.spark


def _references(table: str) -> object:
    """What ``deltaguard orphans`` protects: every file any retained version references."""
    store = open_table(table)
    return collect_references(load_snapshot(store, listing=list_log(store)), cutoff_ms=0)


GARBAGE_NAMES = (
    "{v:020d}.json",
    "{v:020d}.checkpoint.parquet",
    "{v:020d}.checkpoint.0000000001.0000000002.parquet",
    "{v:020d}.checkpoint.{u}.json",
    "{v:020d}.checkpoint.{u}.parquet",
    "{v:020d}.{w:020d}.compacted.json",
    "{v:020d}.crc",
    "_last_checkpoint",
    "_sidecars/{u}.parquet",
    ".{v:020d}.json.{u}.tmp",
)
GARBAGE_BODIES = (
    b"",
    b"PAR1\x00\x00PAR1",
    b'{"add": {"path": 5}}\n',
    b'{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}\n{"metaData": {}}\n',
    b'{"version": "x"}',
    b'{"add": {"path": "a", "size": 1, "modificationTime": 1, "dataChange": true, '
    b'"partitionValues": {}, "deletionVector": {"storageType": "u", '
    b'"pathOrInlineDv": "!!", "sizeInBytes": 1, "cardinality": 1}}}\n',
    b"\xff\xfe garbage \x00",
    b"[1, 2, 3]\n",
    b'{"commitInfo": 1}\n{"remove": {"path": "x", "deletionTimestamp": true}}\n',
)


def _files(table: Path, log_only: bool) -> list[Path]:
    base = table / "_delta_log" if log_only else table
    return sorted(p for p in base.rglob("*") if p.is_file())


def _damage(table: Path, rng: random.Random, kind: str) -> str | None:
    """Applies one damage and returns the file it touched (relative to ``table``), if any."""
    log_files = _files(table, log_only=True)
    target = rng.choice(log_files)
    data = target.read_bytes()
    if kind == "truncate":
        target.write_bytes(data[: rng.randrange(len(data) + 1)])
    elif kind == "bitflip" and data:
        buf = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        target.write_bytes(bytes(buf))
    elif kind == "delete":
        target = rng.choice(_files(table, log_only=rng.random() < 0.7))
        target.unlink()
    elif kind in ("reorder", "duplicate"):
        commits = [p for p in log_files if p.name.endswith(".json")]
        target = rng.choice(commits)
        lines = target.read_bytes().splitlines()
        if kind == "reorder":
            rng.shuffle(lines)
        elif lines:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(lines))
        target.write_bytes(b"\n".join(lines) + b"\n")
    elif kind == "garbage":
        name = rng.choice(GARBAGE_NAMES).format(
            v=rng.randint(0, 8), w=rng.randint(9, 12), u=f"{rng.getrandbits(64):016x}"
        )
        target = table / "_delta_log" / name
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(rng.choice(GARBAGE_BODIES))
    else:
        return None
    return target.relative_to(table).as_posix()


DAMAGE = st.sampled_from(["truncate", "bitflip", "delete", "reorder", "duplicate", "garbage"])

_ROWS: dict[tuple[str, int], int | None] = {}


def _undamaged_rows(spark_tables: SparkTables, name: str, version: int | None) -> int | None:
    """The rows delta-rs reads from the undamaged table at ``version`` (its latest version
    when the damaged log has more, or None: a garbage commit adds no rows a reader could
    find), or None when delta-rs cannot read the undamaged table (deletion vectors): then
    delta-rs is no oracle for it (test_healthy_means_readable.py asks Spark)."""
    latest = spark_tables.versions(name)[-1]
    if (name, latest) not in _ROWS:
        _ROWS[name, latest] = read_delta_rs(str(spark_tables.path(name))).rows
    if _ROWS[name, latest] is None:
        return None
    version = latest if version is None else min(version, latest)
    if (name, version) not in _ROWS:
        table = DeltaTable(str(spark_tables.path(name)), version=version)
        _ROWS[name, version] = table.to_pyarrow_table().num_rows
    return _ROWS[name, version]


def _missing_file_named(table: Path, stdout: str) -> bool:
    """Whether an error or warning names a file that is not in ``table``: a bit flip in a
    path makes the log reference a data file nobody damaged, a garbage commit far ahead makes
    the commits before it missing; naming that file is naming the damage."""
    try:
        findings = json.loads(stdout)["findings"]
    except (ValueError, KeyError, TypeError):
        return False
    return any(
        f.get("severity") in ("error", "warning")
        and f.get("file")
        and not (table / f["file"]).exists()
        for f in findings
    )


# proves: README "a damaged table is never called healthy; healthy means every reader can read it"
@settings(
    max_examples=150,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    table_name=st.sampled_from(TABLES),
    damages=st.lists(DAMAGE, min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
)
def test_damaged_logs_give_findings_or_clean_errors(spark_tables, table_name, damages, seed):
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        table = copy_table(spark_tables.path(table_name), Path(tmp) / table_name)
        damaged = {rel for kind in damages if (rel := _damage(table, rng, kind)) is not None}
        replay_error: DeltaLogError | None = None
        try:
            load_snapshot(str(table))
        except DeltaLogError as exc:
            replay_error = exc
        try:
            report = audit_table(str(table))
        except DeltaLogError:
            report = None
        if report is not None and replay_error is not None:
            assert not report.healthy or isinstance(replay_error, UnsupportedTableError), (
                damages,
                replay_error,
            )
        for call in (lambda: read_history(str(table)), lambda: _references(str(table))):
            try:
                call()
            except DeltaLogError:
                pass
        for args in (["audit", str(table), "--json"], ["history", str(table)]):
            result = CliRunner().invoke(main, args)
            assert result.exit_code in (0, 1, 2), (args, result.output)
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                damages,
                repr(result.exception),
            )
            if args[0] == "audit":
                audit = result
        reading = read_delta_rs(str(table))
        expected = _undamaged_rows(spark_tables, table_name, reading.version)
        if expected is not None and not reading.reads(expected):
            what = (damages, sorted(damaged), reading.why(expected))
            assert audit.exit_code != 0, (what, "called healthy", audit.stdout)
            assert any(
                audit_names(audit.stdout, audit.stderr, rel) for rel in damaged
            ) or _missing_file_named(table, audit.stdout), (what, audit.stdout, audit.stderr)
