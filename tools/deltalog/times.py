"""How a time in epoch milliseconds is shown to people: ISO 8601, UTC, to the millisecond
(``2026-11-27T10:20:47.123+00:00``). Every message, text report and TSV row uses this one
form; JSON documents keep the ``*_ms`` integers (and add an ISO field where documented)."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_utc(ms: int | None) -> str:
    """``ms`` (epoch milliseconds) as ISO 8601 UTC; ``-`` for None."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
