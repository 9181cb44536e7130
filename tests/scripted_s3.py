"""An in-memory S3 behind boto3's client surface, with a script of faults for the next PUTs.

The Python twin of the JUnit ``ScriptedS3Client``: it implements ``If-None-Match: *`` the way S3
does (atomically, 412 PreconditionFailed), or ignores it when ``honour_if_none_match`` is False,
and raises real botocore exceptions (``ClientError`` with HTTP status and code,
``EndpointConnectionError``), so the code under test takes the same branches as against a
server. Used to pin down the commit protocol's decisions in milliseconds; the same scenarios run
end to end against LocalStack through the fault proxy in test_python_logstore.py.
"""

from __future__ import annotations

import io
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from botocore.exceptions import ClientError, EndpointConnectionError


class Fault(Enum):
    """What to do with one PUT, or with one GET (``fail_next_gets``: ERROR_503, ERROR_403 and
    RESET_BEFORE answer so instead of reading; DROP_RESPONSE reads, then loses the answer)."""

    NONE = "none"
    ERROR_409 = "409"  # ConditionalRequestConflict, nothing stored
    ERROR_412 = "412"  # PreconditionFailed, nothing stored (a create not readable, or deleted)
    ERROR_503 = "503"  # SlowDown, nothing stored
    ERROR_403 = "403"  # AccessDenied, nothing stored
    RESET_BEFORE = "reset-before"  # connection dropped before the request reached the store
    DROP_RESPONSE = "drop-response"  # stored, then the connection dropped (lost response)


def client_error(status: int, code: str, operation: str, message: str = "") -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": message or code},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        operation,
    )


@dataclass
class _Meta:
    endpoint_url: str = "http://scripted-s3.invalid"


@dataclass
class ScriptedS3:
    """``put_object``/``get_object``/``head_object``/``delete_object``/``list_objects_v2``
    on a dict, thread-safe. ``script`` holds faults for the next PUTs, in order."""

    honour_if_none_match: bool = True
    objects: dict[tuple[str, str], bytes] = field(default_factory=dict)
    script: deque[Fault] = field(default_factory=deque)
    get_script: deque[Fault] = field(default_factory=deque)
    puts: int = 0
    gets: int = 0
    meta: _Meta = field(default_factory=_Meta)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fail_next_puts(self, *faults: Fault) -> None:
        self.script.extend(faults)

    def fail_next_gets(self, *faults: Fault) -> None:
        self.get_script.extend(faults)

    def put_object(self, *, Bucket: str, Key: str, Body: bytes, **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            self.puts += 1
            fault = self.script.popleft() if self.script else Fault.NONE
            if fault is Fault.RESET_BEFORE:
                raise EndpointConnectionError(endpoint_url=self.meta.endpoint_url)
            if fault is Fault.ERROR_409:
                raise client_error(409, "ConditionalRequestConflict", "PutObject")
            if fault is Fault.ERROR_412:
                raise client_error(412, "PreconditionFailed", "PutObject")
            if fault is Fault.ERROR_503:
                raise client_error(503, "SlowDown", "PutObject")
            if fault is Fault.ERROR_403:
                raise client_error(403, "AccessDenied", "PutObject")
            conditional = kwargs.get("IfNoneMatch") == "*" and self.honour_if_none_match
            if conditional and (Bucket, Key) in self.objects:
                raise client_error(412, "PreconditionFailed", "PutObject")
            self.objects[(Bucket, Key)] = bytes(Body)
            if fault is Fault.DROP_RESPONSE:
                raise EndpointConnectionError(endpoint_url=self.meta.endpoint_url)
            return {"ETag": '"scripted"'}

    def get_object(self, *, Bucket: str, Key: str, **_: Any) -> dict[str, Any]:
        with self._lock:
            self.gets += 1
            fault = self.get_script.popleft() if self.get_script else Fault.NONE
            if fault in (Fault.RESET_BEFORE, Fault.DROP_RESPONSE):
                raise EndpointConnectionError(endpoint_url=self.meta.endpoint_url)
            if fault is Fault.ERROR_503:
                raise client_error(503, "SlowDown", "GetObject")
            if fault is Fault.ERROR_403:
                raise client_error(403, "AccessDenied", "GetObject")
            assert fault is Fault.NONE, f"no such GET fault: {fault}"
            if (Bucket, Key) not in self.objects:
                raise client_error(404, "NoSuchKey", "GetObject")
            return {"Body": _Body(self.objects[(Bucket, Key)])}

    def head_object(self, *, Bucket: str, Key: str, **_: Any) -> dict[str, Any]:
        with self._lock:
            if (Bucket, Key) not in self.objects:
                raise client_error(404, "404", "HeadObject")
            data = self.objects[(Bucket, Key)]
            return {"ContentLength": len(data), "LastModified": datetime.now(UTC)}

    def delete_object(self, *, Bucket: str, Key: str, **_: Any) -> dict[str, Any]:
        with self._lock:
            self.objects.pop((Bucket, Key), None)
            return {}

    def list_objects_v2(self, *, Bucket: str, Prefix: str = "", **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            start_after = kwargs.get("StartAfter", "")
            keys = sorted(k for b, k in self.objects if b == Bucket and k.startswith(Prefix))
            keys = [k for k in keys if k > start_after]
            if kwargs.get("Delimiter") == "/":
                keys = [k for k in keys if "/" not in k[len(Prefix) :]]
            keys = keys[: kwargs.get("MaxKeys", 1000)]
            now = datetime.now(UTC)
            return {
                "KeyCount": len(keys),
                "Contents": [
                    {"Key": k, "Size": len(self.objects[(Bucket, k)]), "LastModified": now}
                    for k in keys
                ],
            }

    def get_paginator(self, operation: str) -> _Paginator:
        assert operation == "list_objects_v2"
        return _Paginator(self)


class _Body(io.BytesIO):
    def iter_lines(self) -> Any:
        for line in self.getvalue().split(b"\n"):
            if line:
                yield line


@dataclass
class _Paginator:
    s3: ScriptedS3

    def paginate(self, **kwargs: Any) -> Any:
        yield self.s3.list_objects_v2(**kwargs)
