"""Healthy means readable (issue 49, goal 1), as a property over a damage matrix: ``deltaguard
audit`` exits 0 only if delta-rs and Spark read every live row of the latest version, and every
time a reader fails, the audit's output names a damaged file. The oracle is the readers
themselves (tests/readers_oracle.py), never deltaguard's replay.

The damage (:mod:`deltaguard.localstack.table_damage`): deleted, truncated, grown, zero-byte and
wrong-magic data files; deleted and short deletion vector files; deleted, truncated and
mismatched checkpoints, a multi-part checkpoint missing a part; ``_last_checkpoint`` naming a
missing checkpoint or giving a wrong size; commits missing before and after the newest
checkpoint; a corrupt line in a commit before and after it; several at once. The default audit
(``--check footers``) holds the property for every kind; ``--check exists`` (the listing only)
for every kind but a wrong-magic file of the right size, which shows only when it is read.

From the other side, ``repair --yes`` (the default depth, footers) on data-file damage leaves a table that
delta-rs reads: it removed every file a reader failed on and no undamaged one, and the rows
left are the undamaged table's minus those files' rows; the audit is then healthy.

Parts: local delta-rs-written tables with hypothesis (``make test-fast``); a fixed sample on
LocalStack (``servers``); the Spark-written tables (deletion vectors, multi-part and V2
checkpoints) and the delta-rs table with Spark as the second oracle (``spark``, one session).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from readers_oracle import (
    Reading,
    audit_names,
    delta_rs_live_files,
    read_delta_rs,
    read_spark,
    spark_live_files,
    spark_rows_per_file,
)

from deltaguard.localstack.table_copies import copy_table, upload_table
from deltaguard.localstack.table_damage import Kind, TableFiles, write_delta_rs_table
from deltaguard.tools.cli import main

#: (kind, which data or DV file)
Damage = tuple[Kind, int]


@dataclass(frozen=True)
class Oracle:
    """The readers asked: delta-rs (on S3 with ``storage_options``) and, given a session,
    Spark. Only a reader that reads the undamaged table in full speaks about the damaged one
    (delta-rs reads no table with deletion vectors)."""

    spark: Any = None
    storage_options: dict[str, str] | None = None

    def readings(self, uri: str) -> list[Reading]:
        out = [read_delta_rs(uri, self.storage_options)]
        return out if self.spark is None else [*out, read_spark(self.spark, uri)]

    def live_files(self, uri: str, reader: str) -> set[str]:
        if reader == "delta-rs":
            return delta_rs_live_files(uri, self.storage_options)
        return spark_live_files(self.spark, uri)


@dataclass(frozen=True)
class Pristine:
    """An undamaged table: its files, its rows and each live file's rows (by a reader)."""

    root: Path
    files: TableFiles
    rows: int
    rows_per_file: dict[str, int]

    def __repr__(self) -> str:
        return f"Pristine({self.root.name}, {self.rows} rows)"


_USABLE: dict[tuple[Path, bool], frozenset[str]] = {}


def _usable(pristine: Pristine, oracle: Oracle) -> frozenset[str]:
    """The readers of ``oracle`` that read ``pristine`` in full (asked once)."""
    key = (pristine.root, oracle.spark is not None)
    if key not in _USABLE:
        readings = Oracle(oracle.spark).readings(str(pristine.root))  # the local original
        _USABLE[key] = frozenset(r.reader for r in readings if r.reads(pristine.rows))
    assert _USABLE[key], f"no reader reads the undamaged {pristine}"
    return _USABLE[key]


@dataclass(frozen=True)
class Cli:
    """How to run ``deltaguard`` on a table: extra options (S3 endpoint) and environment."""

    options: tuple[str, ...] = ()
    env: dict[str, str] | None = None

    def run(self, *args: str) -> tuple[int, str, str]:
        result = CliRunner(env=self.env).invoke(main, [*args, *self.options])
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            args,
            result.stdout,
            result.stderr,
            repr(result.exception),
        )
        return result.exit_code, result.stdout, result.stderr


def _delta_rs_pristine(root: Path) -> Pristine:
    rows = write_delta_rs_table(root)
    live = sorted(delta_rs_live_files(str(root)))
    per_file = {rel: pq.read_metadata(root / rel).num_rows for rel in live}
    assert sum(per_file.values()) == rows and read_delta_rs(str(root)).reads(rows)
    return Pristine(root, TableFiles.of(root, live), rows, per_file)


@pytest.fixture(scope="module")
def rs_table(tmp_path_factory: pytest.TempPathFactory) -> Pristine:
    """The delta-rs table (``write_delta_rs_table``), written once for the module."""
    return _delta_rs_pristine(tmp_path_factory.mktemp("pristine") / "rs")


def _damage(pristine: Pristine, table: Path, damages: Sequence[Damage]) -> list[list[str]]:
    return [pristine.files.damage(table, kind, pick) for kind, pick in damages]


def _failures(pristine: Pristine, oracle: Oracle, uri: str, rows: int) -> list[str]:
    usable = _usable(pristine, oracle)
    return [r.why(rows) for r in oracle.readings(uri) if r.reader in usable and not r.reads(rows)]


def _breaking(
    pristine: Pristine, scratch: Path, damages: Sequence[Damage], oracle: Oracle
) -> set[str]:
    """The files of each damage that on its own makes a reader fail (each applied alone to a
    fresh local copy)."""
    if len(damages) == 1:
        table = copy_table(pristine.root, scratch / "alone")
        files = _damage(pristine, table, damages)[0]
        failed = _failures(pristine, Oracle(oracle.spark), str(table), pristine.rows)
        shutil.rmtree(table)
        return set(files) if failed else set()
    out: set[str] = set()
    for damage in damages:
        out |= _breaking(pristine, scratch, [damage], oracle)
    return out


def check_property(
    pristine: Pristine,
    scratch: Path,
    damages: Sequence[Damage],
    oracle: Oracle,
    *,
    cli: Cli | None = None,
    location: Callable[[Path], str] = str,
) -> None:
    """Damages a copy of ``pristine`` under ``scratch``, asks the readers and the audit, and
    asserts the property (module docstring); then, for data-file damage only, repairs it and
    asserts what the readers read. ``location`` turns the damaged copy into the URI the
    commands and readers get (an upload to S3, say); ``cli`` runs the commands."""
    cli = cli or Cli()
    table = copy_table(pristine.root, scratch / "damaged")
    per_damage = _damage(pristine, table, damages)
    damaged = [f for files in per_damage for f in files]
    others = {
        f
        for (k, _), files in zip(damages, per_damage, strict=True)
        if k is not Kind.DATA_GROWN
        for f in files
    }
    grown = {
        f
        for (k, _), files in zip(damages, per_damage, strict=True)
        if k is Kind.DATA_GROWN
        for f in files
    } - others
    uri = location(table)
    failed = _failures(pristine, oracle, uri, pristine.rows)
    kinds = [k.value for k, _ in damages]
    breaking: set[str] = set()
    if failed:
        breaking = (
            set(damaged) if len(damages) == 1 else _breaking(pristine, scratch, damages, oracle)
        )
    named = breaking or set(damaged)  # only the combination breaks a reader: any file of it
    footer_only = any(k.footer_only for k, _ in damages)
    for mode in [(), *([] if footer_only else [("--check", "exists")])]:
        code, out, err = cli.run("audit", uri, "--json", *mode)
        if not failed:
            continue
        what = f"{kinds} {damaged}: {failed}; audit {' '.join(mode)} exit {code}"
        assert code != 0, f"{what}: called healthy, a reader fails\n{out}{err}"
        assert any(audit_names(out, err, rel) for rel in named), (
            f"{what}: names none of {sorted(named)}\n{out}{err}"
        )
    if damages and all(k.data_file for k, _ in damages):
        _check_repair(pristine, oracle, uri, damaged, breaking, grown, cli)


def _check_repair(
    pristine: Pristine,
    oracle: Oracle,
    uri: str,
    damaged: list[str],
    breaking: set[str],
    grown: set[str],
    cli: Cli,
) -> None:
    """``repair --yes`` (default depth: footers) removes every file a reader failed on and no
    undamaged one, and keeps a ``grown`` file (bytes appended after its footer: delta-rs reads
    it from the logged size, Spark fails on it), naming it ``not repaired`` (exit 1); the
    readers then read the rest (delta-rs alone while a grown file is kept), and the audit is
    healthy but for the grown files' ``size-mismatch``."""
    code, out, err = cli.run("repair", uri, "--yes")
    assert code == (1 if grown else 0), f"repair of {damaged}: exit {code}\n{out}{err}"
    for rel in grown:
        assert f"not repaired: size-mismatch: {rel}" in out, f"{rel} kept, not named:\n{out}"
    reader = sorted(_usable(pristine, oracle))[0]  # delta-rs when it can
    removed = set(pristine.rows_per_file) - oracle.live_files(uri, reader)
    assert removed <= set(damaged), f"repair removed undamaged files {removed - set(damaged)}"
    assert breaking - grown <= removed, f"repair left {breaking - removed}, which readers fail on"
    assert not grown & removed, f"repair removed {grown & removed}, which readers read"
    left = pristine.rows - sum(pristine.rows_per_file[rel] for rel in removed)
    after = Oracle(storage_options=oracle.storage_options) if grown else oracle
    failed = _failures(pristine, after, uri, left)
    assert not failed, f"after repair of {damaged} (removed {sorted(removed)}): {failed}"
    code, out, err = cli.run("audit", uri, "--json")
    left_findings = {(f["code"], f["file"]) for f in json.loads(out)["findings"]}
    assert left_findings == {("size-mismatch", rel) for rel in grown}, (
        f"after repair of {damaged}: audit exit {code}\n{out}{err}"
    )
    assert code == (1 if grown else 0), f"after repair of {damaged}: audit exit {code}"


# --- make test-fast: local delta-rs tables, generated damage -----------------------------

RS_KINDS = [
    Kind.DATA_DELETED,
    Kind.DATA_TRUNCATED,
    Kind.DATA_GROWN,
    Kind.DATA_ZERO,
    Kind.DATA_WRONG_MAGIC,
    Kind.CHECKPOINT_DELETED,
    Kind.CHECKPOINT_TRUNCATED,
    Kind.CHECKPOINT_MISMATCHED,
    Kind.LAST_CHECKPOINT_MISSING,
    Kind.LAST_CHECKPOINT_SIZE,
    Kind.GAP_AFTER_CHECKPOINT,
    Kind.GAP_BEFORE_CHECKPOINT,
    Kind.CORRUPT_AFTER_CHECKPOINT,
    Kind.CORRUPT_BEFORE_CHECKPOINT,
]

DAMAGES = st.lists(
    st.tuples(st.sampled_from(RS_KINDS), st.integers(0, 63)),
    min_size=1,
    max_size=3,
    unique_by=(lambda d: d[0], lambda d: d[1]),  # one damage a kind, one a file
)


def _every_kind_alone(test: Any) -> Any:
    for kind in RS_KINDS:
        test = example(damages=[(kind, 5)])(test)
    return test


# proves: README "a damaged table is never called healthy; healthy means every reader can read it"
@pytest.mark.slow  # 5-10 s: make test-fast stays under 3 minutes
@settings(
    max_examples=12,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(damages=DAMAGES)
@_every_kind_alone
def test_delta_rs_table_damage(rs_table: Pristine, tmp_path: Path, damages: list[Damage]) -> None:
    """Each kind alone (explicit examples), then generated combinations of up to three."""
    assert set(RS_KINDS) == set(rs_table.files.kinds())  # the table suffers every kind it can
    scratch = tmp_path / f"case-{len(list(tmp_path.iterdir()))}"
    check_property(rs_table, scratch, damages, Oracle())


def test_matrix_is_not_vacuous(rs_table: Pristine, tmp_path: Path) -> None:
    """The kinds meant to break delta-rs do (else the property would hold trivially), and
    those meant to leave it reading do: the damage is what its name says."""
    expected_to_fail = {
        Kind.DATA_DELETED,
        Kind.DATA_TRUNCATED,
        Kind.DATA_ZERO,
        Kind.DATA_WRONG_MAGIC,
        Kind.CHECKPOINT_DELETED,
        Kind.CHECKPOINT_TRUNCATED,
        Kind.CHECKPOINT_MISMATCHED,
        Kind.LAST_CHECKPOINT_MISSING,
        Kind.GAP_AFTER_CHECKPOINT,
        Kind.CORRUPT_AFTER_CHECKPOINT,
    }
    failing = set()
    for kind in RS_KINDS:
        table = copy_table(rs_table.root, tmp_path / kind.value)
        rs_table.files.damage(table, kind)
        if not read_delta_rs(str(table)).reads(rs_table.rows):
            failing.add(kind)
    assert failing == expected_to_fail


# --- make test: LocalStack --------------------------------------------------------------

S3_SAMPLE: list[list[Damage]] = [
    [(Kind.DATA_TRUNCATED, 3), (Kind.DATA_ZERO, 7), (Kind.DATA_DELETED, 1)],
    [(Kind.DATA_WRONG_MAGIC, 11), (Kind.DATA_GROWN, 2)],
    [(Kind.CHECKPOINT_TRUNCATED, 0)],
    [(Kind.LAST_CHECKPOINT_MISSING, 0)],
    [(Kind.GAP_AFTER_CHECKPOINT, 0), (Kind.CORRUPT_BEFORE_CHECKPOINT, 0)],
    [(Kind.CORRUPT_AFTER_CHECKPOINT, 0)],
]


@pytest.fixture(scope="module")
def s3_cli(localstack: Any) -> Cli:
    endpoint = localstack.endpoint
    return Cli(
        ("--endpoint", endpoint.url, "--region", endpoint.region, "--path-style"),
        {**endpoint.credentials_env(), "AWS_REGION": endpoint.region},
    )


# proves: README "a damaged table is never called healthy; healthy means every reader can read it"
# make test only (issue 49: the LocalStack sample is the make-test part), not the quick loop
@pytest.mark.slow
@pytest.mark.parametrize("damages", S3_SAMPLE, ids=lambda d: "+".join(k.value for k, _ in d))
def test_localstack_damage(
    rs_table: Pristine, tmp_path: Path, localstack: Any, ls_bucket: str, s3_cli: Cli, damages
) -> None:
    """A fixed sample on LocalStack: the same property through S3 (the audit's listing and
    reads, delta-rs on S3), repair included."""
    endpoint = localstack.endpoint
    s3 = endpoint.s3_client()

    def upload(table: Path) -> str:
        return upload_table(table, s3, ls_bucket, "t", workers=8)

    oracle = Oracle(storage_options=endpoint.delta_rs_options())
    check_property(rs_table, tmp_path, damages, oracle, cli=s3_cli, location=upload)


# --- make test: Spark as the second oracle, and Spark-written tables ---------------------


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from local_spark import local_spark_session

    with local_spark_session(tmp_path_factory, "healthy-readable") as session:
        yield session


@pytest.fixture(scope="module")
def spark_pristine(spark_tables: Any, spark: Any) -> Callable[[str], Pristine]:
    """A Spark-written table (``spark_tables``) as a :class:`Pristine`: its live files and
    their rows as Spark reads them (deletion vectors applied)."""
    cache: dict[str, Pristine] = {}

    def get(name: str) -> Pristine:
        if name not in cache:
            root = spark_tables.path(name)
            latest = spark_tables.versions(name)[-1]
            live = [
                Path(p).relative_to(root).as_posix() for p in spark_tables.live_files(name, latest)
            ]
            per_file = {
                Path(p).relative_to(root).as_posix(): n
                for p, n in spark_rows_per_file(spark, str(root)).items()
            }
            rows = sum(per_file.values())
            assert read_spark(spark, str(root)).reads(rows)
            cache[name] = Pristine(root, TableFiles.of(root, live), rows, per_file)
        return cache[name]

    return get


SPARK_SAMPLE: list[tuple[str, list[Damage]]] = [
    ("rs", [(Kind.DATA_TRUNCATED, 2)]),
    ("rs", [(Kind.DATA_GROWN, 1)]),  # delta-rs reads it, Spark fails: never healthy
    ("rs", [(Kind.CHECKPOINT_MISMATCHED, 0)]),
    ("rs", [(Kind.LAST_CHECKPOINT_MISSING, 0)]),
    ("rs", [(Kind.GAP_AFTER_CHECKPOINT, 0)]),
    ("dv_cdc", [(Kind.DATA_ZERO, 0)]),
    ("dv_cdc", [(Kind.DV_DELETED, 0)]),
    ("dv_cdc", [(Kind.DV_SHORT, 0)]),
    ("dv_cdc", [(Kind.CHECKPOINT_MISMATCHED, 0)]),
    ("multipart", [(Kind.CHECKPOINT_PART_MISSING, 0)]),
    ("v2", [(Kind.CHECKPOINT_DELETED, 0)]),
    ("partitioned", [(Kind.DATA_TRUNCATED, 0), (Kind.CORRUPT_BEFORE_CHECKPOINT, 0)]),
]


# proves: README "a damaged table is never called healthy; healthy means every reader can read it"
@pytest.mark.spark
@pytest.mark.parametrize(
    ("name", "damages"),
    SPARK_SAMPLE,
    ids=[f"{n}-{'+'.join(k.value for k, _ in d)}" for n, d in SPARK_SAMPLE],
)
def test_spark_oracle_damage(
    rs_table: Pristine, spark_pristine: Any, spark: Any, tmp_path: Path, name: str, damages
) -> None:
    """A fixed sample, delta-rs and Spark both the oracle, on the delta-rs table and the
    Spark-written ones (deletion vectors, multi-part and V2 checkpoints, encoded partitions)."""
    pristine = rs_table if name == "rs" else spark_pristine(name)
    check_property(pristine, tmp_path, damages, Oracle(spark))
