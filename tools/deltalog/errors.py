"""Errors of the Delta log reader. Every one is a :class:`DeltaLogError` whose message names
the file (and line) or setting at fault, so callers need to catch one class only."""

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


class UnsupportedTableError(DeltaLogError):
    """A table this reader refuses to interpret: catalog-managed, or a reader feature it does
    not understand."""


class CorruptLogError(DeltaLogError):
    """A file the requested snapshot needs is damaged (bad JSON, unreadable checkpoint)."""


class IncompleteActionError(CorruptLogError):
    """A file the snapshot needs is intact, but one of its actions lacks a field the protocol
    requires (e.g. an old ``metaData`` without ``schemaString``)."""


class VersionNotFoundError(DeltaLogError):
    """The requested version or timestamp is not reconstructable from the retained log."""
