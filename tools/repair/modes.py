"""The two choices of ``deltaguard repair`` (light to import: the CLI builds its options from
them). What each means: :mod:`.damage` and :mod:`.committer`."""

from __future__ import annotations

from enum import StrEnum


class CheckMode(StrEnum):
    """How dangling references are found (:mod:`.damage`)."""

    EXISTS = "exists"
    FOOTERS = "footers"


class CommitProtocol(StrEnum):
    """How an S3 table's writers commit (:mod:`.committer`)."""

    CONDITIONAL = "conditional"
    DYNAMODB = "dynamodb"
    TRANSITION = "transition"
