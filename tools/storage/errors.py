"""Errors of table storage, and the base class of every error reading a Delta table.

:class:`DeltaLogError` is defined here, below the Delta log reader, so that storage failures
(:class:`StorageError`, :class:`FileMissingError`, :class:`TableNotFoundError`) and the log
reader's own errors (:mod:`deltaguard.tools.deltalog.errors`, which subclass it) are caught by
one ``except DeltaLogError``. Import each class from this module, where it is defined.
"""

from __future__ import annotations


class DeltaLogError(Exception):
    """The table's log cannot be read as asked. ``path`` is the file at fault, if any."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class TableNotFoundError(DeltaLogError):
    """No ``_delta_log`` with a commit or checkpoint under the given location."""


class StorageError(DeltaLogError):
    """Listing or reading failed (permissions, endpoint, network): not a property of the log."""


class FileMissingError(StorageError):
    """The file does not exist (as opposed to a file that could not be read)."""
