"""How times are shown to people. A time in epoch milliseconds: ISO 8601, UTC, to the
millisecond (``2026-11-27T10:20:47.123+00:00``), :func:`iso_utc`; a duration: a number and an
English unit, singular for exactly one (``1 hour``, ``36 hours``, ``7 days``),
:func:`duration_text`. Every message, text report and TSV row uses these forms; JSON documents
keep the ``*_ms`` integers (and add an ISO field where documented)."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_utc(ms: int | None) -> str:
    """``ms`` (epoch milliseconds) as ISO 8601 UTC; ``-`` for None."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


#: The units :func:`duration_text` picks from, largest first: (name, milliseconds).
_UNITS = (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000), ("second", 1000))


def duration_text(ms: float) -> str:
    """``ms`` milliseconds in the largest unit that holds it whole (``7 days``, ``36 hours``,
    ``90 minutes``), else in hours (``1.5 hours``; seconds under a minute); the unit is singular
    for exactly 1 (``1 hour``), plural otherwise (``0 seconds``, ``1.5 hours``)."""
    whole = next(((u, n) for u, n in _UNITS if ms and ms % n == 0), None)
    if whole is None:
        whole = ("hour", 3_600_000) if abs(ms) >= 60_000 else ("second", 1000)
    unit, size = whole
    number = ms / size
    return f"{number:g} {unit}{'' if number == 1 else 's'}"
