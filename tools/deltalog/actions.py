"""Delta log actions as typed values, and the parser for JSON commit files.

Each line of a commit (or compaction, or V2 JSON checkpoint) is one JSON object with one action
(PROTOCOL.md, "Actions"). :func:`parse_json_actions` never raises on bad content: every line it
cannot turn into an action (bad JSON, wrong types, missing required fields) is returned as a
:class:`LineError` with its 1-based line number, so the replay can refuse and the audit can
report. Unknown action names are ignored, as the protocol asks of readers.

Paths in ``add``/``remove``/``cdc`` are RFC 2396 URIs; the parsed actions keep them decoded
(:func:`decode_path`), and that decoded form is the reconciliation key.
"""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from deltaguard.tools.deltalog.paths import is_absolute

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(_Z85)}


class ActionError(ValueError):
    """A JSON object that is not a valid action."""


class MissingFieldError(ActionError):
    """A valid JSON action that lacks a field the protocol requires (an old writer's
    ``metaData`` without ``schemaString``): the line is intact, the action incomplete."""


def decode_path(path: str) -> str:
    """The decoded form of a log path (``a%20b`` -> ``a b``); absolute URIs keep their scheme.
    A relative path whose decoded form would look absolute (``ab%3Ac``) gets a ``./`` prefix:
    relative or absolute is decided on the encoded form, as Delta does (the rule:
    :mod:`deltaguard.tools.deltalog.paths`)."""
    if "%" not in path:
        return path
    decoded = urllib.parse.unquote(path)
    if is_absolute(decoded) and not is_absolute(path):
        return "./" + decoded
    return decoded


def z85_decode_uuid(text: str) -> uuid.UUID:
    """The UUID encoded by Delta's Z85 in a deletion vector's 20-character identifier."""
    if len(text) != 20:
        raise ActionError(f"a Z85 UUID has 20 characters, got {len(text)}")
    out = bytearray()
    for i in range(0, 20, 5):
        value = 0
        for ch in text[i : i + 5]:
            if ch not in _Z85_INDEX:
                raise ActionError(f"{ch!r} is not a Z85 character")
            value = value * 85 + _Z85_INDEX[ch]
        if value > 0xFFFFFFFF:
            raise ActionError("Z85 block out of range")
        out += value.to_bytes(4, "big")
    return uuid.UUID(bytes=bytes(out))


@dataclass(frozen=True, slots=True)
class DeletionVector:
    """A deletion vector descriptor (PROTOCOL.md, "Deletion Vector Descriptor Schema")."""

    storage_type: str  # "u" relative (UUID), "p" absolute path, "i" inline
    path_or_inline_dv: str
    offset: int | None
    size_in_bytes: int
    cardinality: int

    @property
    def unique_id(self) -> str:
        """``storageType + pathOrInlineDv [+ '@' + offset]``: the second half of a file key."""
        base = self.storage_type + self.path_or_inline_dv
        return f"{base}@{self.offset}" if self.offset is not None else base

    def file_path(self) -> str | None:
        """Where the DV's file is: relative to the table root for ``u``, the decoded absolute
        URI for ``p``, None for inline DVs (no file). Raises :class:`ActionError` for a ``u``
        identifier that is not prefix + 20 Z85 characters."""
        if self.storage_type == "u":
            prefix, encoded = self.path_or_inline_dv[:-20], self.path_or_inline_dv[-20:]
            name = f"deletion_vector_{z85_decode_uuid(encoded)}.bin"
            return f"{prefix}/{name}" if prefix else name
        if self.storage_type == "p":
            return decode_path(self.path_or_inline_dv)
        return None


@dataclass(frozen=True, slots=True)
class AddFile:
    path: str
    partition_values: Mapping[str, str | None]
    size: int
    modification_time: int
    data_change: bool
    deletion_vector: DeletionVector | None = None
    stats: str | None = None

    @property
    def key(self) -> tuple[str, str | None]:
        return self.path, self.deletion_vector.unique_id if self.deletion_vector else None


@dataclass(frozen=True, slots=True)
class RemoveFile:
    path: str
    deletion_timestamp: int | None
    data_change: bool
    size: int | None = None
    partition_values: Mapping[str, str | None] | None = None
    deletion_vector: DeletionVector | None = None

    @property
    def key(self) -> tuple[str, str | None]:
        return self.path, self.deletion_vector.unique_id if self.deletion_vector else None


@dataclass(frozen=True, slots=True)
class CdcFile:
    path: str
    partition_values: Mapping[str, str | None]
    size: int


@dataclass(frozen=True, slots=True)
class Metadata:
    id: str
    schema_string: str
    partition_columns: tuple[str, ...]
    configuration: Mapping[str, str]
    name: str | None = None
    description: str | None = None
    created_time: int | None = None
    format_provider: str = "parquet"


@dataclass(frozen=True, slots=True)
class Protocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: frozenset[str] = frozenset()
    writer_features: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Txn:
    app_id: str
    version: int
    last_updated: int | None = None


@dataclass(frozen=True, slots=True)
class DomainMetadata:
    domain: str
    configuration: str
    removed: bool


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """The free-form ``commitInfo`` object, with typed access to the fields history shows."""

    raw: Mapping[str, Any]

    def get(self, key: str) -> Any:
        return self.raw.get(key)

    @property
    def timestamp(self) -> int | None:
        ict = self.raw.get("inCommitTimestamp")
        value = ict if isinstance(ict, int) else self.raw.get("timestamp")
        return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    version: int


@dataclass(frozen=True, slots=True)
class Sidecar:
    path: str
    size_in_bytes: int | None
    modification_time: int | None


Action = (
    AddFile
    | RemoveFile
    | CdcFile
    | Metadata
    | Protocol
    | Txn
    | DomainMetadata
    | CommitInfo
    | CheckpointMetadata
    | Sidecar
)


@dataclass(frozen=True, slots=True)
class LineError:
    """A line that is not a valid action: 1-based ``line`` and why. ``incomplete``: the line
    is valid JSON, but the action lacks a required field (:class:`MissingFieldError`)."""

    line: int
    message: str
    incomplete: bool = False


@dataclass
class ParsedActions:
    """The actions of one JSON log file, in file order, and the lines that failed."""

    actions: list[Action] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)


# -- typed field access -------------------------------------------------------------------


def _req(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = obj.get(key)
    if value is None:
        raise MissingFieldError(f"required field {key!r} is missing")
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ActionError(f"field {key!r} must be {_kind_name(kind)}, got {_describe(value)}")
    return value


def _opt(
    obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], default: Any = None
) -> Any:
    if obj.get(key) is None:
        return default
    return _req(obj, key, kind)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _describe(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def _str_map(obj: Mapping[str, Any], key: str, *, optional: bool = False) -> dict[str, Any] | None:
    value = obj.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(v, str) or v is None for v in value.values()
    ):
        raise ActionError(f"field {key!r} must be a map of strings, got {_describe(value)}")
    return value


#: The deletion vector storage types (PROTOCOL.md): relative UUID file, absolute path, inline.
DV_STORAGE_TYPES = ("u", "p", "i")


def parse_deletion_vector(obj: Any) -> DeletionVector | None:
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise ActionError(f"deletionVector must be an object, got {_describe(obj)}")
    storage_type = _req(obj, "storageType", str)
    if storage_type not in DV_STORAGE_TYPES:
        raise ActionError(f"unknown deletionVector storageType {storage_type!r}")
    dv = DeletionVector(
        storage_type,
        _req(obj, "pathOrInlineDv", str),
        _opt(obj, "offset", int),
        _req(obj, "sizeInBytes", int),
        _req(obj, "cardinality", int),
    )
    if storage_type == "u":
        dv.file_path()  # validates the Z85 identifier
    return dv


def _add(obj: dict[str, Any]) -> AddFile:
    return AddFile(
        decode_path(_req(obj, "path", str)),
        _str_map(obj, "partitionValues") or {},
        _req(obj, "size", int),
        _req(obj, "modificationTime", int),
        _req(obj, "dataChange", bool),
        parse_deletion_vector(obj.get("deletionVector")),
        _opt(obj, "stats", str),
    )


def _remove(obj: dict[str, Any]) -> RemoveFile:
    return RemoveFile(
        decode_path(_req(obj, "path", str)),
        _opt(obj, "deletionTimestamp", int),
        _opt(obj, "dataChange", bool, True),
        _opt(obj, "size", int),
        _str_map(obj, "partitionValues", optional=True),
        parse_deletion_vector(obj.get("deletionVector")),
    )


def _cdc(obj: dict[str, Any]) -> CdcFile:
    return CdcFile(
        decode_path(_req(obj, "path", str)),
        _str_map(obj, "partitionValues", optional=True) or {},
        _req(obj, "size", int),
    )


def _metadata(obj: dict[str, Any]) -> Metadata:
    fmt = obj.get("format")
    provider = fmt.get("provider", "parquet") if isinstance(fmt, dict) else "parquet"
    columns = _req(obj, "partitionColumns", list)
    if not all(isinstance(c, str) for c in columns):
        raise ActionError("partitionColumns must be a list of strings")
    return Metadata(
        _req(obj, "id", str),
        _req(obj, "schemaString", str),
        tuple(columns),
        {
            k: v
            for k, v in (_str_map(obj, "configuration", optional=True) or {}).items()
            if v is not None
        },
        _opt(obj, "name", str),
        _opt(obj, "description", str),
        _opt(obj, "createdTime", int),
        str(provider),
    )


def _features(obj: dict[str, Any], key: str) -> frozenset[str]:
    value = obj.get(key)
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ActionError(f"{key} must be a list of strings")
    return frozenset(value)


def _protocol(obj: dict[str, Any]) -> Protocol:
    return Protocol(
        _req(obj, "minReaderVersion", int),
        _req(obj, "minWriterVersion", int),
        _features(obj, "readerFeatures"),
        _features(obj, "writerFeatures"),
    )


def _txn(obj: dict[str, Any]) -> Txn:
    return Txn(_req(obj, "appId", str), _req(obj, "version", int), _opt(obj, "lastUpdated", int))


def _domain(obj: dict[str, Any]) -> DomainMetadata:
    return DomainMetadata(
        _req(obj, "domain", str), _opt(obj, "configuration", str, ""), _req(obj, "removed", bool)
    )


def _sidecar(obj: dict[str, Any]) -> Sidecar:
    return Sidecar(
        decode_path(_req(obj, "path", str)),
        _opt(obj, "sizeInBytes", int),
        _opt(obj, "modificationTime", int),
    )


_PARSERS: dict[str, Any] = {
    "add": _add,
    "remove": _remove,
    "cdc": _cdc,
    "metaData": _metadata,
    "protocol": _protocol,
    "txn": _txn,
    "domainMetadata": _domain,
    "commitInfo": lambda obj: CommitInfo(obj),
    "checkpointMetadata": lambda obj: CheckpointMetadata(_req(obj, "version", int)),
    "sidecar": _sidecar,
}


def parse_action(obj: Any) -> Action | None:
    """One decoded JSON object as an action; None for an unknown action name (ignored).
    Raises :class:`ActionError` for anything malformed."""
    if not isinstance(obj, dict):
        raise ActionError(f"a log line must be a JSON object, got {_describe(obj)}")
    known = [k for k in obj if k in _PARSERS]
    if len(known) > 1:
        raise ActionError(f"one action per line, found {', '.join(known)}")
    if not known:
        return None
    name = known[0]
    body = obj[name]
    if not isinstance(body, dict):
        raise ActionError(f"{name} must be an object, got {_describe(body)}")
    try:
        return _PARSERS[name](body)  # type: ignore[no-any-return]
    except ActionError as exc:
        raise type(exc)(f"{name}: {exc}") from None


def iter_json_actions(lines: Iterable[bytes]) -> Iterator[Action | LineError]:
    """Each action (or :class:`LineError`) of a JSON log file given as its lines (with or
    without their ``\\n``), in file order, numbered from 1. Blank lines and unknown actions
    are skipped; nothing here raises. Lets a caller read a large commit without holding it."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            action = parse_action(orjson.loads(line))
        except orjson.JSONDecodeError as exc:
            yield LineError(number, f"not valid JSON ({exc})")
            continue
        except MissingFieldError as exc:
            yield LineError(number, str(exc), incomplete=True)
            continue
        except (ActionError, ValueError, TypeError) as exc:
            yield LineError(number, str(exc))
            continue
        if action is not None:
            yield action


def parse_json_actions(data: bytes) -> ParsedActions:
    """Every line of a JSON log file. Blank lines are skipped; nothing here raises."""
    parsed = ParsedActions()
    for item in iter_json_actions(data.split(b"\n")):
        if isinstance(item, LineError):
            parsed.errors.append(item)
        else:
            parsed.actions.append(item)
    return parsed
