"""SIGINT and SIGTERM during ``deltaguard orphans --delete --yes``, local engine: real CLI
processes, real signals, mid-delete, on local disk and on S3 (moto behind the fault proxy,
whose delay holds the DeleteObjects requests in flight while the signal lands). What is
checked against the files really gone: the manifest says ``interrupted`` with counts such
that deleted + missing <= gone <= deleted + missing + unknown, no delete was sent after the
signal, the exit code is 4, the terminal says what was deleted and how to finish, and a
re-run of the same command, the same ``--manifest`` included, finishes the job: its manifest
goes beside the interrupted one (never replacing it) and says which run it continues."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import DELTAGUARD

from deltaguard.localstack.fault_proxy import FaultProxy, FaultRule
from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.localstack.table_copies import upload_table
from deltaguard.tools.exit_codes import ExitCode
from deltaguard.tools.orphans import read_manifest

DAY = 86_400_000
NOW = int(time.time() * 1000)
OLD = NOW - 30 * DAY
#: A DeleteObjects request body; its group (the batch's first object key) is the hold key.
DELETE_BATCH = r"<Delete\b.*?<Key>([^<]+)</Key>"


def stray_table(root: Path, strays: int) -> list[str]:
    """A table with one live file and ``strays`` old orphans; returns the orphans' paths."""
    t = SyntheticTable(root)
    t.create(OLD)
    t.write_file("p=a/live.parquet", OLD)
    t.commit([{"add": t.add_action("p=a/live.parquet", OLD)}], OLD)
    paths = [f"p={k % 50}/part-{k:06d}-stray.parquet" for k in range(strays)]
    for p in paths:
        t.write_file(p, OLD)
    return paths


def start_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [DELTAGUARD, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def run_dirs(manifests: Path) -> list[Path]:
    """The run directories in the ``--manifest`` directory ``manifests``, by name."""
    return sorted(p for p in manifests.iterdir() if p.is_dir()) if manifests.is_dir() else []


def wait_for_status(
    manifests: Path, status: str, proc: subprocess.Popen[str], timeout_s: float = 120
) -> Path:
    """Waits until the one run directory in ``manifests`` says ``status``; returns it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for run in run_dirs(manifests):
            try:
                if json.loads((run / "manifest.json").read_bytes())["status"] == status:
                    return run
            except (OSError, ValueError):
                pass
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.002)
    raise AssertionError(f"no manifest in {manifests} said {status}")


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    """Waits for the run to end, draining its output (a --json report outgrows the pipe);
    returns its exit code, stdout and stderr."""
    out, err = proc.communicate(timeout=180)
    return proc.returncode, out, err


def check_interrupted(
    ended: tuple[int, str, str],
    manifest: Path,
    planned: list[str],
    gone: set[str],
    sig: str,
    as_json: bool = False,
) -> dict[str, Any]:
    """The checks every interrupted run must pass, ``ended`` as :func:`finish` returns it
    (``as_json``: the run had ``--json``); returns the summary."""
    code, out, err = ended
    assert code == ExitCode.INTERRUPTED == 4, out + err
    assert "Traceback" not in err and "Aborted" not in err, err
    doc = read_manifest(manifest).summary
    if as_json:  # stdout is the report, its cleanup the summary; the lines go to stderr
        assert json.loads(out)["cleanup"] == {**doc, "manifest_path": str(manifest)}
        out = err
    counts = doc["counts"]
    assert doc["status"] == "interrupted" and doc["signal"] == sig, doc
    done = counts["deleted"] + counts["missing"]
    assert done <= len(gone) <= done + counts["unknown"], (counts, len(gone))
    assert counts["not_sent"] > 0, counts  # the signal landed mid-run: some never sent
    assert done + counts["failed"] + counts["unknown"] + counts["not_sent"] == len(planned)
    records = read_manifest(manifest)
    assert set(records.paths("deleted")) <= gone
    assert not gone & set(records.paths("planned")), "a file gone although never sent"
    assert len(records.paths("planned")) == counts["not_sent"]
    assert f"stopped by {sig}: deleted {counts['deleted']} files" in out, out
    assert f"{sig}: stopping: no new deletes are sent" in err, err
    assert "To finish, run the same command again" in err, err
    return doc


# proves: docs/guides/cleanup.md "SIGINT/SIGTERM never loses the record; deleted + missing <= gone
# <= deleted + missing + unknown"
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_mid_delete_on_local_disk(tmp_path: Path, sig: signal.Signals, run_cli) -> None:
    planned = stray_table(tmp_path / "t", 8_000)
    manifests = tmp_path / "m"
    args = ["orphans", str(tmp_path / "t"), "--delete", "--yes", "--manifest", str(manifests)]
    as_json = sig is signal.SIGTERM  # a scheduler's stop of a scripted run
    gate = tmp_path / "gate"  # the deletes after the first wait for gate/go (unlink_gate/)
    gate.mkdir()
    env = {"PYTHONPATH": str(Path(__file__).parent / "unlink_gate"),
           "DELTAGUARD_TEST_UNLINK_GATE": str(gate),
           "DELTAGUARD_TEST_UNLINK_ROOT": str(tmp_path / "t")}  # fmt: skip
    proc = start_cli(*args, *(["--json"] if as_json else []), env=env)
    manifest = wait_for_status(manifests, "deleting", proc)
    while not (gate / "held").exists():  # one file deleted, the rest held: mid-run
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(sig)
    assert proc.stderr is not None
    seen = [proc.stderr.readline()]  # the handler's "stopping" line: the stop is set
    while seen[-1] and f"{sig.name}: stopping" not in seen[-1]:
        seen.append(proc.stderr.readline())
    (gate / "go").touch()
    code, out, err = finish(proc)
    ended = (code, out, "".join(seen) + err)
    gone = {p for p in planned if not (tmp_path / "t" / p).exists()}
    first = check_interrupted(ended, manifest, planned, gone, sig.name, as_json)
    if sig is signal.SIGTERM:
        return  # the re-run below is the same for either signal
    check_rerun(run_cli(*args, "--json"), manifests, manifest, first, planned, gone)
    assert not any((tmp_path / "t" / p).exists() for p in planned)
    assert (tmp_path / "t" / "p=a/live.parquet").exists()
    again = run_cli(*args)  # finished: the next run continues nothing, and writes nothing
    assert again.returncode == 0 and "nothing to clean up" in again.stdout, again.stderr
    assert "continues" not in again.stdout and len(run_dirs(manifests)) == 2


def check_rerun(
    ended: subprocess.CompletedProcess[str],
    manifests: Path,
    interrupted: Path,
    first: dict[str, Any],
    planned: list[str],
    gone: set[str],
) -> dict[str, Any]:
    """The re-run (``--json``) of an interrupted run with the same ``--manifest``: exit 0, a
    second manifest beside the first (kept as it was), naming it in ``continues``; the files
    of unknown outcome re-checked (gone or planned again), and every stray counted once
    across both runs. Returns the re-run's summary."""
    assert ended.returncode == 0, ended.stdout + ended.stderr
    runs = run_dirs(manifests)
    assert len(runs) == 2 and interrupted in runs, runs
    assert read_manifest(interrupted).summary == first  # never replaced
    rerun = next(r for r in runs if r != interrupted)
    doc = read_manifest(rerun).summary
    assert json.loads(ended.stdout)["cleanup"] == {**doc, "manifest_path": str(rerun)}
    link = doc["continues"]
    unknown = first["counts"]["unknown"]
    assert link == {
        "run": interrupted.name,
        "manifest": str(interrupted),
        "status": "interrupted",
        "signal": first["signal"],
        "error": None,
        "deleted": first["counts"]["deleted"],
        "rechecked": unknown,
        "planned_again": link["planned_again"],
        "gone": unknown - link["planned_again"],
    }, link
    earlier = read_manifest(interrupted)
    unsure = set(earlier.paths("unknown"))
    assert link["gone"] == len(unsure & gone)  # what the interrupted run deleted unrecorded
    again = set(read_manifest(rerun).paths("deleted"))
    assert link["planned_again"] == len(unsure & again)
    assert not again & set(earlier.paths("deleted")), "a file deleted twice"
    counts, before = doc["counts"], first["counts"]
    assert doc["status"] == "done" and counts["failed"] == counts["unknown"] == 0, doc
    assert before["deleted"] + before["missing"] + link["gone"] + counts["deleted"] == len(
        planned
    ), (before, link, counts)
    return doc


def test_a_signal_before_deleting_began_deletes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal while the log is re-read (the handler raises then: nothing to settle, the
    re-read of a large table is not waited for): CleanupStopped, nothing deleted, and the
    manifest says interrupted, with the signal."""
    from deltaguard.tools.orphans import cleanup, execute, scan
    from deltaguard.tools.orphans.interrupt import CleanupStopped, stop_on_signals
    from deltaguard.tools.storage import open_table

    planned = stray_table(tmp_path / "t", 30)
    store = open_table(str(tmp_path / "t"))
    result = scan(store)
    real_recheck = cleanup.recheck

    def signalled_recheck(*args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGTERM)  # handled before the next bytecode
        return real_recheck(*args, **kwargs)

    monkeypatch.setattr(cleanup, "recheck", signalled_recheck)
    before = signal.getsignal(signal.SIGTERM)
    with stop_on_signals() as stop, pytest.raises(CleanupStopped) as stopped:
        execute(store, result, manifest_path=tmp_path / "m", stop=stop)
    assert stopped.value.signal_name == "SIGTERM"
    assert all((tmp_path / "t" / p).exists() for p in planned)
    doc = read_manifest(tmp_path / "m").summary
    assert (doc["status"], doc["signal"], doc["counts"]["deleted"]) == ("interrupted", "SIGTERM", 0)
    assert signal.getsignal(signal.SIGTERM) is before  # the handlers are restored


# proves: docs/guides/cleanup.md "SIGINT/SIGTERM never loses the record; deleted + missing <= gone
# <= deleted + missing + unknown"
@pytest.mark.servers
@pytest.mark.slow  # about 20 s: make test runs it, make test-fast keeps the local-disk case
@pytest.mark.parametrize(
    "sig",
    [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.long)],
    ids=["SIGINT", "SIGTERM"],
)
def test_signal_mid_delete_on_s3(
    moto: Any, moto_bucket: str, tmp_path: Path, sig: signal.Signals
) -> None:
    """4,500 strays: five DeleteObjects batches, four in flight at once, each held by the
    proxy until the test releases it. The signal lands while the first four are held (by
    construction, not by timing): the run says it is stopping, then the test releases them;
    their answers are read and recorded (4,000 deleted), the fifth is never sent."""
    planned = stray_table(tmp_path / "t", 4_500)
    client = moto.endpoint.s3_client()
    upload_table(tmp_path / "t", client, moto_bucket, "lake/t", workers=16)
    manifests = tmp_path / "m"
    with FaultProxy(moto.endpoint, tmp_path / "proxy", seed=1) as proxy:
        # Each DeleteObjects batch is held on its own key (its first object key), so no
        # request is another's peer: every batch waits until set_rules([]) releases it.
        hold = FaultRule("hold_until_peer", method="POST", body_regex=DELETE_BATCH, delay_s=120)
        proxy.set_rules([hold])
        env = {"AWS_ACCESS_KEY_ID": moto.endpoint.access_key,
               "AWS_SECRET_ACCESS_KEY": moto.endpoint.secret_key}  # fmt: skip
        args = ["orphans", f"s3://{moto_bucket}/lake/t", "--endpoint", proxy.endpoint.url,
                "--region", moto.endpoint.region, "--path-style", "--retention", "0",
                "--unsafe-retention", "--delete", "--yes", "--manifest", str(manifests)]  # fmt: skip
        proc = start_cli(*args, env=env)
        manifest = wait_for_status(manifests, "deleting", proc)
        while proxy.fired() != [4]:  # the first four requests are held by the proxy
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
        proc.send_signal(sig)
        assert proc.stderr is not None
        seen = [proc.stderr.readline()]  # the handler's "stopping" line: the stop is set
        while seen[-1] and f"{sig.name}: stopping" not in seen[-1]:
            seen.append(proc.stderr.readline())
        assert proxy.fired() == [4], "no delete was sent while the four were held"
        proxy.set_rules([])  # releases the four held batches
        code, out, err = finish(proc)
        ended = (code, out, "".join(seen) + err)
        deletes = [r for r in proxy.requests() if r["kind"] == "s3 DeleteObjects"]
    keys: set[str] = set()
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=moto_bucket, Prefix="lake/t/"
    ):
        keys |= {o["Key"].removeprefix("lake/t/") for o in page.get("Contents", [])}
    gone = {p for p in planned if p not in keys}
    doc = check_interrupted(ended, manifest, planned, gone, sig.name)
    assert len(deletes) == 4 == doc["requests"], deletes  # none sent after the signal
    assert doc["counts"]["deleted"] == 4_000 == len(gone)
    assert doc["counts"]["not_sent"] == 500


# proves: docs/guides/cleanup.md "a manifest is never replaced"
def test_python_api_run_is_refused_over_an_existing_manifest(tmp_path: Path) -> None:
    from deltaguard.tools.orphans import execute, scan
    from deltaguard.tools.orphans.manifest import ManifestPathError
    from deltaguard.tools.storage import open_table

    stray_table(tmp_path / "t", 3)
    store = open_table(str(tmp_path / "t"))
    execute(store, scan(store), manifest_path=tmp_path / "m")
    stray_table(tmp_path / "t2", 3)
    store = open_table(str(tmp_path / "t2"))
    with pytest.raises(ManifestPathError, match="already holds a manifest"):
        execute(store, scan(store), manifest_path=tmp_path / "m")
    assert read_manifest(tmp_path / "m").summary["table"].endswith("/t")


@pytest.mark.servers
def test_no_retry_of_a_delete_request_is_sent_after_the_stop(
    moto: Any, moto_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DeleteObjects request answered 500 (botocore would retry it, up to 8 attempts): the
    stop asked for after its first send lets no retry out (neither botocore's nor ours), and
    its keys are ``unknown`` (a 500 may have applied), not ``not_sent``."""
    from deltaguard.tools.storage import S3Options, open_table

    client = moto.endpoint.s3_client()
    keys = [f"t/k{i}" for i in range(3)]
    for key in keys:
        client.put_object(Bucket=moto_bucket, Key=key, Body=b"x")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", moto.endpoint.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", moto.endpoint.secret_key)
    with FaultProxy(moto.endpoint, tmp_path, seed=1) as proxy:
        proxy.set_rules(
            [FaultRule(action="error", method="POST", status=500, code="InternalError")]
        )
        s3 = S3Options(proxy.endpoint.url, moto.endpoint.region, path_style=True)
        store = open_table(f"s3://{moto_bucket}/t", s3)
        checks = 0

        def stop() -> bool:  # 1: before the batch, 2: before its first send, 3: before a retry
            nonlocal checks
            checks += 1
            return checks >= 3

        outcome = store.delete_batch([k.removeprefix("t/") for k in keys], 5, stop)
        assert proxy.fired() == [1]  # the one request: no retry reached the proxy
    assert sorted(p for p, _ in outcome.unknown) == ["k0", "k1", "k2"]
    assert not outcome.not_sent and not outcome.deleted and outcome.requests == 1
    # without a stop the same request is retried (the retries are botocore's and ours)
    with FaultProxy(moto.endpoint, tmp_path / "again", seed=1) as proxy:
        proxy.set_rules(
            [FaultRule(action="error", method="POST", status=500, code="InternalError", times=2)]
        )
        s3 = S3Options(proxy.endpoint.url, moto.endpoint.region, path_style=True)
        outcome = open_table(f"s3://{moto_bucket}/t", s3).delete_batch(["k0"], 5)
        assert proxy.fired() == [2] and outcome.deleted == ["k0"]
