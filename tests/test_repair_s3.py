"""``deltaguard repair`` on LocalStack: the repair commit racing live appenders through the
conditional store (deltaguard's Python committer and delta-rs) and through the DynamoDB store
(no append lost, no repair lost, readers agree); a stranded commit of a DynamoDB writer killed
between its PutItem and its copy, brought back once; DynamoDB entries that prove nothing are
refused (one line, exit 2, nothing written)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from typing import Any

import pytest
from conftest import DELTAGUARD
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError
from s3_appends import rows, s3_put

from deltaguard.localstack.append_job import arrow_schema
from deltaguard.localstack.delta_append import BlindAppender, create_table
from deltaguard.localstack.fault_proxy import FaultRule
from deltaguard.localstack.multi_driver import kill_when, start_job
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore
from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore
from deltaguard.logstore.s3_location import S3Location
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck
from deltaguard.tools.storage import S3Options

COMMIT_PUT = r"/_delta_log/\d{20}\.json$"


@pytest.fixture(autouse=True)
def _credentials(localstack: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test bed's keys for the in-process reads (replay, audit) too."""
    for name, value in localstack.endpoint.credentials_env().items():
        monkeypatch.setenv(name, value)


def _cli_args(endpoint: Any, *more: str) -> list[str]:
    return ["--endpoint", endpoint.url, "--region", endpoint.region, "--path-style", *more]


def _ddb_args(endpoint: Any, table: str) -> list[str]:
    return ["--dynamodb-table", table, "--dynamodb-endpoint", endpoint.url]


def _s3(endpoint: Any) -> S3Options:
    return S3Options(endpoint.url, endpoint.region, True)


def _commit_json(endpoint: Any, uri: str, version: int) -> list[dict]:
    loc = S3Location.parse(f"{uri}/_delta_log/{version:020d}.json")
    body = endpoint.s3_client().get_object(Bucket=loc.bucket, Key=loc.key)["Body"].read()
    return [json.loads(line) for line in body.decode().splitlines() if line.strip()]


def _delete_live_file(endpoint: Any, uri: str) -> str:
    snap = load_snapshot(uri, s3=_s3(endpoint))
    victim = sorted(snap.adds.paths())[0]
    loc = S3Location.parse(f"{uri}/{victim}")
    endpoint.s3_client().delete_object(Bucket=loc.bucket, Key=loc.key)
    return victim


def _race(endpoint: Any, uri: str, writers: list[Any], repair: Any, appends: int) -> list[str]:
    """Each writer appends in its own thread, all the while ``repair()`` runs in this one and
    at least ``appends`` times; returns the tags the writers committed."""
    tags: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    repaired = threading.Event()

    def loop(i: int, write: Any) -> None:
        n = 0
        try:
            while n < appends or not repaired.is_set():
                tag = f"w{i}-{n}"
                write(tag)
                with lock:
                    tags.append(tag)
                n += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(i, w)) for i, w in enumerate(writers)]
    for t in threads:
        t.start()
    try:
        repair()
    finally:
        repaired.set()
    for t in threads:
        t.join()
    assert not errors, errors
    return tags


def _assert_everything_kept(
    endpoint: Any, uri: str, tags: list[str], victim: str, dynamodb: DynamoDBCheck | None = None
) -> None:
    """Every append is in the table once, the deleted file is gone from it (one FSCK commit),
    and the audit, delta-rs and the replay agree."""
    snap = load_snapshot(uri, s3=_s3(endpoint))
    fsck = [
        v
        for v in range(snap.version + 1)
        if _commit_json(endpoint, uri, v)[0].get("commitInfo", {}).get("operation") == "FSCK"
    ]
    assert len(fsck) == 1, f"one repair commit, got versions {fsck}"
    removed = [a["remove"]["path"] for a in _commit_json(endpoint, uri, fsck[0]) if "remove" in a]
    assert removed == [victim]
    dt = DeltaTable(uri.replace("s3a://", "s3://", 1), storage_options=endpoint.delta_rs_options())
    payloads = dt.to_pyarrow_table().column("payload").to_pylist()
    for tag in tags:
        assert payloads.count(tag) == 3, f"append {tag} lost or doubled"
    prefix = uri.replace("s3a://", "s3://", 1) + "/"
    assert {u.removeprefix(prefix) for u in dt.file_uris()} == set(snap.adds.paths())
    report = audit_table(uri, s3=_s3(endpoint), dynamodb=dynamodb)
    # a DynamoDB writer's completed temp commits stay behind (``orphans`` cleans them): the
    # audit's ``temp-file`` warning, no damage
    codes = {f.code for f in report.findings}
    assert codes <= ({"temp-file"} if dynamodb is not None else set()), report.findings


# proves: README and docs/guides/repair.md "repair next to live writers: nothing is ever
# overwritten"
@pytest.mark.parametrize(
    "appends",
    [pytest.param(4, marks=pytest.mark.slow), pytest.param(20, marks=pytest.mark.long)],
)
def test_repair_races_python_and_delta_rs_appenders_on_the_conditional_store(
    localstack, ls_bucket, run_cli, appends
):
    endpoint = localstack.endpoint
    uri = f"s3://{ls_bucket}/race"
    store = S3ConditionalLogStore(endpoint.s3_client())
    create_table(store, uri, arrow_schema())
    BlindAppender(store, s3_put(endpoint), uri).append(rows("seed-a"))
    BlindAppender(store, s3_put(endpoint), uri).append(rows("seed-b"))
    victim = _delete_live_file(endpoint, uri)
    env = endpoint.credentials_env()

    python = BlindAppender(S3ConditionalLogStore(endpoint.s3_client()), s3_put(endpoint), uri)

    def deltars(tag: str) -> None:
        # two writers that never pause exhaust delta-rs's default budget of 15 attempts; an
        # append whose read snapshot held the file the repair removes is refused by delta-rs's
        # own conflict check ("a concurrent transaction deleted data this operation read"):
        # nothing committed, so the job retries it, as a user's job would
        for _ in range(20):
            try:
                write_deltalake(
                    uri,
                    rows(tag),
                    mode="append",
                    storage_options=endpoint.delta_rs_options(),
                    commit_properties=CommitProperties(max_commit_retries=1000),
                )
                return
            except CommitFailedError as exc:
                if "concurrent transaction deleted data" not in str(exc):
                    raise
        raise AssertionError(f"delta-rs append {tag} refused 20 times")

    outcome: list[Any] = []

    def repair() -> None:
        outcome.append(run_cli("repair", uri, *_cli_args(endpoint, "--yes"), env=env))

    tags = _race(
        endpoint,
        uri,
        [lambda t: python.append(rows(t)), deltars],
        repair,
        appends=appends,
    )
    assert outcome[0].returncode == 0, outcome[0].stdout + outcome[0].stderr
    assert "committed version" in outcome[0].stdout
    _assert_everything_kept(endpoint, uri, tags, victim)


@pytest.mark.parametrize(
    "appends",
    [pytest.param(4, marks=pytest.mark.slow), pytest.param(20, marks=pytest.mark.long)],
)
def test_repair_races_python_appenders_on_the_dynamodb_store(
    localstack, ls_bucket, ls_commit_table, run_cli, appends
):
    endpoint = localstack.endpoint
    uri = f"s3a://{ls_bucket}/race"

    def store() -> S3DynamoDBLogStore:
        return S3DynamoDBLogStore(endpoint.s3_client(), endpoint.dynamodb_client(), ls_commit_table)

    create_table(store(), uri, arrow_schema())
    for seed in ("seed-a", "seed-b"):
        BlindAppender(store(), s3_put(endpoint), uri).append(rows(seed))
    victim = _delete_live_file(endpoint, uri)
    writers = [BlindAppender(store(), s3_put(endpoint), uri) for _ in range(2)]
    outcome: list[Any] = []

    def repair() -> None:
        args = _cli_args(endpoint, "--yes", "--commit-protocol", "dynamodb")
        outcome.append(
            run_cli(
                "repair", uri, *args, *_ddb_args(endpoint, ls_commit_table),
                env=endpoint.credentials_env(),
            )
        )  # fmt: skip

    tags = _race(
        endpoint, uri, [lambda t, w=w: w.append(rows(t)) for w in writers], repair, appends
    )
    assert outcome[0].returncode == 0, outcome[0].stdout + outcome[0].stderr
    check = DynamoDBCheck(endpoint.dynamodb_client(), ls_commit_table, (uri,))
    _assert_everything_kept(endpoint, uri, tags, victim, check)
    latest = load_snapshot(uri, s3=_s3(endpoint)).version
    ddb = S3DynamoDBLogStore(None, endpoint.dynamodb_client(), ls_commit_table)
    names = {e["fileName"] for e in ddb.entries(uri)}
    assert names == {f"{v:020d}.json" for v in range(latest + 1)}, "every commit through DynamoDB"


# proves: docs/guides/repair.md "repair restores a stranded commit only when the DynamoDB entry
# names it"
@pytest.mark.slow  # 5-10 s: make test-fast stays under 3 minutes
def test_stranded_commit_of_a_killed_dynamodb_writer_comes_back_once(
    ls_proxy, localstack, ls_bucket, ls_commit_table, tmp_path, run_cli
):
    """A DynamoDB-protocol writer freezes on its copy T(N) -> N.json (after its PutItem, the
    commit point) and is SIGKILLed. Nothing is deleted; repair restores N from T(N), once."""
    endpoint = localstack.endpoint
    uri = f"s3a://{ls_bucket}/t"
    direct = S3DynamoDBLogStore(endpoint.s3_client(), endpoint.dynamodb_client(), ls_commit_table)
    create_table(direct, uri, arrow_schema())
    ls_proxy.set_rules(
        [FaultRule("hang", method="PUT", path_regex=COMMIT_PUT, times=1, delay_s=120)]
    )
    proc = start_job(
        ["append", "--engine", "python", "--table", uri, "--logstore", "s3-dynamodb",
         "--dynamodb-table", ls_commit_table, "--endpoint", ls_proxy.endpoint.url,
         "--appends", "1", "--rows", "7", "--run-id", "killed", "--writer", "3"],
        tmp_path / "killed.log",
    )  # fmt: skip
    kill_when(proc, lambda: ls_proxy.fired() == [1], tmp_path / "killed.log", timeout_s=60)
    s3 = endpoint.s3_client()
    loc = S3Location.parse(f"{uri}/_delta_log/{1:020d}.json")
    assert "Contents" not in s3.list_objects_v2(Bucket=loc.bucket, Prefix=loc.key)
    env = endpoint.credentials_env()
    ddb = _ddb_args(endpoint, ls_commit_table)

    dry = run_cli("repair", uri, *_cli_args(endpoint), *ddb, env=env)
    assert dry.returncode == 1 and "version 1 would be restored" in dry.stdout, dry.stderr
    assert "Contents" not in s3.list_objects_v2(Bucket=loc.bucket, Prefix=loc.key)
    done = run_cli("repair", uri, *_cli_args(endpoint, "--yes"), *ddb, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "version 1 restored" in done.stdout
    entry = next(e for e in direct.entries(uri) if e["fileName"] == f"{1:020d}.json")
    temp = S3Location.parse(f"{uri}/_delta_log/{entry['tempPath']}")
    assert entry["complete"] is True
    restored = s3.get_object(Bucket=loc.bucket, Key=loc.key)["Body"].read()
    assert restored == s3.get_object(Bucket=temp.bucket, Key=temp.key)["Body"].read()
    assert _commit_json(endpoint, uri, 1)[0]["commitInfo"]["userMetadata"] == "killed/w3/b0"
    again = run_cli("repair", uri, *_cli_args(endpoint, "--yes"), *ddb, env=env)
    assert again.returncode == 0 and "nothing to repair" in again.stdout, again.stdout
    snap = load_snapshot(uri, s3=_s3(endpoint))
    assert snap.version == 1 and len(snap.adds) == 1, "the commit is back, once"
    check = DynamoDBCheck(endpoint.dynamodb_client(), ls_commit_table, (uri,))
    report = audit_table(uri, s3=_s3(endpoint), dynamodb=check)
    assert {f.code for f in report.findings} <= {"temp-file"}, report.findings


def _dynamodb_table_of_three_appends(endpoint: Any, uri: str, commit_table: str) -> Any:
    """Versions 0-3 through the DynamoDB store (three appends)."""
    store = S3DynamoDBLogStore(endpoint.s3_client(), endpoint.dynamodb_client(), commit_table)
    create_table(store, uri, arrow_schema())
    for tag in ("a", "b", "c"):
        BlindAppender(store, s3_put(endpoint), uri).append(rows(tag))
    return store


# proves: docs/guides/repair.md "repair restores a stranded commit only when the DynamoDB entry
# names it"
@pytest.mark.slow  # 5-10 s: make test-fast stays under 3 minutes
def test_stranded_commit_without_dynamodb_table_or_with_an_entry_naming_another_temp_is_refused(
    localstack, ls_bucket, ls_commit_table, run_cli
):
    endpoint = localstack.endpoint
    s3, ddb = endpoint.s3_client(), endpoint.dynamodb_client()
    uri = f"s3a://{ls_bucket}/t"
    store = _dynamodb_table_of_three_appends(endpoint, uri, ls_commit_table)
    name = f"{2:020d}.json"
    loc = S3Location.parse(f"{uri}/_delta_log/{name}")
    body = s3.get_object(Bucket=loc.bucket, Key=loc.key)["Body"].read()
    s3.delete_object(Bucket=loc.bucket, Key=loc.key)
    temp = S3Location.parse(f"{uri}/_delta_log/.tmp/{name}.someone-else")
    s3.put_object(Bucket=temp.bucket, Key=temp.key, Body=body)
    env = endpoint.credentials_env()
    before = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=loc.bucket)["Contents"])

    out = run_cli("repair", uri, *_cli_args(endpoint, "--yes"), env=env)
    assert out.returncode == 2 and "--dynamodb-table" in out.stderr, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1

    # the entry of version 2 names the writer's own temp file: once that is gone, the file
    # left here is not provably version 2
    entry = next(e for e in store.entries(uri) if e["fileName"] == name)
    own = S3Location.parse(f"{uri}/_delta_log/{entry['tempPath']}")
    s3.delete_object(Bucket=own.bucket, Key=own.key)
    before = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=loc.bucket)["Contents"])
    out = run_cli(
        "repair", uri, *_cli_args(endpoint, "--yes"), *_ddb_args(endpoint, ls_commit_table),
        env=env,
    )  # fmt: skip
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1 and "names .tmp/" in out.stderr
    after = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=loc.bucket)["Contents"])
    assert after == before, "nothing written"
    item = ddb.get_item(
        TableName=ls_commit_table,
        Key={"tablePath": {"S": uri}, "fileName": {"S": name}},
        ConsistentRead=True,
    )["Item"]
    assert item["tempPath"]["S"] != ".tmp/" + temp.name

    # the writer's own temp file back: version 2 is provably it, and is restored
    s3.put_object(Bucket=own.bucket, Key=own.key, Body=body)
    out = run_cli(
        "repair", uri, *_cli_args(endpoint, "--yes"), *_ddb_args(endpoint, ls_commit_table),
        env=env,
    )  # fmt: skip
    assert out.returncode == 0 and "version 2 restored" in out.stdout, out.stdout + out.stderr
    assert s3.get_object(Bucket=loc.bucket, Key=loc.key)["Body"].read() == body
    assert len(load_snapshot(uri, s3=_s3(endpoint)).adds) == 3


def test_footer_check_on_s3_reads_ranges_and_removes_a_truncated_file(
    localstack, ls_bucket, run_cli
):
    """On S3: a file cut short (same name, fewer bytes) is found from the listing's size
    alone (``--check exists``); the default depth (footers) also reads each footer by ranged
    GETs and finds one whose size is right but whose footer is garbage; both are removed."""
    endpoint = localstack.endpoint
    uri = f"s3://{ls_bucket}/footers"
    store = S3ConditionalLogStore(endpoint.s3_client())
    create_table(store, uri, arrow_schema())
    for tag in ("a", "b", "c"):
        BlindAppender(store, s3_put(endpoint), uri).append(rows(tag))
    s3 = endpoint.s3_client()
    paths = sorted(load_snapshot(uri, s3=_s3(endpoint)).adds.paths())
    short = S3Location.parse(f"{uri}/{paths[0]}")
    body = s3.get_object(Bucket=short.bucket, Key=short.key)["Body"].read()
    s3.put_object(Bucket=short.bucket, Key=short.key, Body=body[:-10])
    garbled = S3Location.parse(f"{uri}/{paths[1]}")
    body = s3.get_object(Bucket=garbled.bucket, Key=garbled.key)["Body"].read()
    s3.put_object(Bucket=garbled.bucket, Key=garbled.key, Body=body[:-4] + b"XXXX")
    exists = run_cli("repair", uri, *_cli_args(endpoint, "--check", "exists"))
    assert exists.returncode == 1, "the listing's size of the short file is not the log's"
    assert short.key.rsplit("/", 1)[-1] in exists.stdout, exists.stdout
    assert garbled.key.rsplit("/", 1)[-1] not in exists.stdout, "its size is right"
    done = run_cli("repair", uri, *_cli_args(endpoint, "--yes"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the log's add says" in done.stdout and "Parquet footer is unreadable" in done.stdout
    removed = [a["remove"]["path"] for a in _commit_json(endpoint, uri, 4) if "remove" in a]
    assert sorted(removed) == paths[:2]
    assert sorted(load_snapshot(uri, s3=_s3(endpoint)).adds.paths()) == paths[2:]


# proves: docs/guides/repair.md "Another writer wins the version: the repair reads the commits
# that won (...) and commits at the next version"
def test_an_append_landing_while_the_repair_commit_is_held_is_kept_once(
    ls_proxy, localstack, ls_bucket
):
    """The overlap made certain: the repair's commit PUT is held by the proxy until an append
    to the same version, sent by the test once the hold fired (so after the repair read the
    log and planned), has landed. The repair must lose that version, re-plan on the append and
    commit the next one; the append is read once by delta-rs, the deleted file is gone."""
    endpoint = localstack.endpoint
    uri = f"s3://{ls_bucket}/overlap"
    store = S3ConditionalLogStore(endpoint.s3_client())
    create_table(store, uri, arrow_schema())
    for seed in ("seed-a", "seed-b"):
        BlindAppender(store, s3_put(endpoint), uri).append(rows(seed))
    victim = _delete_live_file(endpoint, uri)
    ls_proxy.set_rules(
        [FaultRule("hold_until_peer", method="PUT", path_regex=COMMIT_PUT, times=1, delay_s=120)]
    )
    proc = subprocess.Popen(
        [DELTAGUARD, "repair", uri, *_cli_args(ls_proxy.endpoint, "--yes")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **endpoint.credentials_env()},
    )
    deadline = time.monotonic() + 120
    while ls_proxy.fired() != [1]:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    # the repair planned on version 2 and its commit of version 3 is held: append version 3
    # through the proxy (its answer releases the held PUT)
    proxied = S3ConditionalLogStore(ls_proxy.endpoint.s3_client())
    BlindAppender(proxied, s3_put(endpoint), uri).append(rows("during-repair"))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert "version 3 was taken by another writer: re-planning on version 3" in out, out
    assert "committed version 4" in out, out
    assert _commit_json(endpoint, uri, 3)[0]["commitInfo"]["operation"] != "FSCK"
    assert any("add" in a for a in _commit_json(endpoint, uri, 3)), "the append is version 3"
    assert _commit_json(endpoint, uri, 4)[0]["commitInfo"]["operation"] == "FSCK"
    puts = [
        r["status"]
        for r in ls_proxy.requests()
        if r["kind"] == "s3 PutObject" and r["path"].endswith(f"/_delta_log/{3:020d}.json")
    ]
    assert puts == [200, 412], "the append landed first, then the held repair commit lost"
    _assert_everything_kept(endpoint, uri, ["during-repair"], victim)
