"""The exit codes of ``deltaguard audit``, ``history``, ``orphans``, ``repair`` and ``probe``: one meaning
each, for every command (the README's table is this one).

``0`` (:attr:`ExitCode.CLEAN`)
    done, nothing to act on: healthy table, history read, nothing to clean, cleanup that
    deleted everything it meant to delete, safe store.
``1`` (:attr:`ExitCode.FOUND`)
    done, and something needs attention: audit findings (warnings or errors), files to clean
    or damage to repair in a dry run, damage ``orphans`` found (``stranded-commit``), a gap
    ``repair`` cannot fill, an unsafe store.
``2`` (:attr:`ExitCode.UNREADABLE`)
    the command could not read what its answer needs, so the answer is incomplete: no
    ``_delta_log``, storage or credential errors that outlasted the retries, a snapshot that
    cannot be rebuilt (missing or damaged commit or checkpoint it needs), a commit history
    cannot read, a refused table (catalog-managed, unknown reader feature); also a refused
    setting or argument, and a probe that could not run or decide. Whatever could be read is
    still printed (audit findings, history entries with their ``problem``).
``3`` (:attr:`ExitCode.DELETE_FAILED`)
    ``orphans --delete --yes``: some deletions failed or their outcome is unknown, or the run
    failed after deleting began (a failed delete job, a manifest that could not be written).
    The message and the manifest say what was deleted and what is unknown; never "nothing
    deleted" once deleting began (that message, with code 2, means nothing was).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    CLEAN = 0
    FOUND = 1
    UNREADABLE = 2
    DELETE_FAILED = 3
