"""Exceptions of deltaguard's LogStores (the Python mirror of the JVM ones)."""

from __future__ import annotations


class LogFileExistsError(FileExistsError):
    """Another writer created the log file first (the JVM store's FileAlreadyExistsException).

    A Delta writer reacts by checking for conflicts and retrying at the next version.
    """


class CommitOutcomeUnknownError(OSError):
    """The create could not be settled within the attempt budget; the message names the key and
    the last error. The commit may or may not exist: re-read the log before retrying."""


class ConditionalWritesNotHonouredError(OSError):
    """The endpoint accepted a second create-only PUT of an existing key (ignores
    If-None-Match); committing there would lose commits, so the store refuses."""
