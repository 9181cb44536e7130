"""The test bed has teeth: emulators answer conditional writes as measured, the proxy's faults
happen exactly as configured, and servers leave nothing behind."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from deltaguard.localstack.fault_proxy import FaultProxy, FaultRule
from deltaguard.localstack.localstack_server import LocalStackServer
from deltaguard.localstack.moto_server import MotoServer
from deltaguard.localstack.process import ServerProcess, free_port

pytestmark = pytest.mark.servers


def _code(exc: ClientError) -> str:
    return str(exc.response["Error"]["Code"])


def test_localstack_s3_rejects_second_conditional_create(localstack, ls_bucket):
    s3 = localstack.endpoint.s3_client()
    s3.put_object(Bucket=ls_bucket, Key="k", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket=ls_bucket, Key="k", Body=b"second", IfNoneMatch="*")
    assert _code(err.value) == "PreconditionFailed"
    assert s3.get_object(Bucket=ls_bucket, Key="k")["Body"].read() == b"first"


def test_localstack_dynamodb_conditional_put(localstack):
    import boto3

    ddb = boto3.client("dynamodb", **localstack.endpoint.boto3_kwargs())
    ddb.create_table(
        TableName="conditional_check",
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
    )
    item = {"k": {"S": "x"}}
    ddb.put_item(
        TableName="conditional_check", Item=item, ConditionExpression="attribute_not_exists(k)"
    )
    with pytest.raises(ClientError) as err:
        ddb.put_item(
            TableName="conditional_check", Item=item, ConditionExpression="attribute_not_exists(k)"
        )
    assert _code(err.value) == "ConditionalCheckFailedException"


def test_localstack_binds_loopback_only(localstack):
    import psutil

    listening = [
        c
        for c in psutil.net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == localstack.port
    ]
    assert listening, "LocalStack is not listening on its port"
    assert {c.laddr.ip for c in listening} == {"127.0.0.1"}


def test_moto_conditional_create(moto, moto_bucket):
    s3 = moto.endpoint.s3_client()
    s3.put_object(Bucket=moto_bucket, Key="k", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket=moto_bucket, Key="k", Body=b"second", IfNoneMatch="*")
    assert _code(err.value) == "PreconditionFailed"


@pytest.mark.parametrize(
    ("status", "code"),
    [(409, "ConditionalRequestConflict"), (503, "SlowDown"), (500, "InternalError")],
)
def test_proxy_injects_error_once(ls_proxy, localstack, ls_bucket, status, code):
    s3 = ls_proxy.endpoint.s3_client()
    ls_proxy.set_rules(
        [FaultRule("error", method="PUT", path_regex=r"/k$", status=status, code=code, times=1)]
    )
    with pytest.raises(ClientError) as err:
        s3.put_object(Bucket=ls_bucket, Key="k", Body=b"x", IfNoneMatch="*")
    assert _code(err.value) == code
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    # the faulted request never reached LocalStack; the next one does
    direct = localstack.endpoint.s3_client()
    with pytest.raises(ClientError):
        direct.head_object(Bucket=ls_bucket, Key="k")
    s3.put_object(Bucket=ls_bucket, Key="k", Body=b"x", IfNoneMatch="*")
    assert ls_proxy.fired() == [1]


def test_proxy_strip_header_turns_conditional_put_into_overwrite(ls_proxy, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    s3.put_object(Bucket=ls_bucket, Key="k", Body=b"first", IfNoneMatch="*")
    ls_proxy.set_rules([FaultRule("strip_header", method="PUT", header="If-None-Match")])
    s3.put_object(Bucket=ls_bucket, Key="k", Body=b"second", IfNoneMatch="*")
    assert s3.get_object(Bucket=ls_bucket, Key="k")["Body"].read() == b"second"


def test_proxy_drop_response_lands_write_but_client_sees_error(ls_proxy, localstack, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    ls_proxy.set_rules([FaultRule("drop_response", method="PUT", times=1)])
    with pytest.raises(Exception) as err:
        s3.put_object(Bucket=ls_bucket, Key="k", Body=b"landed", IfNoneMatch="*")
    assert not isinstance(err.value, ClientError), "the client must get no HTTP answer"
    assert (
        localstack.endpoint.s3_client().get_object(Bucket=ls_bucket, Key="k")["Body"].read()
        == b"landed"
    )


def test_proxy_rule_after_is_armed_only_once_its_rule_fired(ls_proxy, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    s3.put_object(Bucket=ls_bucket, Key="k", Body=b"x")
    ls_proxy.set_rules(
        [
            FaultRule("delay", method="PUT", path_regex="/j$", times=1, delay_s=0),
            FaultRule("error", method="GET", after=0, times=1, status=503, code="SlowDown"),
        ]
    )
    s3.get_object(Bucket=ls_bucket, Key="k")  # before the PUT: neither counted nor fired
    assert ls_proxy.fired() == [0, 0]
    assert ls_proxy.stats()["rules"][1]["matched"] == 0
    s3.put_object(Bucket=ls_bucket, Key="j", Body=b"y")
    with pytest.raises(ClientError):  # botocore retries are off in this client
        s3.get_object(Bucket=ls_bucket, Key="k")
    assert ls_proxy.fired() == [1, 1]


def test_proxy_reset_never_forwards(ls_proxy, localstack, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    ls_proxy.set_rules([FaultRule("reset", method="PUT", times=1)])
    with pytest.raises(Exception) as err:
        s3.put_object(Bucket=ls_bucket, Key="k", Body=b"x")
    assert not isinstance(err.value, ClientError)
    with pytest.raises(ClientError):
        localstack.endpoint.s3_client().head_object(Bucket=ls_bucket, Key="k")


def test_proxy_counts_forwarded_requests_by_kind(ls_proxy, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    s3.put_object(Bucket=ls_bucket, Key="a", Body=b"x", IfNoneMatch="*")
    s3.copy_object(Bucket=ls_bucket, Key="b", CopySource={"Bucket": ls_bucket, "Key": "a"})
    s3.get_object(Bucket=ls_bucket, Key="b")
    s3.head_object(Bucket=ls_bucket, Key="b")
    s3.list_objects_v2(Bucket=ls_bucket, Prefix="")
    s3.delete_objects(Bucket=ls_bucket, Delete={"Objects": [{"Key": "a"}, {"Key": "b"}]})
    ls_proxy.endpoint.dynamodb_client().list_tables()
    ls_proxy.set_rules([FaultRule("reset", method="PUT", path_regex=r"/never$")])
    with pytest.raises(Exception) as err:
        s3.put_object(Bucket=ls_bucket, Key="never", Body=b"x")
    assert not isinstance(err.value, ClientError)
    stats = ls_proxy.stats()
    assert stats["by_kind"] == {
        "s3 PutObject": 1,
        "s3 CopyObject": 1,
        "s3 GetObject": 1,
        "s3 HeadObject": 1,
        "s3 ListObjects": 1,
        "s3 DeleteObjects": 1,
        "dynamodb ListTables": 1,
    }, "only forwarded requests count, the reset PUT does not"
    assert stats["forwarded"] == 7


def test_proxy_delay(ls_proxy, ls_bucket):
    s3 = ls_proxy.endpoint.s3_client()
    ls_proxy.set_rules([FaultRule("delay", method="PUT", delay_s=1.0, times=1)])
    started = time.monotonic()
    s3.put_object(Bucket=ls_bucket, Key="k", Body=b"x")
    assert time.monotonic() - started >= 1.0


def test_proxy_latency_delays_every_forwarded_request(localstack, ls_bucket, tmp_path):
    """A fixed per-request delay (the realistic-latency bench's 20 ms, here larger so the lower
    bound is clear of noise) on every forwarded request; answers that are not 2xx are counted
    by kind and status (a lost conditional create is ``s3 PutObject 412``)."""
    latency_ms, requests = 150.0, 4
    with FaultProxy(localstack.endpoint, tmp_path, latency_ms=latency_ms) as proxy:
        s3 = proxy.endpoint.s3_client()
        started = time.monotonic()
        s3.put_object(Bucket=ls_bucket, Key="lat", Body=b"x", IfNoneMatch="*")
        s3.head_object(Bucket=ls_bucket, Key="lat")
        s3.get_object(Bucket=ls_bucket, Key="lat")
        with pytest.raises(ClientError):
            s3.put_object(Bucket=ls_bucket, Key="lat", Body=b"y", IfNoneMatch="*")
        elapsed = time.monotonic() - started
        stats = proxy.stats()
    assert elapsed >= requests * latency_ms / 1000.0
    assert stats["forwarded"] == requests
    assert stats["latency_ms"] == latency_ms
    assert stats["by_kind_status"] == {"s3 PutObject 412": 1}


def test_proxy_hold_until_peer_orders_two_writers(ls_proxy, localstack, ls_bucket):
    """The held PUT lands after its peer: without If-None-Match the held writer overwrites."""
    s3_a, s3_b = ls_proxy.endpoint.s3_client(), ls_proxy.endpoint.s3_client()
    ls_proxy.set_rules(
        [FaultRule("hold_until_peer", method="PUT", path_regex=r"/k$", times=1, delay_s=30)]
    )
    a = threading.Thread(target=lambda: s3_a.put_object(Bucket=ls_bucket, Key="k", Body=b"A"))
    a.start()
    deadline = time.monotonic() + 30
    while ls_proxy.fired() != [1]:  # A's PUT reached the proxy and is held there
        assert a.is_alive() and time.monotonic() < deadline, "A's PUT was never held"
        time.sleep(0.01)
    assert a.is_alive(), "A's PUT must be held"
    s3_b.put_object(Bucket=ls_bucket, Key="k", Body=b"B")
    a.join(timeout=30)
    assert not a.is_alive()
    [held] = ls_proxy.held()
    assert held["released_by_peer"] and held["status"] == 200, held  # B released A, no timeout
    assert (
        localstack.endpoint.s3_client().get_object(Bucket=ls_bucket, Key="k")["Body"].read() == b"A"
    )


def test_proxy_is_deterministic_for_a_seed(localstack, ls_bucket, tmp_path):
    def decisions(seed: int) -> list[bool]:
        with FaultProxy(localstack.endpoint, tmp_path, seed=seed) as proxy:
            proxy.set_rules(
                [FaultRule("error", method="PUT", rate=0.5, status=503, code="SlowDown")]
            )
            s3 = proxy.endpoint.s3_client()
            out = []
            for i in range(24):
                try:
                    s3.put_object(Bucket=ls_bucket, Key=f"d{i}", Body=b"x")
                    out.append(False)
                except ClientError:
                    out.append(True)
            return out

    first, again, other = decisions(3), decisions(3), decisions(4)
    assert first == again
    assert first != other
    assert 0 < sum(first) < 24


def _alive_in_group(pgid: int) -> list[int]:
    """PIDs of live (non-zombie) processes in a process group."""
    import psutil

    alive = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                alive.append(proc.pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return alive


def _server_with_a_child(tmp_path: Path, child: str) -> ServerProcess:
    """A started ServerProcess: bash runs ``child`` in the background, then an HTTP server."""
    port = free_port()
    server = ServerProcess(
        "child-spawner",
        ["bash", "-c", f"{child} & python3 -m http.server {port} --bind 127.0.0.1"],
        tmp_path / "log",
    )

    def ready() -> bool:
        import socket

        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True

    return server.start(ready, timeout_s=20)


def test_server_process_stops_whole_group_by_pid(tmp_path):
    server = _server_with_a_child(tmp_path, "sleep 300")
    pid = server.pid
    assert len(_alive_in_group(pid)) >= 2, "the server and its background child run"
    server.stop()
    assert _alive_in_group(pid) == []


def test_server_process_stops_descendants_in_their_own_session(tmp_path):
    """LocalStack starts DynamoDB Local in a session of its own: outside the group that stop()
    signals. stop() finds such descendants first and kills them after the group."""
    import psutil

    server = _server_with_a_child(tmp_path, "setsid sleep 300")
    escaped = [
        c for c in psutil.Process(server.pid).children(recursive=True) if c.name() == "sleep"
    ]
    assert escaped and os.getsid(escaped[0].pid) != os.getsid(server.pid), "own session"
    server.stop()
    _gone, alive = psutil.wait_procs(escaped, timeout=5)  # SIGKILL sent; dead once reaped
    alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert alive == [], f"left running: {alive}"


@pytest.mark.slow
def test_stopped_localstack_leaves_nothing(tmp_path):
    server = LocalStackServer(tmp_path / "ls").start()
    pid, url = server.server.pid, server.endpoint.url
    bucket = "dg-leftover-check"
    server.endpoint.s3_client().create_bucket(Bucket=bucket)
    server.stop()
    assert _alive_in_group(pid) == []
    assert not (Path("/tmp/localstack-s3-storage") / bucket).exists()
    with pytest.raises(EndpointConnectionError):
        from deltaguard.localstack.endpoints import Endpoint

        Endpoint(url=url).s3_client().list_buckets()


def test_moto_server_stops(tmp_path):
    with MotoServer(tmp_path) as server:
        pid = server.server.pid
    assert _alive_in_group(pid) == []
