"""A fault-injecting HTTP proxy for S3 and DynamoDB emulators, on 127.0.0.1.

Clients point their endpoint at the proxy; it forwards every request to the upstream emulator
unchanged (Host header included, so signatures still match) unless a rule says otherwise.

Rules (:class:`FaultRule`) match on method, a regex over the request path (URL-decoded, e.g.
``_delta_log/\\d{20}\\.json$``) and optionally a header that must be present, and fire with a
probability ``rate`` at most ``times`` times. Actions:

- ``error``: answer ``status`` with an S3 XML (or DynamoDB JSON) error ``code``, without
  forwarding (409 ConditionalRequestConflict, 503 SlowDown, 500 InternalError, ...);
- ``delay``: sleep ``delay_s`` then forward;
- ``reset``: close the client connection with a TCP RST, without forwarding;
- ``hang``: hold the request ``delay_s`` without forwarding it, then reset: the request never
  lands (a writer frozen mid-commit, to be killed by the test);
- ``strip_header``: forward without ``header`` (e.g. If-None-Match: a store that ignores it);
- ``drop_response``: forward, let the write land, then reset the client connection instead
  of answering (the client sees an error although the request succeeded);
- ``hold_until_peer``: hold the request until another request on the same *hold key* has
  been answered by upstream (or ``delay_s`` passes), then forward it. This makes two writers
  act on the same key in a fixed order, deterministically. The hold key is the path, plus the
  groups of ``body_regex`` if the rule has one (every DynamoDB call is a POST to ``/``: the
  key is then e.g. the item's ``fileName``). A peer is any request the rule matches apart
  from ``header_present`` (which chooses the request held, not its peer). What happened to
  each held request (its key, whether a peer released it, upstream's status) is in ``stats``.

Latency: ``latency_ms`` (CLI ``--latency-ms``) delays every forwarded request by that fixed
time before it is sent upstream, rules or not (a ``delay`` rule adds to it): an emulator on
loopback answers in about a millisecond, a real S3 round trip takes 10-50 ms. Requests the
proxy answers itself (``error``, ``reset``, ``hang``) and the control API are not delayed.

``skip``: the first ``skip`` matching requests pass untouched (a writer's third commit PUT,
not its first). ``after``: the rule is armed only once an earlier rule of the set has fired
(the read-back after a dropped create, however many reads came before it). Request log: every
forwarded request's kind, path, ``prefix`` (a listing's) and status, in arrival order (the
newest :data:`REQUEST_LOG_LIMIT`), to attribute requests to a path such as a streaming
checkpoint (:func:`requests_under`).

Determinism: every rule draws from its own ``random.Random(seed, rule index)``, in arrival order.
Control API on the same port under ``/__faultproxy__/``: ``PUT rules`` (JSON list), ``GET
stats`` (per-rule counts, forwarded requests by kind, see :func:`request_kind`, and the
non-2xx upstream answers by kind and status, e.g. ``s3 PutObject 412``: lost conditional
creates), ``GET requests`` (the request log), ``POST reset`` (the rules), ``POST
reset-requests`` (the log). :class:`FaultProxy` wraps it for tests.

Run: ``python -m deltaguard.localstack.fault_proxy --upstream URL --port-file F [--seed N]``.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import random
import re
import socket
import struct
import sys
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.process import ServerProcess, free_port, http_ok

Action = Literal[
    "error", "delay", "reset", "hang", "strip_header", "drop_response", "hold_until_peer"
]
CONTROL_PREFIX = "/__faultproxy__/"
#: The request log keeps the newest this many forwarded requests.
REQUEST_LOG_LIMIT = 200_000
_TERMINAL = {"error", "reset", "hang"}
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "expect",
    "proxy-connection",
    "te",
    "upgrade",
}


@dataclass
class FaultRule:
    """One fault: which requests it matches and what it does to them."""

    action: Action
    method: str | None = None
    path_regex: str | None = None
    header_present: str | None = None
    rate: float = 1.0
    times: int | None = None
    status: int = 503
    code: str = "SlowDown"
    delay_s: float = 0.0
    header: str | None = None
    #: A DynamoDB operation (``PutItem``): the request's X-Amz-Target header must end with it.
    target: str | None = None
    skip: int = 0
    #: Armed only once the rule at this index of the same set has fired: requests before that
    #: neither count toward ``skip`` nor fire (e.g. hang the read-back after a dropped create,
    #: however many reads of the same keys came before it).
    after: int | None = None
    #: A regex the request body (UTF-8) must match (``re.search``, DOTALL); its groups are
    #: part of a ``hold_until_peer`` hold key.
    body_regex: str | None = None

    def hold_key(self, method: str, path: str, headers: dict[str, str], body: bytes) -> str | None:
        """The key this request would be held or released on (the module docstring), or None
        if the rule does not match it, its header conditions aside."""
        if self.method and self.method.upper() != method.upper():
            return None
        if self.path_regex and not re.search(self.path_regex, path):
            return None
        if self.target and not headers.get("x-amz-target", "").endswith(f".{self.target}"):
            return None
        if self.body_regex is None:
            return path
        found = re.search(self.body_regex, body.decode("utf-8", "replace"), re.DOTALL)
        if found is None:
            return None
        return "\n".join([path, *(g or "" for g in found.groups())])

    def matches(self, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> bool:
        if self.hold_key(method, path, headers, body) is None:
            return False
        return not (self.header_present and self.header_present.lower() not in headers)


@dataclass
class _RuleState:
    rule: FaultRule
    rng: random.Random
    matched: int = 0
    fired: int = 0
    holds: dict[str, threading.Event] = field(default_factory=dict)
    #: Per held request, once answered: ``{"key", "released_by_peer", "status"}``.
    held: list[dict[str, Any]] = field(default_factory=list)


class _Proxy:
    """Rule evaluation and statistics, shared by all handler threads."""

    def __init__(self, upstream: str, seed: int, latency_ms: float = 0.0) -> None:
        parsed = urllib.parse.urlsplit(upstream)
        self.upstream_host = parsed.hostname or "127.0.0.1"
        self.upstream_port = parsed.port or 80
        self.seed = seed
        self.latency_s = latency_ms / 1000.0
        self.lock = threading.Lock()
        self.rules: list[_RuleState] = []
        self.forwarded = 0
        self.by_kind: dict[str, int] = {}
        self.by_kind_status: dict[str, int] = {}
        self.requests: collections.deque[dict[str, Any]] = collections.deque(
            maxlen=REQUEST_LOG_LIMIT
        )

    def set_rules(self, rules: list[FaultRule]) -> None:
        with self.lock:
            for state in self.rules:  # release anything still held
                for event in state.holds.values():
                    event.set()
            self.rules = [
                _RuleState(rule, random.Random(f"{self.seed}:{i}")) for i, rule in enumerate(rules)
            ]

    def decide(
        self, method: str, path: str, headers: dict[str, str], body: bytes = b""
    ) -> list[tuple[_RuleState, FaultRule]]:
        """The rules that fire for this request, in rule order, each counted as fired. A rule
        that answers the request itself (``error``, ``reset``) ends the list: later rules do
        not see the request, so every counted firing really happened."""
        fired = []
        with self.lock:
            for state in self.rules:
                rule = state.rule
                if not rule.matches(method, path, headers, body):
                    continue
                if rule.after is not None and self.rules[rule.after].fired == 0:
                    continue
                state.matched += 1
                if state.matched <= rule.skip:
                    continue
                if rule.times is not None and state.fired >= rule.times:
                    continue
                if state.rng.random() < rule.rate:
                    state.fired += 1
                    fired.append((state, rule))
                    if rule.action in _TERMINAL:
                        break
        return fired

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "forwarded": self.forwarded,
                "by_kind": dict(self.by_kind),
                "by_kind_status": dict(self.by_kind_status),
                "latency_ms": self.latency_s * 1000.0,
                "rules": [
                    {
                        "rule": asdict(s.rule),
                        "matched": s.matched,
                        "fired": s.fired,
                        "held": list(s.held),
                    }
                    for s in self.rules
                ],
            }


def request_kind(method: str, raw_path: str, headers: dict[str, str]) -> str:
    """What a request is, for counting: ``dynamodb <Operation>`` (from X-Amz-Target) or ``s3
    <Operation>`` for the S3 calls a LogStore makes (PutObject, CopyObject, GetObject,
    HeadObject, ListObjects, DeleteObject(s), other). ``headers`` keys are lower case."""
    target = headers.get("x-amz-target")
    if target:
        return f"dynamodb {target.rsplit('.', 1)[-1]}"
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(raw_path).query, keep_blank_values=True)
    if method == "PUT":
        op = "CopyObject" if "x-amz-copy-source" in headers else "PutObject"
    elif method == "GET":
        op = "ListObjects" if "list-type" in query or "prefix" in query else "GetObject"
    elif method == "HEAD":
        op = "HeadObject"
    elif method == "DELETE":
        op = "DeleteObject"
    elif method == "POST" and "delete" in query:
        op = "DeleteObjects"
    else:
        op = f"other {method}"
    return f"s3 {op}"


def _logged(kind: str, raw_path: str, status: int) -> dict[str, Any]:
    """One request log entry: kind, decoded path, a listing's decoded ``prefix`` and
    ``start_after`` ("" if none) and whether it continues a listing (``continued``: it
    carries a continuation token), status."""
    parts = urllib.parse.urlsplit(raw_path)
    query = urllib.parse.parse_qs(parts.query)
    return {
        "kind": kind,
        "path": urllib.parse.unquote(parts.path),
        "prefix": query.get("prefix", [""])[0],
        "start_after": query.get("start-after", [""])[0],
        "continued": "continuation-token" in query,
        "status": status,
    }


def requests_under(log: list[dict[str, Any]], bucket: str, key_prefix: str) -> list[dict[str, Any]]:
    """The logged requests (path-style) on ``bucket``'s keys that start with ``key_prefix``
    (e.g. ``checkpoints/q0``: the checkpoint's objects, the probes of its directory, and the
    listings whose prefix starts with it)."""
    root = f"/{bucket}"
    out = []
    for entry in log:
        path = entry["path"]
        if path.rstrip("/") == root:
            if entry["prefix"].startswith(key_prefix):
                out.append(entry)
        elif path.startswith(f"{root}/{key_prefix}"):
            out.append(entry)
    return out


def _error_body(headers: dict[str, str], status: int, code: str) -> tuple[bytes, str]:
    if "x-amz-target" in headers:  # DynamoDB's JSON protocol
        body = json.dumps(
            {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": f"injected {code}"}
        )
        return body.encode(), "application/x-amz-json-1.0"
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>injected by deltaguard fault proxy (HTTP {status})</Message>"
        f"<RequestId>faultproxy{int(time.time() * 1000)}</RequestId></Error>"
    )
    return body.encode(), "application/xml"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _reset(self) -> None:
        """Close the client connection with RST (SO_LINGER 0), answering nothing."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass  # the client is already gone (e.g. killed while its request hung)

    def _send(self, status: int, headers: list[tuple[str, str]], body: bytes, head: bool) -> None:
        self.send_response_only(status)
        for name, value in headers:
            self.send_header(name, value)
        if not any(n.lower() == "content-length" for n, _ in headers):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)
        self.wfile.flush()

    def _control(self, body: bytes) -> None:
        proxy = self.server.proxy
        name = self.path[len(CONTROL_PREFIX) :]
        if name == "rules" and self.command == "PUT":
            proxy.set_rules([FaultRule(**r) for r in json.loads(body or b"[]")])
            payload = b"{}"
        elif name == "stats":
            payload = json.dumps(proxy.stats()).encode()
        elif name == "reset" and self.command == "POST":
            proxy.set_rules([])
            payload = b"{}"
        elif name == "requests":
            with proxy.lock:
                payload = json.dumps(list(proxy.requests)).encode()
        elif name == "reset-requests" and self.command == "POST":
            with proxy.lock:
                proxy.requests.clear()
            payload = b"{}"
        else:
            self._send(404, [("Content-Type", "application/json")], b'{"error": "unknown"}', False)
            return
        self._send(200, [("Content-Type", "application/json")], payload, False)

    def _forward(self, body: bytes, drop: set[str]) -> tuple[int, list[tuple[str, str]], bytes]:
        proxy = self.server.proxy
        conn = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=120)
        try:
            headers = {
                k: v
                for k, v in self.headers.items()
                if k.lower() not in _HOP_BY_HOP and k.lower() not in drop
            }
            if body or self.command in ("PUT", "POST"):
                # One Content-Length, whatever the client's case (reqwest sends it lower case;
                # a duplicate makes strict servers such as versitygw answer 400).
                headers = {k: v for k, v in headers.items() if k.lower() != "content-length"}
                headers["Content-Length"] = str(len(body))
            if proxy.latency_s:
                time.sleep(proxy.latency_s)
            conn.request(self.command, self.path, body=body, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            out = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP]
            kind = request_kind(self.command, self.path, {k.lower(): v for k, v in headers.items()})
            with proxy.lock:
                proxy.forwarded += 1
                proxy.by_kind[kind] = proxy.by_kind.get(kind, 0) + 1
                if not 200 <= response.status < 300:
                    key = f"{kind} {response.status}"
                    proxy.by_kind_status[key] = proxy.by_kind_status.get(key, 0) + 1
                proxy.requests.append(_logged(kind, self.path, response.status))
            return response.status, out, payload
        finally:
            conn.close()

    def _handle(self) -> None:
        body = self._read_body()
        if self.path.startswith(CONTROL_PREFIX):
            self._control(body)
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        head = self.command == "HEAD"
        strip: set[str] = set()
        drop_response = False
        released: list[threading.Event] = []
        held: list[tuple[_RuleState, str, bool]] = []
        for state, rule in self.server.proxy.decide(self.command, path, headers, body):
            if rule.action == "error":
                payload, ctype = _error_body(headers, rule.status, rule.code)
                self._send(rule.status, [("Content-Type", ctype)], payload, head)
                return
            if rule.action == "reset":
                self._reset()
                return
            if rule.action == "hang":
                time.sleep(rule.delay_s)
                self._reset()
                return
            if rule.action == "delay":
                time.sleep(rule.delay_s)
            elif rule.action == "strip_header" and rule.header:
                strip.add(rule.header.lower())
            elif rule.action == "drop_response":
                drop_response = True
            elif rule.action == "hold_until_peer":
                key = rule.hold_key(self.command, path, headers, body) or path
                event = threading.Event()
                with self.server.proxy.lock:
                    state.holds[key] = event
                held.append((state, key, event.wait(timeout=rule.delay_s or 60.0)))
        # A request on a key someone holds for is that holder's peer: release it once answered.
        with self.server.proxy.lock:
            for state in self.server.proxy.rules:
                if state.rule.action != "hold_until_peer":
                    continue
                peer_key = state.rule.hold_key(self.command, path, headers, body)
                if peer_key is not None and peer_key in state.holds:
                    released.append(state.holds.pop(peer_key))
        status = 0
        try:
            status, out_headers, payload = self._forward(body, strip)
        finally:
            for event in released:
                event.set()
            with self.server.proxy.lock:
                for state, key, by_peer in held:
                    state.held.append({"key": key, "released_by_peer": by_peer, "status": status})
        if drop_response:
            self._reset()
            return
        self._send(status, out_headers, payload, head)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, proxy: _Proxy) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.proxy = proxy


class FaultProxy:
    """The proxy as a child process in front of ``upstream``; a context manager stopped by PID.
    ``latency_ms``: the fixed delay added to every forwarded request (see the module doc)."""

    def __init__(
        self, upstream: Endpoint, workdir: Path, seed: int = 0, latency_ms: float = 0.0
    ) -> None:
        self.upstream = upstream
        self.latency_ms = latency_ms
        self.port = free_port()
        self.workdir = workdir
        self.seed = seed
        self.endpoint = Endpoint(
            url=f"http://127.0.0.1:{self.port}",
            region=upstream.region,
            access_key=upstream.access_key,
            secret_key=upstream.secret_key,
        )
        self.server: ServerProcess | None = None

    def start(self) -> FaultProxy:
        self.server = ServerProcess(
            "fault proxy",
            [
                sys.executable,
                "-m",
                "deltaguard.localstack.fault_proxy",
                "--upstream",
                self.upstream.url,
                "--port",
                str(self.port),
                "--seed",
                str(self.seed),
                "--latency-ms",
                str(self.latency_ms),
            ],
            self.workdir / f"fault-proxy-{self.port}.log",
            stop_grace_s=5,
        ).start(lambda: http_ok(f"{self.endpoint.url}{CONTROL_PREFIX}stats"), timeout_s=20)
        return self

    def _call(self, method: str, name: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(
            f"{self.endpoint.url}{CONTROL_PREFIX}{name}", data=data, method=method
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def set_rules(self, rules: list[FaultRule]) -> None:
        """Replaces the rules (and their counters); held requests are released."""
        self._call("PUT", "rules", [asdict(r) for r in rules])

    def clear(self) -> None:
        self._call("POST", "reset")

    def stats(self) -> dict[str, Any]:
        """``{"forwarded": n, "by_kind": {kind: n}, "by_kind_status": {"<kind> <status>": n}
        (non-2xx answers only), "latency_ms": x, "rules": [{"rule": {...}, "matched": n,
        "fired": n}, ...]}``; kinds are :func:`request_kind`'s."""
        return dict(self._call("GET", "stats"))

    def requests(self) -> list[dict[str, Any]]:
        """The request log: ``[{"kind", "path", "prefix", "start_after", "continued", "status"},
        ...]`` in arrival order
        (kinds are :func:`request_kind`'s)."""
        return list(self._call("GET", "requests"))

    def reset_requests(self) -> None:
        """Empties the request log."""
        self._call("POST", "reset-requests")

    def fired(self) -> list[int]:
        """How often each rule fired, in rule order."""
        return [r["fired"] for r in self.stats()["rules"]]

    def held(self, rule: int = 0) -> list[dict[str, Any]]:
        """The requests rule ``rule`` (a ``hold_until_peer``) held, once answered: ``[{"key",
        "released_by_peer", "status"}, ...]`` (``status``: upstream's answer to the held
        request, 0 if it was never answered)."""
        return list(self.stats()["rules"][rule]["held"])

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="e.g. http://127.0.0.1:4566")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="fixed delay added to every forwarded request (a real S3 round trip: 10-50 ms)",
    )
    args = parser.parse_args(argv)
    if args.latency_ms < 0:
        parser.error(f"--latency-ms must be >= 0, got {args.latency_ms}")
    server = _Server(args.port, _Proxy(args.upstream, args.seed, args.latency_ms))
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
