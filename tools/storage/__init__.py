"""The storage seam: file access below one Delta table root on local disk and S3 (list, stat,
read, and, for orphan cleanup only, delete). The layer between the LogStores
(:mod:`deltaguard.logstore`, below) and the Delta log reader (:mod:`deltaguard.tools.deltalog`,
above); it never imports the log reader or anything above it.

Contract:

* :func:`open_table` turns a table location (a local path, ``file:`` URI, or ``s3://`` /
  ``s3a://`` URI) into a :class:`TableStore`. Paths given to a store are relative to the table
  root, with ``/`` separators, never URL-encoded.
* Listing is by directory prefix, sorted by name, and may start after a name (S3's
  ``StartAfter``), so the log can be read from a checkpoint on without listing everything.
* All storage failures become :class:`~deltaguard.tools.storage.errors.StorageError` naming
  the path; a missing file is ``FileNotFoundError``-free: :meth:`TableStore.read` raises
  :class:`~deltaguard.tools.storage.errors.FileMissingError` (a ``StorageError``). Every
  storage error is a :class:`~deltaguard.tools.storage.errors.DeltaLogError`, the class
  callers of the log reader catch. The errors are imported from
  :mod:`deltaguard.tools.storage.errors`, not from this package.
* S3 clients come from :func:`deltaguard.logstore.clients.read_client`: the *read* policy
  (botocore's standard retries with a bounded budget, so a throttle or a 503 is retried, never
  reported as damage), standard AWS credential chain, endpoint, region and path-style as for
  ``deltaguard probe``.
* :class:`TableStore` is the protocol every caller programs against; what differs between
  local disk and S3 (listing one directory, concurrency that pays off, deleting, which
  absolute locations fall below the root, whether symlinks could lead outside it) is a member
  of the protocol, never an ``isinstance`` switch in a caller.

Modules: :mod:`.table_store` (the protocol and its value types), :mod:`.local`
(:class:`LocalTableStore`), :mod:`.s3` (:class:`S3TableStore`), :mod:`.open` (opening a
location, reading many files), :mod:`.errors`.
"""

from typing import TYPE_CHECKING

from deltaguard.tools.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from deltaguard.tools.storage.local import LocalTableStore
    from deltaguard.tools.storage.open import (
        local_path,
        open_table,
        read_each,
        read_each_with_metadata,
        read_many,
        table_not_found,
    )
    from deltaguard.tools.storage.s3 import S3TableStore
    from deltaguard.tools.storage.table_store import (
        BatchContainer,
        Children,
        DeleteOutcome,
        FileInfo,
        S3Options,
        StopCheck,
        TableStore,
        in_key_range,
        in_skip,
    )

__all__ = [
    "BatchContainer",
    "Children",
    "DeleteOutcome",
    "FileInfo",
    "LocalTableStore",
    "S3Options",
    "S3TableStore",
    "StopCheck",
    "TableStore",
    "in_key_range",
    "in_skip",
    "local_path",
    "open_table",
    "read_each",
    "read_each_with_metadata",
    "read_many",
    "table_not_found",
]

# Hidden from type checkers: they read the names above, and a typo stays an error.
if not TYPE_CHECKING:
    __getattr__ = lazy_exports(
        __name__,
        {
            "LocalTableStore": "local",
            "local_path": "open",
            "open_table": "open",
            "read_each": "open",
            "read_each_with_metadata": "open",
            "read_many": "open",
            "table_not_found": "open",
            "S3TableStore": "s3",
            "BatchContainer": "table_store",
            "Children": "table_store",
            "DeleteOutcome": "table_store",
            "FileInfo": "table_store",
            "S3Options": "table_store",
            "StopCheck": "table_store",
            "TableStore": "table_store",
            "in_key_range": "table_store",
            "in_skip": "table_store",
        },
    )
