"""The ``_delta_log/_last_checkpoint`` file a checkpoint writer leaves (PROTOCOL.md "Last
Checkpoint File Schema"), with its ``checksum`` (PROTOCOL.md "JSON checksum": the MD5 of the
canonical form, which Delta Spark checks when it reads the file)."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

_UNRESERVED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")


def _encode(text: str) -> str:
    """A string canonicalized: quoted, every UTF-8 octet but the unreserved ones as ``%XX``."""
    body = "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in text.encode("utf-8"))
    return f'"{body}"'


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _encode(value)
    return orjson.dumps(value).decode()


def _pairs(value: Any, path: list[str], out: list[str]) -> None:
    if isinstance(value, dict):
        for key, child in value.items():
            _pairs(child, [*path, _encode(key)], out)
    elif isinstance(value, list):
        for i, child in enumerate(value):
            _pairs(child, [*path, str(i)], out)
    else:
        out.append(f"{'+'.join(path)}={_scalar(value)}")


def json_checksum(obj: dict[str, Any]) -> str:
    """The protocol's checksum of a JSON object (its top-level ``checksum`` key ignored): the
    path=value pairs of every leaf, canonicalized, sorted, joined by ``,``, MD5 in hex."""
    pairs: list[str] = []
    _pairs({k: v for k, v in obj.items() if k != "checksum"}, [], pairs)
    pairs.sort(key=lambda p: p.encode("utf-8"))
    return hashlib.md5(",".join(pairs).encode("utf-8"), usedforsecurity=False).hexdigest()


def last_checkpoint_json(
    version: int,
    size: int,
    size_in_bytes: int,
    num_adds: int,
    parts: int | None = None,
    *,
    checkpoint_schema: dict[str, Any] | None = None,
    v2_checkpoint: dict[str, Any] | None = None,
) -> bytes:
    """The content of ``_last_checkpoint`` for a checkpoint of ``version`` holding ``size``
    actions (rows), ``num_adds`` of them ``add``, in files of ``size_in_bytes`` in all;
    ``parts`` for a multi-part checkpoint (None: a single file); with
    ``checkpointSchema`` (Spark's ``StructType`` JSON) and ``v2Checkpoint`` (a V2 checkpoint's
    top-level file, :mod:`.v2`) when given, in Delta Spark's field order."""
    info: dict[str, Any] = {
        "version": version,
        "size": size,
        "sizeInBytes": size_in_bytes,
        "numOfAddFiles": num_adds,
    }
    if parts is not None:
        info["parts"] = parts
    if checkpoint_schema is not None:
        info["checkpointSchema"] = checkpoint_schema
    if v2_checkpoint is not None:
        info["v2Checkpoint"] = v2_checkpoint
    info["checksum"] = json_checksum(info)
    return orjson.dumps(info)
