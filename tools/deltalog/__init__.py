"""Reading, replaying and auditing Delta logs on local disk and S3 (no Spark, no JVM).

Public API (everything else is internal and may change):

Opening a table
    :func:`~deltaguard.tools.deltalog.storage.open_table` ``(location, s3=S3Options(...))``
    -> :class:`~deltaguard.tools.deltalog.storage.TableStore` (``list_dir``, ``walk``, ``read``,
    ``stat``, ``location``), for a local path, ``file:``, ``s3://`` or ``s3a://`` location.

Replay
    :func:`~deltaguard.tools.deltalog.snapshot.load_snapshot`
    ``(table, version=None, timestamp_ms=None, *, s3=None, listing=None) -> Snapshot``.
    :class:`~deltaguard.tools.deltalog.snapshot.Snapshot` has ``version``, ``timestamp_ms``,
    ``protocol``, ``metadata`` (``configuration``), ``adds`` (live files) and ``removes`` (every
    tombstone) as :class:`~deltaguard.tools.deltalog.filetable.FileActions` (``paths()``,
    ``deletion_vectors()``, iteration as ``AddFile``/``RemoveFile``, ``.table`` in pyarrow),
    ``txns``, ``domain_metadata``, ``deleted_file_retention_ms()``,
    ``unexpired_tombstones(now_ms)``, ``location(path)``, ``live_locations()``, ``segment``
    (the checkpoint and JSON files used) and ``listing``.

Log files
    :func:`~deltaguard.tools.deltalog.listing.list_log` -> ``LogListing`` (commits, checkpoints,
    checksums, compactions, temp and stray files). Every file any retained version references
    is :func:`deltaguard.tools.orphans.references.collect_references` (``.named_in_log``), built on
    this package.

Audit and history
    :func:`~deltaguard.tools.deltalog.audit.audit_table` -> ``AuditReport`` (findings with code,
    severity, file, line, hint); :func:`~deltaguard.tools.deltalog.history.read_history`.

Errors
    Everything raises :class:`~deltaguard.tools.deltalog.errors.DeltaLogError` subclasses
    (``TableNotFoundError``, ``VersionNotFoundError``, ``CorruptLogError``,
    ``UnsupportedTableError``, ``StorageError``), each naming the file at fault.
"""

from deltaguard.tools.deltalog.actions import AddFile, DeletionVector, RemoveFile
from deltaguard.tools.deltalog.errors import (
    CorruptLogError,
    DeltaLogError,
    StorageError,
    TableNotFoundError,
    UnsupportedTableError,
    VersionNotFoundError,
)
from deltaguard.tools.deltalog.filetable import FileActions
from deltaguard.tools.deltalog.listing import LogListing, list_log
from deltaguard.tools.deltalog.snapshot import Snapshot, load_snapshot
from deltaguard.tools.deltalog.storage import S3Options, TableStore, open_table

__all__ = [
    "AddFile",
    "CorruptLogError",
    "DeletionVector",
    "DeltaLogError",
    "FileActions",
    "LogListing",
    "RemoveFile",
    "S3Options",
    "Snapshot",
    "StorageError",
    "TableNotFoundError",
    "TableStore",
    "UnsupportedTableError",
    "VersionNotFoundError",
    "list_log",
    "load_snapshot",
    "open_table",
]
