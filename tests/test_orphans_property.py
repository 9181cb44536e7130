"""Properties over random tables and histories (deletion vectors, V2 checkpoints with
sidecars, URL-encoded and absolute paths, tombstones, change data, log cleanup):

- at retention 0, what the local engine and the Spark engine would delete (``orphan`` plus
  ``expired-tombstone``) is what an independent oracle says VACUUM deletes: delta-rs's FULL
  vacuum (local engine) or Spark's ``VACUUM ... RETAIN 0 HOURS DRY RUN`` (Spark engine) on
  every file the oracle handles, and the generator's own model of the table on every file;
- cleanup never deletes a file that any retained version references (default classes), and
  with ``--include-tombstones`` never one that a version committed after the cut-off
  references; every old file no commit ever named is found. The retained versions and their
  files (deletion vectors included) are delta-rs's reading of each one
  (``tests/reader_references.py``), not deltaguard's replay; a version delta-rs cannot load
  fails the test.

Where the oracles are wrong (measured with delta-rs 1.6.6 and Delta 4.4.0 on these
histories), the model alone decides: delta-rs's vacuum lists the deletion-vector files of live
files and live files added by absolute path; Spark's VACUUM lists live files added by an
absolute path with URL-encoded characters and live files whose log path percent-encodes a
character that Hadoop's URI form keeps literal (a ``+`` written ``%2B``, a non-ASCII letter
written ``%C3%A9``: VACUUM compares the log's string with Hadoop's, not the decoded paths). Both
would delete live data. On those files the equality is checked against the oracle's list minus
what the latest version references (delta-rs's live files and their deletion vectors).

The Spark engine runs on fixed histories (one per behaviour found so far) and two random ones
in ``make test``, and on ten random ones in the ``long`` variant (``make soak``).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pytest
from deltalake import DeltaTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from local_spark import local_spark_session
from reader_references import reader_versions, version_files, z85_uuid

from deltaguard.localstack.synthetic_table import (
    DV_V2_PROTOCOL,
    SyntheticTable,
    dv_descriptor,
    dv_file_name,
)
from deltaguard.tools.orphans import CleanupOptions, FileClass, execute, scan
from deltaguard.tools.spark_engine.orphans_scan import scan_spark
from deltaguard.tools.spark_engine.store_spec import StoreSpec
from deltaguard.tools.storage import open_table

HOUR = 3_600_000
OPS = st.sampled_from(
    [
        "append",
        "append-encoded",
        "append-absolute",
        "remove",
        "dv",
        "orphan",
        "cdc",
        "checkpoint",
        "cleanup-log",
    ]
)
#: Parts of file and partition names that a log path must carry URL-encoded (and ``#``/``?``,
#: which cut a URL short if a reader parses the path as one).
ODD_NAMES = ("a b", "100%", "x+y", "é ü", "h#a", "q?x")
#: Deletion vectors only (classic parquet checkpoints), or with V2 checkpoints (UUID-named JSON
#: checkpoints whose actions are in sidecars).
DV_PROTOCOL = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["deletionVectors"],
    "writerFeatures": ["deletionVectors"],
}


def _run_history(
    root: Path, ops: list[tuple[str, int]], now: int, v2: bool = False
) -> tuple[SyntheticTable, set[str]]:
    """Applies ``ops`` (operation, hours since the previous one) to a new table with deletion
    vectors (``v2``: and V2 checkpoints with sidecars); returns the table and the files written
    but never committed. Appends write plain, URL-encoded (odd names, also in partition values)
    or absolute (``file://`` URI inside the root) paths; removes leave tombstones."""
    t = SyntheticTable(root, protocol=DV_V2_PROTOCOL if v2 else DV_PROTOCOL)
    clock = now - 400 * HOUR
    t.create(clock)
    never: set[str] = set()
    n = 0
    for op, step in ops:
        clock = min(clock + step * HOUR, now - 1)
        n += 1
        odd = ODD_NAMES[n % len(ODD_NAMES)]
        if op == "append":
            rel = t.write_file(f"p={n % 3}/part-{n}.parquet", clock)
            t.commit([{"add": t.add_action(rel, clock)}], clock)
        elif op == "append-encoded":
            partition = odd if n % 2 else str(n % 3)
            rel = t.write_file(f"p={partition}/part-{n} {odd}.parquet", clock)
            t.commit([{"add": t.add_action(rel, clock)}], clock)
        elif op == "append-absolute":
            rel = t.write_file(f"p={n % 3}/part-{n}-abs {odd}.parquet", clock)
            add = {**t.add_action(rel, clock), "path": (root / rel).as_uri()}
            t.commit([{"add": add}], clock)
        elif op == "remove" and t.live:
            key = sorted(t.live)[n % len(t.live)]
            t.commit([{"remove": t.remove_action(key, clock)}], clock)
        elif op == "dv" and t.live:
            key = sorted(t.live)[n % len(t.live)]
            dv = uuid.uuid4()
            t.write_file(dv_file_name(dv), clock)
            add = {**t.live[key], "deletionVector": dv_descriptor(dv)}
            t.commit([{"remove": t.remove_action(key, clock)}, {"add": add}], clock)
        elif op == "orphan":
            never.add(t.write_file(f"p={n % 3}/part-failed-{n} {odd}.parquet", clock))
        elif op == "cdc":
            rel = t.write_file(f"_change_data/cdc-{n}.parquet", clock)
            path = t.write_file(f"p=0/part-{n}.parquet", clock)
            t.commit(
                [
                    {"add": t.add_action(path, clock)},
                    {"cdc": {"path": rel, "partitionValues": {}, "size": 0, "dataChange": False}},
                ],
                clock,
            )
        elif op == "checkpoint" and t.version > 0:
            if v2:
                t.v2_checkpoint(sidecars=1 + n % 2)
            else:
                t.checkpoint()
        elif op == "cleanup-log":
            checkpoints = sorted(root.glob("_delta_log/*.checkpoint.*"))
            if checkpoints:
                t.drop_commits_before(int(checkpoints[-1].name.split(".")[0]))
    return t, never


# proves: docs/guides/cleanup.md "By default only `orphan` and `log-temp` files go, and no
# retained log entry names those, so no version that can still be read references them."
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ops=st.lists(st.tuples(OPS, st.integers(0, 60)), min_size=1, max_size=25),
    retention_h=st.sampled_from([0, 1, 24, 168]),
    include_tombstones=st.booleans(),
)
def test_cleanup_never_deletes_a_referenced_file(
    tmp_path_factory, ops, retention_h, include_tombstones
) -> None:
    root = tmp_path_factory.mktemp("prop") / "t"
    now = int(time.time() * 1000)
    _t, never = _run_history(root, ops, now)
    store = open_table(str(root))
    versions = reader_versions(root)  # delta-rs's, every retained version (none skipped)
    result = scan(store, retention_ms=retention_h * HOUR, now_ms=now)
    cutoff = result.cutoff_ms
    found = {c.path for c in result.of(FileClass.ORPHAN)}
    assert {p for p in never if (root / p).stat().st_mtime_ns // 1_000_000 < cutoff} <= found
    execute(
        store,
        result,
        manifest_path=root.parent / "manifest",
        options=CleanupOptions(
            include_tombstones=include_tombstones, unsafe_retention=True, given_retention=True
        ),
    )
    assert_retained_versions_intact(root, versions, cutoff, include_tombstones)


def assert_retained_versions_intact(
    root, versions: dict, cutoff: int, include_tombstones: bool
) -> None:
    """Every file of every version a reader may still ask for exists under ``root``.
    ``versions``: version -> (commit timestamp or None, its files)."""
    for version, (timestamp, files) in versions.items():
        if (
            include_tombstones
            and timestamp is not None
            and timestamp < cutoff
            and version != max(versions)
        ):
            continue  # VACUUM's contract: versions older than the retention may lose files
        missing = [f for f in files if not (root / f).exists()]
        assert not missing, f"version {version} lost {missing}"


def _relative(root: Path, log_path: str) -> str:
    """A log entry's path (URL-encoded, relative or a ``file:`` URI inside ``root``) as a path
    relative to ``root``: the generator's own decoding, not the code under test's."""
    if log_path.startswith("file:"):
        return str(Path(unquote(urlsplit(log_path).path)).relative_to(root))
    return unquote(log_path)


#: What ``java.net.URI``'s multi-argument constructors (so Hadoop's ``Path``) leave unquoted in a
#: path besides letters and digits: RFC 2396's unreserved and punctuation characters, ``/``, ``@``.
_URI_PATH_SAFE = "-_.!~*'(),;:$&+=/@"


def _hadoop_uri_form(rel: str) -> str:
    """A decoded relative path as ``new Path(rel).toUri().toString()`` writes it: characters
    that are illegal in a URI path percent-encoded (UTF-8), non-ASCII letters kept literal
    (Java's "other" characters). Where a log entry's path is another encoding of the same file
    (``%2B`` for ``+``, ``%C3%A9`` for ``é``), Spark's VACUUM does not match the listed file
    with it and lists the live file for deletion."""
    return "".join(
        c if not c.isascii() and c.isprintable() and not c.isspace() else quote(c, _URI_PATH_SAFE)
        for c in rel
    )


def _model_vacuum(t: SyntheticTable) -> tuple[set[str], set[str]]:
    """What VACUUM at retention 0 deletes, from the generator's model of the latest version:
    every visible file (and ``_change_data``) but the live files and their deletion vectors.
    Also returns the files an oracle may mishandle: deletion-vector files and every file a
    log entry names by absolute path or in another encoding than Hadoop's
    (:func:`_hadoop_uri_form`)."""
    live: set[str] = set()
    odd: set[str] = set()
    for action in [*t.live.values(), *t.tombstones.values()]:
        rel = _relative(t.root, action["path"])
        if action["path"].startswith("file:") or action["path"] != _hadoop_uri_form(rel):
            odd.add(rel)
    for action in t.live.values():
        live.add(_relative(t.root, action["path"]))
        dv = action.get("deletionVector")
        if dv:
            live.add(dv_file_name(z85_uuid(dv["pathOrInlineDv"][-20:])))
    files = set()
    for dirpath, dirs, names in os.walk(t.root):
        rel_dir = Path(dirpath).relative_to(t.root)
        dirs[:] = [d for d in dirs if not d.startswith((".", "_")) or d == "_change_data"]
        files |= {str(rel_dir / n) for n in names if not n.startswith((".", "_"))}
    files = {f.removeprefix("./") for f in files}
    odd |= {f for f in files if f.startswith("deletion_vector_")}
    return files - live, odd


def _delta_rs_vacuum(root: Path) -> set[str]:
    """delta-rs's FULL vacuum at retention 0, dry run: paths relative to ``root``."""
    table = DeltaTable(str(root))
    listed = table.vacuum(
        retention_hours=0, dry_run=True, enforce_retention_duration=False, full=True
    )
    return {_relative(root, p) if p.startswith("file:") else p for p in listed}


HISTORIES = st.lists(st.tuples(OPS, st.integers(0, 60)), min_size=3, max_size=15)


# proves: docs/guides/cleanup.md "Same files as VACUUM" (delta-rs's FULL vacuum, local engine)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=HISTORIES, v2=st.booleans())
def test_local_engine_deletes_what_delta_rs_vacuum_deletes(tmp_path_factory, ops, v2) -> None:
    root = tmp_path_factory.mktemp("oracle") / "t"
    t, _never = _run_history(root, ops, int(time.time() * 1000), v2=v2)
    store = open_table(str(root))
    result = scan(store, retention_ms=0, now_ms=int(time.time() * 1000))
    ours = {c.path for c in result.of(FileClass.ORPHAN, FileClass.EXPIRED_TOMBSTONE)}
    model, odd = _model_vacuum(t)
    assert ours == model
    listed = _delta_rs_vacuum(root)
    assert ours - odd == listed - odd
    # odd files too: what delta-rs lists but must not delete is exactly what the latest
    # version references per delta-rs (its live files, absolute ones included, and their
    # deletion vectors)
    assert ours == listed - version_files(root, DeltaTable(str(root)).version())


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local Spark session for the Spark-engine examples and their oracle."""
    from deltaguard.localstack.failed_job import VACUUM_CONF

    with local_spark_session(tmp_path_factory, "orphans-oracle", extra_conf=VACUUM_CONF) as s:
        yield s


#: Fixed histories for the Spark engine in ``make test``, each with what it pins:
SPARK_HISTORIES = {
    # a live file under 'p=é ü' whose log path percent-encodes the letters (as Python's quote
    # and RFC 2396 do; Spark writes them literally): VACUUM lists it, the engines keep it
    # (found by a random run: hypothesis's shrunk example)
    "non-ascii-encoded-live-file": (
        [("append", 0), ("append", 0), ("append-encoded", 0)],
        False,
    ),
    # every kind of entry: encoded and absolute paths (odd names), deletion vectors, an
    # orphan, tombstones (expired), change data, V2 checkpoints with sidecars, log cleanup
    "dv-v2-sidecars-absolute-tombstones": (
        [
            ("append", 30),
            ("append-encoded", 2),
            ("append-absolute", 4),
            ("append-encoded", 1),
            ("dv", 3),
            ("orphan", 10),
            ("remove", 5),
            ("cdc", 1),
            ("checkpoint", 0),
            ("append-absolute", 2),
            ("remove", 1),
            ("cleanup-log", 0),
            ("append-encoded", 1),
        ],
        True,
    ),
}


# proves: docs/guides/cleanup.md "At retention 0, `orphan` plus `expired-tombstone` is exactly
# the file set Spark's `VACUUM ... RETAIN 0 HOURS DRY RUN` reports"
@pytest.mark.spark
@pytest.mark.parametrize(("ops", "v2"), list(SPARK_HISTORIES.values()), ids=list(SPARK_HISTORIES))
def test_spark_engine_deletes_what_spark_vacuum_deletes(spark, tmp_path, ops, v2) -> None:
    _check_spark_engine_against_vacuum(spark, tmp_path, ops, v2)


# proves: docs/guides/cleanup.md "At retention 0, `orphan` plus `expired-tombstone` is exactly
# the file set Spark's `VACUUM ... RETAIN 0 HOURS DRY RUN` reports" (random histories, short)
@pytest.mark.spark
@settings(
    max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=HISTORIES, v2=st.booleans())
def test_spark_engine_deletes_what_spark_vacuum_deletes_on_a_few_random_histories(
    spark, tmp_path_factory, ops, v2
) -> None:
    """The short variant of the one below, in ``make test``: two random histories."""
    _check_spark_engine_against_vacuum(spark, tmp_path_factory.mktemp("spark-short"), ops, v2)


@pytest.mark.spark
@pytest.mark.long
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=HISTORIES, v2=st.booleans())
def test_spark_engine_deletes_what_spark_vacuum_deletes_on_random_histories(
    spark, tmp_path_factory, ops, v2
) -> None:
    """The long variant: random histories (a failure here is a new fixed history above)."""
    _check_spark_engine_against_vacuum(spark, tmp_path_factory.mktemp("spark-oracle"), ops, v2)


def _check_spark_engine_against_vacuum(
    spark: Any, base: Path, ops: list[tuple[str, int]], v2: bool
) -> None:
    """At retention 0, the Spark engine's ``orphan`` plus ``expired-tombstone`` is the model's
    VACUUM, and Spark's VACUUM DRY RUN's on every file it does not mishandle."""
    from deltaguard.localstack.failed_job import vacuum_dry_run

    root = base / "t"
    t, _never = _run_history(root, ops, int(time.time() * 1000), v2=v2)
    found = scan_spark(
        spark, StoreSpec(str(root)), str(base / "r"), retention_ms=0, now_ms=int(time.time() * 1000)
    )
    ours = {
        c.path
        for c in found.result.candidates
        if c.file_class in (FileClass.ORPHAN, FileClass.EXPIRED_TOMBSTONE)
    }
    model, odd = _model_vacuum(t)
    assert ours == model
    vacuum = {
        str(Path(p).relative_to(root))
        for p in vacuum_dry_run(spark, str(root))
        if os.path.isfile(p)
    }
    assert ours - odd == vacuum - odd
    # odd files too: VACUUM's list minus what the latest version references (delta-rs's live
    # files and their deletion vectors) is what the engine deletes
    assert ours == vacuum - version_files(root, DeltaTable(str(root)).version())
