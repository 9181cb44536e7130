"""``deltaguard repair``'s commit protocol choice (light to import: the CLI builds its option
from it). What each means: :mod:`.committer`. The ``--check`` depth is
:class:`deltaguard.tools.deltalog.check_depth.CheckMode`, shared with ``audit``."""

from __future__ import annotations

from enum import StrEnum


class CommitProtocol(StrEnum):
    """How an S3 table's writers commit (:mod:`.committer`)."""

    CONDITIONAL = "conditional"
    DYNAMODB = "dynamodb"
    TRANSITION = "transition"
