"""A blind append to a Delta table from Python, committed through a LogStore protocol.

Used by the test bed and the tests to commit to the same table as Spark drivers at the same
time (mixed writers). It implements Delta's optimistic commit for the one case it needs:

1. read the latest version ``v``, its ``protocol`` and ``metaData`` (JSON commits, newest
   first, parsed by :mod:`deltaguard.tools.deltalog.actions`, the log reader of the audit);
   a :class:`BlindAppender` keeps them and later reads only newer commits;
2. refuse, with a message naming the feature, tables it cannot append to correctly
   (partitioned tables, column mapping, row tracking, in-commit timestamps, constraints,
   generated or identity columns, catalog-managed tables, unknown writer features);
3. write one Parquet file under the table root with the table's schema;
4. commit ``_delta_log/<v+1>.json`` through the store with
   :func:`~deltaguard.tools.deltalog.commit.commit_next` (the product's commit API). On
   :class:`~deltaguard.tools.deltalog.commit.VersionTakenError` another writer won ``v+1``: read the commits that won; the
   append is re-validated against the ``metaData`` and ``protocol`` they leave in force; then
   retry at the next version. A blind append conflicts with nothing else.

Every commit carries ``commitInfo.txnId`` (a random UUID), which makes commit bytes unique per
transaction: the LogStore's lost-response check relies on that.

5. after the commit, write ``_delta_log/<v+1>.crc``, the version checksum, derived from
   ``<v>.crc`` plus this commit's one added file (:func:`~deltaguard.tools.deltalog.checksum.
   checksum_after_append`), so a Spark driver that loads ``v+1`` does not rebuild the table
   state with Spark jobs. Without ``<v>.crc`` (or with an unreadable one) it writes none: a
   checksum is optional, and one that is not exact would be worse than none. Like Delta's own,
   the checksum is written after the commit and best effort: a failure to write it is logged
   and never fails the append that has already committed.
"""

from __future__ import annotations

import io
import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any
from typing import Protocol as TypingProtocol

import pyarrow as pa
import pyarrow.parquet as pq

from deltaguard.logstore.commit_names import commit_file_name, commit_version
from deltaguard.logstore.jars import VERSION
from deltaguard.tools.deltalog.actions import Action, Metadata, Protocol, parse_json_actions
from deltaguard.tools.deltalog.checksum import checksum_after_append, parse_checksum
from deltaguard.tools.deltalog.commit import LogStore, VersionTakenError, commit_next, log_uri

ENGINE_INFO = f"deltaguard-python/{VERSION}"
LOG = logging.getLogger(__name__)
_APPENDABLE_WRITER_FEATURES = {
    "appendOnly",
    "invariants",
    "changeDataFeed",
    "deletionVectors",
    "timestampNtz",
    "v2Checkpoint",
    "vacuumProtocolCheck",
    "domainMetadata",
    "typeWidening",
    "typeWidening-preview",
    "variantType",
    "variantType-preview",
    "checkpointProtection",
}
_UNSUPPORTED_CONFIG = {
    "delta.enableRowTracking": "row tracking",
    "delta.enableInCommitTimestamps": "in-commit timestamps",
}
_PRIMITIVES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "double": pa.float64(),
    "float": pa.float32(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}


class ObjectWriter(TypingProtocol):
    """Writes a data file (bytes) to a URI under the table root."""

    def __call__(self, uri: str, data: bytes) -> None: ...


class UnsupportedTableError(ValueError):
    """The table needs a writer capability this appender does not have; nothing was written."""


class ConcurrentMetadataChangeError(RuntimeError):
    """A concurrent commit changed the schema or protocol so the prepared append no longer fits."""


@dataclass(frozen=True)
class TableState:
    version: int
    protocol: Protocol
    metadata: Metadata


def latest_version(store: LogStore, table_uri: str, at_least: int = 0) -> int:
    """The newest commit version, listing from ``at_least`` on. Raises FileNotFoundError if the
    table has no log."""
    latest = -1
    for entry in store.list_from(log_uri(table_uri) + commit_file_name(at_least)):
        version = commit_version(entry.name)
        if version is not None:
            latest = max(latest, version)
    if latest < 0:
        raise FileNotFoundError(f"no Delta commits under {log_uri(table_uri)}")
    return latest


def checksum_uri(table_uri: str, version: int) -> str:
    return f"{log_uri(table_uri)}{version:020d}.crc"


def write_next_checksum(
    store: LogStore,
    write_object: ObjectWriter,
    table_uri: str,
    version: int,
    added_sizes: list[int],
    txn_id: str,
) -> bool:
    """Writes ``<version>.crc`` for a blind append committed at ``version`` that added files of
    ``added_sizes``, derived from ``<version-1>.crc``; returns whether it wrote one. Best
    effort (see the module docstring, step 5): never raises."""
    try:
        previous = parse_checksum(
            "\n".join(store.read(checksum_uri(table_uri, version - 1))).encode("utf-8")
        )
        after = checksum_after_append(previous, added_sizes, txn_id)
        if after is None:
            return False
        write_object(checksum_uri(table_uri, version), after.to_json() + b"\n")
    except FileNotFoundError:
        return False
    except Exception as exc:
        LOG.warning("%s: no checksum written for version %d: %s", table_uri, version, exc)
        return False
    return True


def _actions(store: LogStore, table_uri: str, version: int) -> list[Action]:
    """The actions of one commit, read through the store and parsed by the log reader. Raises
    ValueError naming the file and line of a corrupt action."""
    uri = log_uri(table_uri) + commit_file_name(version)
    parsed = parse_json_actions("\n".join(store.read(uri)).encode("utf-8"))
    if parsed.errors:
        first = parsed.errors[0]
        raise ValueError(f"{uri} line {first.line}: {first.message}")
    return parsed.actions


def read_state(store: LogStore, table_uri: str, version: int | None = None) -> TableState:
    """Protocol and metadata in force at ``version`` (default: latest), newest commit first."""
    version = latest_version(store, table_uri) if version is None else version
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    for v in range(version, -1, -1):
        try:
            actions = _actions(store, table_uri, v)
        except FileNotFoundError:
            raise UnsupportedTableError(
                f"{table_uri}: commit {v} was cleaned up before protocol and metadata were found; "
                "this appender reads JSON commits only"
            ) from None
        for action in actions:
            if protocol is None and isinstance(action, Protocol):
                protocol = action
            if metadata is None and isinstance(action, Metadata):
                metadata = action
        if protocol is not None and metadata is not None:
            return TableState(version, protocol, metadata)
    raise UnsupportedTableError(f"{table_uri}: no protocol/metaData action found in its log")


def check_appendable(state: TableState, table_uri: str) -> pa.Schema:
    """The Arrow schema to write, or UnsupportedTableError naming what is not supported."""
    proto, meta = state.protocol, state.metadata
    if proto.min_reader_version > 3 or proto.min_writer_version > 7:
        raise UnsupportedTableError(f"{table_uri}: protocol {proto} is newer than this appender")
    unknown = set(proto.writer_features) - _APPENDABLE_WRITER_FEATURES
    if unknown:
        raise UnsupportedTableError(
            f"{table_uri}: writer features {sorted(unknown)} are not supported"
        )
    config = meta.configuration
    for key, what in _UNSUPPORTED_CONFIG.items():
        if str(config.get(key, "false")).lower() == "true":
            raise UnsupportedTableError(f"{table_uri}: {what} ({key}) is not supported")
    if config.get("delta.columnMapping.mode", "none") != "none":
        raise UnsupportedTableError(f"{table_uri}: column mapping is not supported")
    if any(k.startswith("delta.constraints.") for k in config):
        raise UnsupportedTableError(f"{table_uri}: CHECK constraints are not supported")
    if meta.partition_columns:
        raise UnsupportedTableError(f"{table_uri}: partitioned tables are not supported")
    fields = []
    for field in json.loads(meta.schema_string)["fields"]:
        field_meta = field.get("metadata") or {}
        if any(
            k.startswith(("delta.generationExpression", "delta.identity", "delta.invariants"))
            for k in field_meta
        ):
            raise UnsupportedTableError(
                f"{table_uri}: column {field['name']} is generated, identity "
                "or has an invariant; not supported"
            )
        kind = field["type"]
        if not isinstance(kind, str) or kind not in _PRIMITIVES:
            raise UnsupportedTableError(
                f"{table_uri}: column {field['name']} has type {kind}; only "
                f"{sorted(_PRIMITIVES)} are supported"
            )
        fields.append(
            pa.field(field["name"], _PRIMITIVES[kind], nullable=field.get("nullable", True))
        )
    return pa.schema(fields)


_ARROW_TO_DELTA = {str(t): name for name, t in _PRIMITIVES.items()}


def create_table(store: LogStore, table_uri: str, schema: pa.Schema) -> None:
    """Commits version 0 of a new unpartitioned table (protocol 1/2, no features), as Spark's
    ``CREATE TABLE`` would. Raises VersionTakenError (a LogFileExistsError) if the table already
    exists."""
    fields = []
    for field in schema:
        if str(field.type) not in _ARROW_TO_DELTA:
            raise UnsupportedTableError(
                f"column {field.name}: Arrow type {field.type} is not supported"
            )
        fields.append(
            {
                "name": field.name,
                "type": _ARROW_TO_DELTA[str(field.type)],
                "nullable": field.nullable,
                "metadata": {},
            }
        )
    now_ms = int(time.time() * 1000)
    commit_next(
        store,
        table_uri,
        -1,
        [
            {
                "commitInfo": {
                    "timestamp": now_ms,
                    "operation": "CREATE TABLE",
                    "operationParameters": {"partitionBy": "[]"},
                    "engineInfo": ENGINE_INFO,
                    "txnId": str(uuid.uuid4()),
                }
            },
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            {
                "metaData": {
                    "id": str(uuid.uuid4()),
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": json.dumps({"type": "struct", "fields": fields}),
                    "partitionColumns": [],
                    "configuration": {},
                    "createdTime": now_ms,
                }
            },
        ],
    )


def data_file_name() -> str:
    """A fresh data file name in the table root, as Spark names them."""
    return f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"


def parquet_bytes(rows: pa.Table) -> bytes:
    """``rows`` as one snappy-compressed Parquet file."""
    buffer = io.BytesIO()
    pq.write_table(rows, buffer, compression="snappy")
    return buffer.getvalue()


class BlindAppender:
    """Appends to one table, keeping the table state between appends: each append lists the
    log from the last version it knows and reads only the commits newer than that (the way a
    Delta snapshot is updated), instead of re-reading the log back to protocol and metaData.
    Not thread-safe: one appender per writer thread."""

    def __init__(self, store: LogStore, write_object: ObjectWriter, table_uri: str) -> None:
        self.store = store
        self.write_object = write_object
        self.table_uri = table_uri
        self.state: TableState | None = None

    def _refresh(self) -> TableState:
        """The state at the newest version, from the known state plus the newer commits."""
        known = self.state
        if known is None:
            self.state = read_state(self.store, self.table_uri)
            return self.state
        newest = latest_version(self.store, self.table_uri, at_least=known.version)
        protocol, metadata = known.protocol, known.metadata
        for v in range(known.version + 1, newest + 1):
            for action in _actions(self.store, self.table_uri, v):
                if isinstance(action, Protocol):
                    protocol = action
                elif isinstance(action, Metadata):
                    metadata = action
        self.state = TableState(newest, protocol, metadata)
        return self.state

    def append(
        self, rows: pa.Table, *, user_metadata: str | None = None, max_commit_attempts: int = 1000
    ) -> int:
        """Appends ``rows`` as one commit; returns the version it committed.

        Raises UnsupportedTableError, ConcurrentMetadataChangeError, or the store's errors. The
        data file is written before the commit; if the commit is never made the file is an
        orphan (the same as a failed Spark job), which ``deltaguard orphans`` finds.
        """
        table_uri = self.table_uri
        state = self._refresh()
        schema = check_appendable(state, table_uri)
        data = rows.select(schema.names).cast(schema)
        payload = parquet_bytes(data)
        name = data_file_name()
        self.write_object(f"{table_uri.rstrip('/')}/{name}", payload)
        now_ms = int(time.time() * 1000)
        txn_id = str(uuid.uuid4())
        commit_info: dict[str, Any] = {
            "timestamp": now_ms,
            "operation": "WRITE",
            "operationParameters": {"mode": "Append", "partitionBy": "[]"},
            "isolationLevel": "WriteSerializable",
            "isBlindAppend": True,
            "operationMetrics": {
                "numFiles": "1",
                "numOutputRows": str(data.num_rows),
                "numOutputBytes": str(len(payload)),
            },
            "engineInfo": ENGINE_INFO,
            "txnId": txn_id,
        }
        if user_metadata is not None:
            commit_info["userMetadata"] = user_metadata
        add = {
            "path": name,
            "partitionValues": {},
            "size": len(payload),
            "modificationTime": now_ms,
            "dataChange": True,
            "stats": json.dumps({"numRecords": data.num_rows}),
        }
        actions = [{"commitInfo": commit_info}, {"add": add}]
        for _ in range(max_commit_attempts):
            try:
                version = commit_next(self.store, table_uri, state.version, actions)
            except VersionTakenError:
                # Another writer won `version`: catch up with the commits that won, and
                # re-validate the append if one of them changed the schema or protocol.
                state = self._refresh()
                if check_appendable(state, table_uri) != schema:
                    raise ConcurrentMetadataChangeError(
                        f"{table_uri}: a commit up to version {state.version} changed the "
                        "schema; the append was not committed"
                    ) from None
                continue
            self.state = TableState(version, state.protocol, state.metadata)
            write_next_checksum(
                self.store, self.write_object, table_uri, version, [len(payload)], txn_id
            )
            return version
        raise RuntimeError(f"{table_uri}: no free version after {max_commit_attempts} attempts")


def append(
    store: LogStore,
    write_object: ObjectWriter,
    table_uri: str,
    rows: pa.Table,
    *,
    user_metadata: str | None = None,
    max_commit_attempts: int = 1000,
) -> int:
    """One append with a fresh :class:`BlindAppender` (see there); returns the version."""
    return BlindAppender(store, write_object, table_uri).append(
        rows, user_metadata=user_metadata, max_commit_attempts=max_commit_attempts
    )
