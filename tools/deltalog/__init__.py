"""Reading, replaying and auditing Delta logs on local disk and S3 (no Spark, no JVM).

Public API (everything else is internal and may change):

Opening a table
    Below this package, in :mod:`deltaguard.tools.storage` (import it from there):
    :func:`~deltaguard.tools.storage.open_table` ``(location, s3=S3Options(...))``
    -> :class:`~deltaguard.tools.storage.TableStore` (``list_dir``, ``walk``, ``read``,
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
    Everything raises :class:`~deltaguard.tools.storage.errors.DeltaLogError` subclasses, each
    naming the file at fault: ``VersionNotFoundError``, ``CorruptLogError`` and
    ``UnsupportedTableError`` (this package's :mod:`~deltaguard.tools.deltalog.errors`);
    ``TableNotFoundError`` and ``StorageError`` (:mod:`deltaguard.tools.storage.errors`, where
    ``DeltaLogError`` is defined too: import them from there).
"""

from typing import TYPE_CHECKING

from deltaguard.tools.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from deltaguard.tools.deltalog.actions import AddFile, DeletionVector, RemoveFile
    from deltaguard.tools.deltalog.errors import (
        CorruptLogError,
        UnsupportedTableError,
        VersionNotFoundError,
    )
    from deltaguard.tools.deltalog.filetable import FileActions
    from deltaguard.tools.deltalog.listing import LogListing, list_log
    from deltaguard.tools.deltalog.snapshot import Snapshot, load_snapshot

__all__ = [
    "AddFile",
    "CorruptLogError",
    "DeletionVector",
    "FileActions",
    "LogListing",
    "RemoveFile",
    "Snapshot",
    "UnsupportedTableError",
    "VersionNotFoundError",
    "list_log",
    "load_snapshot",
]

# Hidden from type checkers: they read the names above, and a typo stays an error.
if not TYPE_CHECKING:
    __getattr__ = lazy_exports(
        __name__,
        {
            "AddFile": "actions",
            "DeletionVector": "actions",
            "RemoveFile": "actions",
            "CorruptLogError": "errors",
            "UnsupportedTableError": "errors",
            "VersionNotFoundError": "errors",
            "FileActions": "filetable",
            "LogListing": "listing",
            "list_log": "listing",
            "Snapshot": "snapshot",
            "load_snapshot": "snapshot",
        },
    )
