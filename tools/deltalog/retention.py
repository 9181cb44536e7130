"""Delta's two retention table properties, read one way: ``delta.deletedFileRetentionDuration``
(how long a removed data file stays, for ``orphans``, checkpoints' tombstones) and
``delta.logRetentionDuration`` (how long log files stay, for ``log-cleanup`` and the audit's
cost table). Each is an interval (``interval 1 weeks``, ``7 days``, ``1 day 12 hours``);
unset, Delta's default applies. A command's ``--retention`` overrides either
(:meth:`RetentionProperty.resolve`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_UNIT_MS = {
    "millisecond": 1,
    "second": 1000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 604_800_000,
}
#: Where a retention came from when the user gave it (:meth:`RetentionProperty.resolve`).
RETENTION_GIVEN = "--retention"


def parse_interval_ms(text: str) -> int:
    """A Delta interval property (``interval 1 weeks``, ``7 days``, ``1 day 12 hours``) in ms.
    Raises ValueError for anything else."""
    words = text.strip().lower().split()
    if words and words[0] == "interval":
        words = words[1:]
    if not words or len(words) % 2:
        raise ValueError(f"not an interval: {text!r}")
    total = 0.0
    for amount, unit in zip(words[::2], words[1::2], strict=True):
        unit = unit.rstrip("s") if unit not in ("ms",) else "millisecond"
        if unit not in _UNIT_MS or not re.fullmatch(r"-?\d+(\.\d+)?", amount):
            raise ValueError(f"not an interval: {text!r}")
        total += float(amount) * _UNIT_MS[unit]
    return int(total)


@dataclass(frozen=True)
class RetentionProperty:
    """One retention property: its key and Delta's default."""

    key: str
    default_ms: int
    default_text: str

    def ms(self, configuration: Mapping[str, str]) -> int:
        """The table's value in ms, or Delta's default. Raises ValueError naming the property
        if it is set to something that is not an interval."""
        return self.resolve(configuration, None)[0]

    def resolve(self, configuration: Mapping[str, str], given_ms: int | None) -> tuple[int, str]:
        """The retention to judge by and where it came from: ``given_ms`` (the command's
        ``--retention``) if given, else the table property, else Delta's default. Raises
        ValueError as :meth:`ms`."""
        if given_ms is not None:
            return given_ms, RETENTION_GIVEN
        value = configuration.get(self.key)
        if not value:
            return self.default_ms, f"Delta's default ({self.default_text})"
        try:
            return parse_interval_ms(value), f"the table property {self.key}"
        except ValueError:
            raise ValueError(f"table property {self.key} = {value!r}: not an interval") from None


DELETED_FILE_RETENTION = RetentionProperty(
    "delta.deletedFileRetentionDuration", 7 * 86_400_000, "7 days"
)
LOG_RETENTION = RetentionProperty("delta.logRetentionDuration", 30 * 86_400_000, "30 days")
