"""Errors of the Delta log reader about the log's content. Every one is a
:class:`~deltaguard.tools.storage.errors.DeltaLogError` (defined with the storage errors in
:mod:`deltaguard.tools.storage.errors`, below this package) whose message names the file (and
line) or setting at fault, so callers need to catch one class only."""

from __future__ import annotations

from deltaguard.tools.storage.errors import DeltaLogError


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
