"""Property: over random tables and histories, cleanup never deletes a file that any retained
version references (default classes), and with --include-tombstones never one that a version
committed after the cut-off references. Every old file no commit ever named is found."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaguard.localstack.synthetic_table import SyntheticTable, dv_descriptor, dv_file_name
from deltaguard.tools.deltalog import VersionNotFoundError, list_log, load_snapshot, open_table
from deltaguard.tools.orphans import FileClass, execute, scan
from deltaguard.tools.orphans.references import table_paths

HOUR = 3_600_000
OPS = st.sampled_from(["append", "remove", "dv", "orphan", "cdc", "checkpoint", "cleanup-log"])


def _run_history(
    root: Path, ops: list[tuple[str, int]], now: int
) -> tuple[SyntheticTable, set[str]]:
    """Applies ``ops`` (operation, hours before now); returns the table and the files written
    but never committed."""
    t = SyntheticTable(root)
    clock = now - 400 * HOUR
    t.create(clock)
    never: set[str] = set()
    n = 0
    for op, step in ops:
        clock = min(clock + step * HOUR, now - 1)
        n += 1
        if op == "append":
            rel = t.write_file(f"p={n % 3}/part-{n}.parquet", clock)
            t.commit([{"add": t.add_action(rel, clock)}], clock)
        elif op == "remove" and t.live:
            key = sorted(t.live)[n % len(t.live)]
            t.commit([{"remove": t.remove_action(key, clock)}], clock)
        elif op == "dv" and t.live:
            key = sorted(t.live)[n % len(t.live)]
            dv = uuid.uuid4()
            t.write_file(dv_file_name(dv), clock)
            add = t.add_action(key[0], clock, dv=dv_descriptor(dv))
            t.commit([{"remove": t.remove_action(key, clock)}, {"add": add}], clock)
        elif op == "orphan":
            never.add(t.write_file(f"p={n % 3}/part-failed-{n}.parquet", clock))
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
            t.checkpoint()
        elif op == "cleanup-log":
            checkpoints = sorted(root.glob("_delta_log/*.checkpoint.parquet"))
            if checkpoints:
                t.drop_commits_before(int(checkpoints[-1].name.split(".")[0]))
    return t, never


def _retained_versions(store) -> dict[int, tuple[int | None, set[str]]]:
    """Every version that can still be read: its timestamp and the files it references."""
    out = {}
    listing = list_log(store)
    for v in range(listing.latest_version + 1):
        try:
            snap = load_snapshot(store, version=v, listing=listing)
        except VersionNotFoundError:
            continue
        stamp = snap.timestamp_ms
        if stamp is None and snap.segment.checkpoint is not None:  # commit cleaned up
            stamp = listing.mtime_ms(snap.segment.checkpoint.files[0])
        out[v] = (stamp, table_paths(snap.adds.table, store))
    return out


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
    versions = _retained_versions(store)
    result = scan(store, retention_ms=retention_h * HOUR, now_ms=now)
    cutoff = result.cutoff_ms
    found = {c.path for c in result.of(FileClass.ORPHAN)}
    assert {p for p in never if (root / p).stat().st_mtime_ns // 1_000_000 < cutoff} <= found
    execute(
        store,
        result,
        manifest_path=root.parent / "manifest.json",
        include_tombstones=include_tombstones,
        unsafe_retention=True,
        given_retention=True,
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
