"""Exceptions of deltaguard's LogStores (the Python mirror of the JVM ones)."""

from __future__ import annotations

import re

from deltaguard.logstore.commit_names import COMMIT_FILE_PATTERN, commit_version

#: ``<table>/_delta_log/<commit file>``: group 1 the table, group 2 the commit file name.
_COMMIT_LOCATION = re.compile(rf"^(.*)/_delta_log/({COMMIT_FILE_PATTERN})$")


class LogFileExistsError(FileExistsError):
    """Another writer created the log file first (the JVM store's FileAlreadyExistsException).

    A Delta writer reacts by checking for conflicts and retrying at the next version.
    """


class CommitOutcomeUnknownError(OSError):
    """A create of a commit file could not be settled: whether the commit landed is unknown.

    The twin of the JVM ``io.deltaguard.logstore.CommitOutcomeUnknownException``, with the same
    message (:func:`outcome_unknown_message`): the commit may have landed or may still land, it
    can only ever be version N of its table, and ``deltaguard history TABLE`` shows whether
    version N carries the commit's ``userMetadata`` or ``txn``. ``location`` is the commit file
    (``s3://bucket/key``), ``detail`` how many attempts ran and the last error."""

    def __init__(self, location: str, detail: str) -> None:
        super().__init__(outcome_unknown_message(location, detail))
        self.location = location
        self.detail = detail


def outcome_unknown_message(location: str, detail: str) -> str:
    """What is unknown, why (``detail``), and how to check before retrying: for a commit file,
    the table and the version to look at; for any other key (the probe's), only that the object
    may exist. The same text as the JVM exception's."""
    match = _COMMIT_LOCATION.match(location)
    if match is None:
        return (
            f"The outcome of the conditional create of {location} is unknown: {detail}. The "
            "object may exist now, or appear later while a request is in flight."
        )
    table, version = match.group(1), commit_version(match.group(2))
    return (
        f"The outcome of the commit {location} is unknown: {detail}. The commit may have "
        "landed, or may still land while a request is in flight. It can only ever be version "
        f"{version} of {table}. Before retrying the job, check: `deltaguard history {table}` "
        f"shows each version's userMetadata and txn (app id, version). If version {version} "
        "carries your commit's userMetadata or txn, it landed: do not retry. If version "
        f"{version} is another writer's commit, yours did not land and never will: retry. If "
        f"there is no version {version} yet, check again in a minute."
    )


class ConditionalWritesNotHonouredError(OSError):
    """The endpoint accepted a second create-only PUT of an existing key (ignores
    If-None-Match); committing there would lose commits, so the store refuses."""
