"""How deeply ``audit`` and ``repair`` check a snapshot's live files: one choice, one
meaning for both commands (the checks themselves: :mod:`.live_files`). Light to import: the
CLI builds its ``--check`` option from it."""

from __future__ import annotations

from enum import StrEnum


class CheckMode(StrEnum):
    """``exists``: the listing only (a live file or deletion vector that is missing or of
    another size than the log's). ``footers``: also each live data file's Parquet footer
    (read at the listed size) and each deletion vector (size, magic, CRC), so a file the
    readers would refuse is found even when its size is right. ``footers`` is the default:
    only it backs "healthy means every reader can read the latest version"."""

    EXISTS = "exists"
    FOOTERS = "footers"
