"""Finding and removing what failed jobs left in a Delta table, with VACUUM's rules.

Public API:

* :func:`~deltaguard.tools.orphans.classify.scan` ``(store, retention_ms=None)`` ->
  :class:`~deltaguard.tools.orphans.classify.ScanResult` (candidates with class
  ``orphan``, ``expired-tombstone``, ``recent`` or ``log-temp``, size, mtime, reason);
* :func:`~deltaguard.tools.orphans.cleanup.execute` ``(store, result, manifest_path=...,
  options=CleanupOptions(...))``:
  re-reads the log, deletes in batches, writes a manifest directory (safety argument in
  :mod:`~deltaguard.tools.orphans.cleanup`);
* :func:`~deltaguard.tools.orphans.manifest.read_manifest` ``(directory)``: a manifest's
  summary and its per-file records (both engines write the same format; for a
  ``--manifest`` directory, its latest run), :func:`~.manifest.read_manifests`: every run;
* :func:`~deltaguard.tools.orphans.run.to_json` / ``print_report``: the report.

Stores come from :func:`deltaguard.tools.storage.open_table` (local paths, ``s3://``,
``s3a://``).
"""

from typing import TYPE_CHECKING

from deltaguard.tools.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from deltaguard.tools.orphans.classify import Candidate, FileClass, ScanResult, scan
    from deltaguard.tools.orphans.cleanup import CleanupOptions, CleanupResult, execute, targets
    from deltaguard.tools.orphans.deleter import OutsideTableError, delete_files
    from deltaguard.tools.orphans.manifest import Manifest, read_manifest, read_manifests
    from deltaguard.tools.orphans.rules import MIN_SAFE_RETENTION_MS, RetentionTooShortError

__all__ = [
    "MIN_SAFE_RETENTION_MS",
    "Candidate",
    "CleanupOptions",
    "CleanupResult",
    "FileClass",
    "Manifest",
    "OutsideTableError",
    "RetentionTooShortError",
    "ScanResult",
    "delete_files",
    "execute",
    "read_manifest",
    "read_manifests",
    "scan",
    "targets",
]

# Hidden from type checkers: they read the names above, and a typo stays an error.
if not TYPE_CHECKING:
    __getattr__ = lazy_exports(
        __name__,
        {
            "Candidate": "classify",
            "FileClass": "classify",
            "ScanResult": "classify",
            "scan": "classify",
            "CleanupOptions": "cleanup",
            "CleanupResult": "cleanup",
            "execute": "cleanup",
            "targets": "cleanup",
            "OutsideTableError": "deleter",
            "delete_files": "deleter",
            "Manifest": "manifest",
            "read_manifest": "manifest",
            "read_manifests": "manifest",
            "MIN_SAFE_RETENTION_MS": "rules",
            "RetentionTooShortError": "rules",
        },
    )
