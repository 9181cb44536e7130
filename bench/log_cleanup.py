"""``make bench`` section ``log_cleanup``: ``deltaguard log-cleanup --yes`` on a log that was
never cleaned, and what it saves ``deltaguard audit``.

**The table** (:func:`build`): ``commits`` JSON commits, a classic checkpoint every
:data:`INTERVAL` versions (Delta's default interval), ``_last_checkpoint``; no ``.crc`` files.
Version 0 creates the table with :data:`LIVE_FILES` small Parquet data files (written, so the
audit's footer check reads them); every later commit is a streaming writer's idempotent
no-op (``commitInfo`` and a ``txn``), so every checkpoint is small and the log's size is its
object count, as in a stream's log that was never cleaned (delta-io/delta #7456). Each
checkpoint is deltaguard's own classic checkpoint of that version (:mod:`deltaguard.tools.
checkpoint.parquet`).

**Where**: on local disk the log files are aged 60 days (a millisecond apart, in version order)
and the table's 30-day default retention applies; on LocalStack S3 sets the modification
times when the files are uploaded, so the cleanup's clock is moved 2 days on with a 1-day
retention (the cut-off is truncated to the day, as Delta truncates it). Either way every
version up to the newest checkpoint is expired: the cleanup keeps the versions from it on.

**What is measured**, one run each, each a fresh process: ``deltaguard audit --json`` before
and after (wall; on LocalStack the S3 requests it sends, counted by a fault proxy with no
fault and no added latency in front of LocalStack; objects in ``_delta_log`` from its
``summary.log``), and ``log-cleanup --yes`` (:func:`cleanup_worker`: wall of the process and of
the run alone, files deleted, its S3 requests). The ratios are after / before of the one run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.fault_proxy import FaultProxy
from deltaguard.tools.checkpoint.last_checkpoint import last_checkpoint_json
from deltaguard.tools.checkpoint.parquet import checkpoint_rows, parquet_bytes

from .worker import run_worker, work_dir

#: Versions between checkpoints (Delta's default ``delta.checkpointInterval``).
INTERVAL = 10
#: Live data files (all added by version 0).
LIVE_FILES = 10
DAY_MS = 86_400_000
#: One audit's limit: 100,000 commits on LocalStack take most of an hour on 2 busy cores.
AUDIT_TIMEOUT_S = 4 * 3600
T0_MS = 1_760_000_000_000
_SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)
_PROTOCOL = {"minReaderVersion": 1, "minWriterVersion": 2}
_METADATA = {
    "id": "6f1c2d3e-0000-4000-8000-00000000b51c",
    "format": {"provider": "parquet", "options": {}},
    "schemaString": _SCHEMA,
    "partitionColumns": [],
    "configuration": {},
    "createdTime": T0_MS,
}


def _name(version: int, suffix: str) -> str:
    return f"{version:020d}.{suffix}"


def build(root: Path, commits: int, mtime_ms: int | None = None) -> dict[str, int]:
    """The table of the module docstring at ``root`` (local disk). With ``mtime_ms`` every log
    file of version v gets the modification time ``mtime_ms + v``. Returns the counts of the
    log's objects (``commits``, ``checkpoints``, ``objects`` with ``_last_checkpoint``)."""
    log = root / "_delta_log"
    log.mkdir(parents=True)
    adds = []
    for i in range(LIVE_FILES):
        rel = f"part-{i:05d}.parquet"
        pq.write_table(pa.table({"id": [i]}), root / rel)
        size = (root / rel).stat().st_size
        adds.append(
            {
                "path": rel,
                "partitionValues": {},
                "size": size,
                "modificationTime": T0_MS,
                "dataChange": True,
                "stats": '{"numRecords":1}',
            }
        )

    def commit(v: int) -> bytes:
        info = {"commitInfo": {"timestamp": T0_MS + v, "operation": "STREAMING UPDATE"}}
        if v == 0:
            lines: list[dict[str, Any]] = [
                {"commitInfo": {"timestamp": T0_MS, "operation": "CREATE TABLE"}},
                {"protocol": _PROTOCOL},
                {"metaData": _METADATA},
                *({"add": a} for a in adds),
            ]
        else:
            lines = [info, {"txn": {"appId": "bench", "version": v, "lastUpdated": T0_MS + v}}]
        return b"".join(orjson.dumps(line) + b"\n" for line in lines)

    def write(v: int) -> list[Path]:
        written = [log / _name(v, "json")]
        written[0].write_bytes(commit(v))
        if v and v % INTERVAL == 0:
            txn = [{"appId": "bench", "version": v, "lastUpdated": T0_MS + v}]
            table = checkpoint_rows(
                [{**a, "dataChange": False} for a in adds], [], _PROTOCOL, _METADATA, txn, []
            )
            path = log / _name(v, "checkpoint.parquet")
            path.write_bytes(parquet_bytes(table))
            written.append(path)
        if mtime_ms is not None:
            for path in written:
                os.utime(path, ns=((mtime_ms + v) * 1_000_000,) * 2)
        return written

    with ThreadPoolExecutor(4) as pool:
        files = [p for batch in pool.map(write, range(commits)) for p in batch]
    newest = (commits - 1) // INTERVAL * INTERVAL
    if newest:
        size = (log / _name(newest, "checkpoint.parquet")).stat().st_size
        hint = last_checkpoint_json(newest, 3 + LIVE_FILES, size, LIVE_FILES)
        (log / "_last_checkpoint").write_bytes(hint)
    checkpoints = len(files) - commits
    return {"commits": commits, "checkpoints": checkpoints, "objects": len(files) + (newest > 0)}


def upload(root: Path, endpoint: Endpoint, bucket: str, prefix: str, workers: int = 16) -> str:
    """Every file under ``root`` PUT under ``s3://bucket/prefix/`` (``workers`` at a time)."""
    from deltaguard.localstack.table_copies import upload_table

    return upload_table(root, endpoint.s3_client(), bucket, prefix, workers)


def _deltaguard() -> str:
    return str(Path(sys.executable).parent / "deltaguard")


def _audit(table: str, proxy: FaultProxy | None) -> dict[str, Any]:
    """One ``deltaguard audit --json`` process: wall, exit code, the log's objects and (through
    ``proxy``) the S3 requests it sent by kind."""
    args = [_deltaguard(), "audit", table, "--json", "--no-progress"]
    env = dict(os.environ)
    if proxy is not None:
        args += ["--endpoint-url", proxy.endpoint.url, "--path-style"]
        env.update(proxy.endpoint.credentials_env())
    before = proxy.stats()["by_kind"] if proxy is not None else {}
    started = time.monotonic()
    out = subprocess.run(
        args, capture_output=True, text=True, env=env, check=False, timeout=AUDIT_TIMEOUT_S
    )
    wall = time.monotonic() - started
    if out.returncode != 0:
        raise RuntimeError(f"audit {table}: exit {out.returncode}: {out.stderr[-2000:]}")
    report = json.loads(out.stdout)
    row: dict[str, Any] = {"wall_s": round(wall, 2), "objects": report["summary"]["log"]["objects"]}
    if proxy is not None:
        after = proxy.stats()["by_kind"]
        by_kind = {k: n - before.get(k, 0) for k, n in after.items() if n - before.get(k, 0)}
        row["requests"] = sum(by_kind.values())
        row["requests_by_kind"] = by_kind
    return row


def cleanup_worker(argv: list[str]) -> int:
    """``python -m bench.log_cleanup cleanup TABLE MANIFEST_DIR [ENDPOINT NOW_MS]``: one
    ``log-cleanup --yes`` (on S3: the clock at ``NOW_MS``, a 1-day retention); prints one JSON
    line: ``exit``, ``work_s`` (the run alone), ``deleted``, ``truncation_version``,
    ``log_objects`` (before)."""
    import contextlib
    import io

    from deltaguard.tools.orphans.log_cleanup_run import LogCleanupRequest, run_log_cleanup
    from deltaguard.tools.storage import S3Options

    table, manifest = argv[0], Path(argv[1])
    s3, now_ms, retention = S3Options(), None, None
    if len(argv) > 2:
        s3, now_ms, retention = S3Options(argv[2], None, True), int(argv[3]), DAY_MS
    request = LogCleanupRequest(
        table=table,
        s3=s3,
        retention_ms=retention,
        yes=True,
        as_json=True,
        manifest_path=manifest,
        now_ms=now_ms,
    )
    buffer = io.StringIO()
    started = time.monotonic()
    with contextlib.redirect_stdout(buffer):
        code = run_log_cleanup(request)
    work = time.monotonic() - started
    if code != 0:
        print(json.dumps({"exit": code}))
        return 0
    report = json.loads(buffer.getvalue())
    cleanup = report.get("cleanup") or {}
    print(
        json.dumps(
            {
                "exit": code,
                "work_s": round(work, 2),
                "deleted": cleanup.get("counts", {}).get("deleted"),
                "truncation_version": report["truncation_version"],
                "log_objects": report["log_objects"],
            }
        )
    )
    return 0


def _cleanup(
    table: str, workdir: Path, proxy: FaultProxy | None, now_ms: int | None
) -> dict[str, Any]:
    args = [table, str(workdir / "manifests")]
    if proxy is not None:
        args += [proxy.endpoint.url, str(now_ms)]
    before = proxy.stats()["by_kind"] if proxy is not None else {}
    row = run_worker("bench.log_cleanup", ["cleanup", *args], workdir / "log-cleanup.log")
    if row["exit"] != 0:
        raise RuntimeError(f"log-cleanup {table}: exit {row['exit']}; see {workdir}")
    if proxy is not None:
        after = proxy.stats()["by_kind"]
        row["requests"] = sum(n - before.get(k, 0) for k, n in after.items())
    return row


def _measure(
    table: str, workdir: Path, proxy: FaultProxy | None, now_ms: int | None
) -> dict[str, Any]:
    before = _audit(table, proxy)
    cleanup = _cleanup(table, workdir, proxy, now_ms)
    after = _audit(table, proxy)
    row: dict[str, Any] = {
        "objects_before": before["objects"],
        "objects_after": after["objects"],
        "cleanup": cleanup,
        "audit_before": before,
        "audit_after": after,
        "audit_wall_ratio": round(after["wall_s"] / before["wall_s"], 3),
    }
    if proxy is not None:
        row["audit_requests_ratio"] = round(after["requests"] / before["requests"], 4)
    return row


def run(endpoint: Endpoint, bucket: str, commits: int, localstack_commits: int) -> dict[str, Any]:
    """Local disk at ``commits`` versions, LocalStack at ``localstack_commits`` (module
    docstring)."""
    out: dict[str, Any] = {
        "what": f"a never-cleaned log: N commits (a streaming writer's no-op txn commits after "
        f"a create with {LIVE_FILES} data files), a classic checkpoint every {INTERVAL}, "
        "every version up to the newest checkpoint expired",
    }
    with work_dir("deltaguard-bench-log-cleanup-") as work:
        started = time.monotonic()
        local = work / "local"
        counts = build(local / "t", commits, int(time.time() * 1000) - 60 * DAY_MS)
        out["local"] = {**counts, "build_s": round(time.monotonic() - started, 1)}
        out["local"].update(_measure(str(local / "t"), local, None, None))
        print(f"[log_cleanup] local: {out['local']}", file=sys.stderr, flush=True)

        started = time.monotonic()
        remote = work / "localstack"
        counts = build(remote / "t", localstack_commits)
        uri = upload(remote / "t", endpoint, bucket, "log-cleanup/t")
        out["localstack"] = {**counts, "build_and_upload_s": round(time.monotonic() - started, 1)}
        now_ms = int(time.time() * 1000) + 2 * DAY_MS
        saved = dict(os.environ)
        os.environ.update(endpoint.credentials_env())  # for the cleanup worker
        try:
            with FaultProxy(endpoint, remote) as proxy:
                out["localstack"].update(_measure(uri, remote, proxy, now_ms))
        finally:
            os.environ.clear()
            os.environ.update(saved)
        print(f"[log_cleanup] localstack: {out['localstack']}", file=sys.stderr, flush=True)
    load = os.getloadavg()
    out["load"] = (
        f"load average {load[0]:.1f} at the end (15 min: {load[2]:.1f}) on {os.cpu_count()} cores"
    )
    return out


def markdown(section: dict[str, Any]) -> list[str]:
    lines = [
        f"`deltaguard log-cleanup --yes` on {section['what']} ({section.get('load', '')}); "
        "one run each, each a fresh process; S3 requests counted by a pass-through proxy in "
        "front of LocalStack. Versions kept: from the truncation checkpoint Delta's rule gives "
        "(on LocalStack the upload sets the times, a second apart at best: a checkpoint whose "
        "time is not above the file before it is passed over, as Delta passes it over), to "
        "the latest:",
        "",
        "| storage | commits (checkpoints) | `_delta_log` objects before / after | versions kept "
        "| cleanup wall (the run alone) | files deleted | cleanup S3 requests | audit wall "
        "before / after (after / before, one run) | audit S3 requests before / after "
        "(after / before, one run) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for storage in ("local", "localstack"):
        row = section.get(storage)
        if not row:
            continue
        c, b, a = row["cleanup"], row["audit_before"], row["audit_after"]
        on_s3 = "requests" in b
        cleanup_requests = f"{c['requests']:,}" if on_s3 else "(local disk)"
        audit_requests = (
            f"{b['requests']:,} / {a['requests']:,} ({row['audit_requests_ratio']:.4f})"
            if on_s3
            else "(local disk)"
        )
        lines.append(
            f"| {storage} | {row['commits']:,} ({row['checkpoints']:,}) | "
            f"{row['objects_before']:,} / {row['objects_after']:,} | "
            f"{c['truncation_version']:,}-{row['commits'] - 1:,} | {c['wall_s']:.1f} s "
            f"({c['work_s']:.1f} s) | {c['deleted']:,} | {cleanup_requests} | "
            f"{b['wall_s']:.2f} s / {a['wall_s']:.2f} s ({row['audit_wall_ratio']:.3f}) | "
            f"{audit_requests} |"
        )
    return [*lines, ""]


def main(argv: list[str]) -> int:
    """``python -m bench.log_cleanup cleanup ...``: the cleanup worker (:func:`cleanup_worker`);
    ``python -m bench.log_cleanup COMMITS [LOCALSTACK_COMMITS]``: measure outside ``make
    bench`` on a LocalStack of its own and print the markdown (nothing written to the
    results)."""
    if argv and argv[0] == "cleanup":
        return cleanup_worker(argv[1:])
    from deltaguard.localstack.localstack_server import LocalStackServer

    commits = int(argv[0]) if argv else 100_000
    remote = int(argv[1]) if len(argv) > 1 else commits
    with work_dir("deltaguard-bench-") as work, LocalStackServer(work / "localstack") as ls:
        ls.endpoint.s3_client().create_bucket(Bucket="deltaguard-bench")
        result = run(ls.endpoint, "deltaguard-bench", commits, remote)
    print(json.dumps(result, indent=1))
    print("\n".join(markdown(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
