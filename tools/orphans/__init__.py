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

Stores come from :func:`deltaguard.tools.deltalog.open_table` (local paths, ``s3://``,
``s3a://``).
"""

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
