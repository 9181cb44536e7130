"""deltaguard orphans without Spark: classes, rules, CLI exit codes, cleanup safety with a
writer in flight, S3 (LocalStack) listing and batched deletes."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from deltaguard.localstack.synthetic_table import (
    SyntheticTable,
    dv_descriptor,
    dv_file_name,
)
from deltaguard.localstack.table_copies import upload_table
from deltaguard.tools.cli import main
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.actions import AddFile, parse_action
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.orphans import (
    CleanupOptions,
    FileClass,
    OutsideTableError,
    RetentionTooShortError,
    execute,
    read_manifest,
    scan,
)
from deltaguard.tools.orphans.deleter import check_contained
from deltaguard.tools.orphans.rules import hidden_name_rule
from deltaguard.tools.storage import open_table

DAY = 86_400_000
NOW = int(time.time() * 1000)


def _table(root: Path) -> SyntheticTable:
    """Two live files (one with a DV), an old tombstone, a recent tombstone, an old orphan,
    a recent orphan, an old cdc orphan, an old log temp file, a hidden file."""
    t = SyntheticTable(root)
    t.create(NOW - 10 * DAY)
    old = NOW - 9 * DAY
    for rel in ("p=a/live.parquet", "p=a/dv.parquet", "p=b/gone.parquet", "p=b/fresh-rm.parquet"):
        t.write_file(rel, old)
    t.commit(
        [
            {"add": t.add_action(r, old)}
            for r in (
                "p=a/live.parquet",
                "p=a/dv.parquet",
                "p=b/gone.parquet",
                "p=b/fresh-rm.parquet",
            )
        ],
        old,
    )
    dv = uuid.uuid4()
    t.write_file(dv_file_name(dv), old)
    t.commit(
        [
            {"remove": t.remove_action(("p=a/dv.parquet", None), NOW - 8 * DAY)},
            {"add": t.add_action("p=a/dv.parquet", old, dv=dv_descriptor(dv))},
            {"remove": t.remove_action(("p=b/gone.parquet", None), NOW - 8 * DAY)},
        ],
        NOW - 8 * DAY,
    )
    t.commit([{"remove": t.remove_action(("p=b/fresh-rm.parquet", None), NOW - DAY)}], NOW - DAY)
    t.checkpoint()
    t.write_file("p=b/part-orphan.parquet", old, size=10)
    t.write_file("p=c/part-recent.parquet", NOW - 60_000)
    t.write_file("_change_data/cdc-orphan.parquet", old)
    t.write_file("_delta_log/.00000000000000000009.json.1234.tmp", old)
    t.write_file("p=a/.part-orphan.parquet.crc", old)
    t.write_file("_ignored/x.parquet", old)
    return t


def _classes(result) -> dict[str, str]:
    return {c.path: c.file_class.value for c in result.candidates}


def test_scan_classifies_with_vacuum_rules(tmp_path: Path) -> None:
    _table(tmp_path / "t")
    result = scan(open_table(str(tmp_path / "t")))
    assert result.retention_ms == 7 * DAY
    assert _classes(result) == {
        "p=b/gone.parquet": "expired-tombstone",
        "p=b/part-orphan.parquet": "orphan",
        "p=c/part-recent.parquet": "recent",
        "_change_data/cdc-orphan.parquet": "orphan",
        "_delta_log/.00000000000000000009.json.1234.tmp": "log-temp",
    }
    assert "_ignored" in result.hidden_dirs and "_delta_log" in result.hidden_dirs
    # the recently removed file is protected by its tombstone, the DV file by the live add
    loose = scan(open_table(str(tmp_path / "t")), retention_ms=0)
    assert _classes(loose)["p=b/fresh-rm.parquet"] == "expired-tombstone"
    assert _classes(loose)["p=c/part-recent.parquet"] == "orphan"
    assert not any(p.startswith("deletion_vector_") for p in _classes(loose))


# proves: docs/guides/cleanup.md "hidden names and streaming leftovers are never touched"
def test_hidden_rule_and_uri_normalisation(tmp_path: Path) -> None:
    hidden = hidden_name_rule(["_p"], {"delta.universalFormat.enabledFormats": "iceberg"})
    assert hidden("_delta_log") and hidden(".x.crc") and hidden("_tmp") and hidden("metadata")
    assert not hidden("_change_data") and not hidden("_delta_index") and not hidden("_p=1")
    assert not hidden_name_rule([])("metadata")
    local = open_table(str(tmp_path))
    assert relative_to_root(f"file://{tmp_path}/a b/c", local) == "a b/c"
    assert relative_to_root(f"{tmp_path}/x", local) == "x"
    assert relative_to_root("/elsewhere/x", local) is None
    assert relative_to_root("s3://b/t/x", local) is None
    s3 = open_table("s3a://bkt/tbl", client=object())
    for uri in ("s3://bkt/tbl/p=1/x", "s3a://bkt/tbl/p=1/x", "s3n://bkt/tbl/p=1/x"):
        assert relative_to_root(uri, s3) == "p=1/x"
    assert relative_to_root("s3://bkt/tbl2/x", s3) is None
    assert relative_to_root("s3://other/tbl/x", s3) is None
    assert relative_to_root("gs://bkt/tbl/x", s3) is None


#: Characters a decoded path keeps literally: none of them may end or split it.
ODD = "a #b?c%41d+e é ü"


def test_one_path_rule_keeps_literal_hash_question_percent(tmp_path: Path) -> None:
    """The one rule (deltaguard.tools.deltalog.paths) on decoded log paths: ``#``, ``?`` and
    ``%`` are characters of the path, never a fragment, a query or an escape; relative or
    absolute is decided on the encoded form (``ab%3Ac`` is the relative file ``ab:c``)."""
    local = open_table(str(tmp_path))
    for absolute in (f"file://{tmp_path}/p={ODD}/{ODD}", f"file:{tmp_path}/p={ODD}/{ODD}"):
        assert relative_to_root(absolute, local) == f"p={ODD}/{ODD}"
    assert relative_to_root(f"{tmp_path}/x/../{ODD}", local) == ODD
    assert relative_to_root(f"./p={ODD}/x", local) == f"p={ODD}/x"
    s3 = open_table("s3a://bkt/tbl", client=object())
    assert relative_to_root(f"s3://bkt/tbl/p={ODD}/{ODD}", s3) == f"p={ODD}/{ODD}"
    assert relative_to_root(f"s3a://bkt/tbl#/{ODD}", s3) is None  # the prefix tbl#, not tbl
    assert relative_to_root("s3a://bkt/tbl/a/../../tbl2/x", s3) is None
    add = parse_action({"add": {**_ADD, "path": "ab%3Ac.parquet"}})
    assert isinstance(add, AddFile) and relative_to_root(add.path, s3) == "ab:c.parquet"
    encoded = "s3a://bkt/tbl/p=a%20%23b%3Fc%2541d+e%20%C3%A9/x"
    add = parse_action({"add": {**_ADD, "path": encoded}})
    assert isinstance(add, AddFile) and relative_to_root(add.path, s3) == "p=a #b?c%41d+e é/x"


_ADD = {"partitionValues": {}, "size": 1, "modificationTime": 0, "dataChange": True}


def test_absolute_entries_with_hash_and_question_mark_keep_their_files(tmp_path: Path) -> None:
    """``add`` and ``remove`` entries by absolute, encoded ``file:`` path with ``#``/``?`` in a
    directory name; the remove's tombstone has left the checkpoint, so only the retained
    commit 1 still names that file. The local engine keeps the live file, classes the other
    ``expired-tombstone`` (the old rule cut the decoded path at the ``#``/``?``, saw no
    retained entry and called it an orphan, which cleanup deletes by default), and cleanup
    deletes only the orphan."""
    t = SyntheticTable(tmp_path / "t")
    t.create(NOW - 10 * DAY)
    old = NOW - 9 * DAY
    names = {"live": "p=a #b/live.parquet", "gone": "p=c?d/gone.parquet"}
    for rel in (*names.values(), "p=a #b/orphan.parquet"):
        t.write_file(rel, old)
    uri = {k: f"file:{tmp_path / 't'}/" + quote(v, safe="/=") for k, v in names.items()}
    t.commit([{"add": {**t.add_action(v, old), "path": uri[k]}} for k, v in names.items()], old)
    gone = {"path": uri["gone"], "deletionTimestamp": NOW - 8 * DAY, "dataChange": True}
    t.commit([{"remove": gone}], NOW - 8 * DAY)
    t.tombstones.clear()  # expired: a checkpoint no longer carries it
    t.checkpoint()
    store = open_table(str(tmp_path / "t"))
    result = scan(store, retention_ms=DAY)
    assert {c.path: c.file_class for c in result.candidates} == {
        "p=a #b/orphan.parquet": FileClass.ORPHAN,
        names["gone"]: FileClass.EXPIRED_TOMBSTONE,
    }
    execute(store, result, manifest_path=tmp_path / "m")
    assert read_manifest(tmp_path / "m").paths("deleted") == ["p=a #b/orphan.parquet"]
    assert all((tmp_path / "t" / rel).exists() for rel in names.values())


# proves: docs/guides/cleanup.md "only plain relative paths below the root are deleted; one bad path
# deletes nothing"
def test_containment_refuses_paths_outside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "t"
    (root / "p=1").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("keep me")
    (root / "link").symlink_to(outside)
    store = open_table(str(root))
    for bad in (
        "../outside/victim",
        "/etc/passwd",
        "p=1/../../outside/victim",
        "",
        "link/victim",
        "s3://b/k",
    ):
        with pytest.raises(OutsideTableError):
            check_contained(store, ["p=1/ok", bad])
    assert (outside / "victim").exists()


def test_cli_exit_codes_json_and_manifest(tmp_path: Path) -> None:
    _table(tmp_path / "t")
    table = str(tmp_path / "t")
    runner = CliRunner()
    dry = runner.invoke(main, ["orphans", table, "--json"])
    assert dry.exit_code == 1, dry.output
    report = json.loads(dry.output)
    assert report["schema"] == "deltaguard.orphans.report/1"
    assert report["totals"]["orphan"] == {"files": 2, "bytes": 10}
    assert {"partition": "p=b", "class": "orphan", "files": 1, "bytes": 10} in report["partitions"]
    refused = runner.invoke(main, ["orphans", table, "--delete", "--yes", "--retention", "1"])
    assert refused.exit_code == 2 and "--unsafe-retention" in refused.output
    old_style = runner.invoke(
        main, ["orphans", table, "--delete", "--yes", "--manifest", str(tmp_path / "m.json")]
    )  # manifest/1 was one JSON file: such a path is refused, nothing is deleted
    assert old_style.exit_code == 2 and "not a .json file" in old_style.output
    assert (tmp_path / "t/p=b/part-orphan.parquet").exists()
    manifest = tmp_path / "m"
    done = runner.invoke(
        main, ["orphans", table, "--delete", "--yes", "--json", "--manifest", str(manifest)]
    )
    assert done.exit_code == 0, done.output  # everything planned was deleted
    written = read_manifest(manifest)  # its latest run: the one run directory in it
    assert written.summary["status"] == "done" and written.directory.parent == manifest
    assert json.loads(done.output)["cleanup"] == {
        **written.summary,
        "manifest_path": str(written.directory),
    }
    assert written.paths("deleted") == [
        "_change_data/cdc-orphan.parquet",
        "_delta_log/.00000000000000000009.json.1234.tmp",
        "p=b/part-orphan.parquet",
    ]
    assert (tmp_path / "t/p=b/gone.parquet").exists()  # tombstones only with the flag
    assert runner.invoke(main, ["orphans", table]).exit_code == 0
    missing = runner.invoke(main, ["orphans", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    assert "Traceback" not in missing.output


# proves: docs/guides/cleanup.md "a commit that landed since the scan spares every file it names"
def test_commit_after_the_scan_is_spared_by_the_reread(tmp_path: Path) -> None:
    """Scan at retention 0 sees the writer's uncommitted files as orphans; the writer commits
    (one of its adds even names an old orphan) between the scan and the delete (staged, not
    overlapped: see test_writer_in_flight_survives_cleanup); the re-read spares them."""
    root = tmp_path / "t"
    t = _table(root)
    store = open_table(str(root))
    inflight = [t.write_file(f"p=w/part-{i}.parquet", NOW) for i in range(3)]
    result = scan(store, retention_ms=0)
    assert all(_classes(result)[p] == "orphan" for p in inflight)
    committed = threading.Event()

    def writer() -> None:
        t.commit(
            [{"add": t.add_action(p, NOW)} for p in [*inflight, "p=b/part-orphan.parquet"]],
            int(time.time() * 1000),
        )
        committed.set()

    thread = threading.Thread(target=writer)
    thread.start()
    assert committed.wait(10)
    thread.join()
    done = execute(
        store,
        result,
        manifest_path=tmp_path / "m",
        options=CleanupOptions(unsafe_retention=True, given_retention=True),
    )
    spared = {c.path for c, _why in done.recheck.spared}
    assert spared == {*inflight, "p=b/part-orphan.parquet"}
    assert done.recheck.version == result.version + 1
    snap = load_snapshot(str(root))
    assert snap.version == result.version + 1
    assert all((root / p).exists() for p in snap.adds.paths())
    written = read_manifest(tmp_path / "m")
    assert "_change_data/cdc-orphan.parquet" in written.paths("deleted")
    assert written.paths("spared") == sorted(spared)
    with pytest.raises(RetentionTooShortError):
        execute(store, result, manifest_path=tmp_path / "m2")


# proves: docs/guides/cleanup.md "files younger than the cut-off are never deleted; a writer in
# flight survives"
def test_writer_in_flight_survives_cleanup(tmp_path: Path, run_cli) -> None:
    """A writer really in flight: a thread writes data files and commits them (adds, removes
    of its earlier files, a checkpoint every 10 commits) without pause, from before
    ``deltaguard orphans --delete --yes`` starts (its own process, default retention) until
    after it ends. The cleanup deletes the old orphans; every file the final log references
    still exists (checked by delta-rs, not by the code under test) and the table holds what
    the writer committed."""
    from deltalake import DeltaTable

    root = tmp_path / "t"
    t = _table(root)
    old = NOW - 9 * DAY
    # Old orphans in many directories: the cleanup has work while the writer commits.
    stale = [t.write_file(f"p=o{i % 40}/part-stale-{i}.parquet", old) for i in range(400)]
    stop, errors = threading.Event(), []
    commits_at: list[float] = []

    def writer() -> None:
        n = 0
        try:
            while not stop.is_set():
                n += 1
                now = int(time.time() * 1000)
                actions = [{"add": t.add_action(t.write_file(f"p=w/part-{n}.parquet", now), now)}]
                mine = sorted(k for k in t.live if k[0].startswith("p=w/"))
                if n % 4 == 0 and len(mine) > 1:
                    actions.append({"remove": t.remove_action(mine[0], now)})
                t.commit(actions, now)
                commits_at.append(time.monotonic())
                if n % 10 == 0:
                    t.checkpoint()
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(commits_at) < 5 and thread.is_alive():
            time.sleep(0.01)
        started = time.monotonic()
        out = run_cli("orphans", str(root), "--delete", "--yes", "--manifest", str(tmp_path / "m"))
        ended = time.monotonic()
        while sum(1 for c in commits_at if c > ended) < 3 and thread.is_alive():
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join(30)
    assert errors == [] and not thread.is_alive(), errors
    assert out.returncode == 0, out.stdout + out.stderr
    during = [c for c in commits_at if started < c < ended]
    assert len(during) >= 3, f"only {len(during)} commits landed while the cleanup ran"
    assert not [p for p in stale if (root / p).exists()], "the cleanup deleted the old orphans"
    table = DeltaTable(str(root))
    assert table.version() == t.version
    files = table.file_uris()
    assert len(files) == len(t.live) and all(Path(f).exists() for f in files)
    assert len(list(root.glob("deletion_vector_*.bin"))) == 1, "the live file's DV is kept"


# proves: docs/guides/cleanup.md "a listing that raced a commit is listed again, never a failed or
# wrong scan"
def test_a_listing_that_raced_a_commit_is_listed_again(tmp_path: Path) -> None:
    """A listing made while a writer committed can miss commit N and hold N+1 (what
    test_writer_in_flight_survives_cleanup runs into); the log is listed again. A commit that
    stays missing is still reported, after LISTINGS_WHILE_A_GAP listings."""
    from deltaguard.tools.deltalog.errors import VersionNotFoundError
    from deltaguard.tools.deltalog.listing import LISTINGS_WHILE_A_GAP, list_log

    t = _table(tmp_path / "t")
    for _ in range(2):
        t.commit([{"add": t.add_action(t.write_file("p=a/more.parquet", NOW), NOW)}], NOW)
    store = open_table(str(t.root))
    real_list_dir = store.list_dir
    hidden = f"_delta_log/{t.version - 1:020d}.json"
    listings = []

    def racing_list_dir(prefix: str, **kwargs):  # type: ignore[no-untyped-def]
        entries = list(real_list_dir(prefix, **kwargs))
        if prefix == "_delta_log":
            listings.append(prefix)
            if len(listings) == 1:
                return [e for e in entries if e.path != hidden]
        return entries

    store.list_dir = racing_list_dir  # type: ignore[method-assign]
    assert t.version - 1 in list_log(store).commits and len(listings) == 2
    assert scan(store, retention_ms=0).version == t.version
    (t.root / hidden).unlink()
    listings.clear()
    with pytest.raises(VersionNotFoundError, match="is missing"):
        load_snapshot(store, listing=list_log(store))
    assert len(listings) == LISTINGS_WHILE_A_GAP


@pytest.mark.slow  # 5-10 s: make test-fast stays under 3 minutes
def test_s3_scan_and_batched_delete(localstack, ls_bucket: str, tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    for i in range(1100):
        t.write_file(f"p=z/part-{i:05d}-orphan.parquet", NOW)
    endpoint = localstack.endpoint
    client = endpoint.s3_client()
    upload_table(tmp_path / "t", client, ls_bucket, "lake/tbl", workers=8)
    client.put_object(Bucket=ls_bucket, Key="lake/tbl2/part-sibling.parquet", Body=b"x")
    client.put_object(Bucket=ls_bucket, Key="lake/part-above.parquet", Body=b"x")
    results = {
        scheme: scan(open_table(f"{scheme}://{ls_bucket}/lake/tbl", client=client), retention_ms=0)
        for scheme in ("s3", "s3a")
    }
    assert _classes(results["s3"]) == _classes(results["s3a"])
    classes = _classes(results["s3a"])
    assert sum(v == "orphan" for v in classes.values()) == 1100 + 3  # + orphan, cdc, fresh
    assert "p=a/live.parquet" not in classes and "p=a/dv.parquet" not in classes
    store = open_table(f"s3a://{ls_bucket}/lake/tbl", client=client)
    done = execute(
        store,
        results["s3a"],
        manifest_path=tmp_path / "m",
        options=CleanupOptions(unsafe_retention=True, given_retention=True),
    )
    assert not done.counts["failed"]
    assert done.counts["deleted"] == 1100 + 3 + 1
    assert len(read_manifest(tmp_path / "m").paths("deleted")) == 1100 + 3 + 1
    assert done.manifest["requests"] == 2  # 1,104 keys in DeleteObjects batches of 1,000
    keys = {
        o["Key"]
        for p in client.get_paginator("list_objects_v2").paginate(Bucket=ls_bucket)
        for o in p.get("Contents", [])
    }
    assert {"lake/tbl2/part-sibling.parquet", "lake/part-above.parquet"} <= keys
    assert "lake/tbl/p=a/live.parquet" in keys and "lake/tbl/p=b/gone.parquet" in keys
    assert [k for k in keys if "orphan" in k] == ["lake/tbl/p=a/.part-orphan.parquet.crc"]  # hidden


@pytest.mark.parametrize(
    ("damage", "code"),
    [("checkpoint", "checkpoint-unreadable"), ("commit", "corrupt-json-line")],
)
def test_a_table_the_audit_reads_is_refused_with_one_line_saying_why(
    tmp_path: Path, damage: str, code: str
) -> None:
    """Issue 49: a delta-rs table whose one checkpoint is truncated (every commit retained),
    or with a damaged line in a commit older than its checkpoint: the audit replays the
    latest version (exit 1), while orphans, which needs what every retained file names,
    refuses (exit 2, nothing deleted) in one line naming the file, what is wrong, why, and
    the audit finding that says what to do."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    root = tmp_path / "t"
    for i in range(4):
        write_deltalake(str(root), pa.table({"x": [i]}), mode="append")
    DeltaTable(str(root)).create_checkpoint()
    write_deltalake(str(root), pa.table({"x": [9]}), mode="append")
    stray = root / "part-stray.parquet"
    stray.write_bytes(b"x")
    os.utime(stray, (1, 1))
    log = root / "_delta_log"
    if damage == "checkpoint":
        bad = next(log.glob("*.checkpoint.parquet"))
        bad.write_bytes(bad.read_bytes()[:100])
    else:
        bad = log / f"{1:020d}.json"
        bad.write_bytes(bad.read_bytes() + b"{bad\n")
    runner = CliRunner()
    audit = runner.invoke(main, ["audit", str(root)])
    assert audit.exit_code == 1 and code in audit.output, audit.output
    refused = runner.invoke(main, ["orphans", str(root), "--delete", "--yes"])
    assert refused.exit_code == 2, refused.output
    (line,) = refused.stderr.splitlines()
    assert line.startswith(f"deltaguard orphans: cannot read {root}: {bad}"), line
    assert "nothing deleted" in line and "the latest version reads without it" in line
    assert f"`deltaguard audit {root}` reports it as {code}: " in line, line
    assert stray.exists()
