"""The rules Spark's VACUUM applies to decide what it may look at, written once.

* **Hidden paths** (``DeltaTableUtils.isHiddenDirectory``): a directory or file whose *name*
  starts with ``.`` or ``_`` is hidden, except ``_delta_index*``, ``_change_data*`` and
  ``<partition column>=...`` names; ``metadata`` is hidden when Iceberg universal format is on.
  VACUUM never lists below a hidden directory and never deletes a hidden file, so neither do
  we (``_delta_log`` is handled separately, see :mod:`.classify`).
* **Paths in the log** are URL-encoded URIs, relative to the table root or absolute. They are
  compared decoded (the store lists decoded names), and mapped into the table by the one rule
  every reader uses, :func:`deltaguard.tools.deltalog.paths.relative_to_root`: an absolute
  one only if it names the same bucket (``s3``, ``s3a`` and ``s3n`` are one scheme) or the
  same local directory; anything else is outside the table and ignored, as VACUUM does for
  shallow clones.
* **Retention**: files younger than the retention window are never candidates, and a window
  under :data:`MIN_SAFE_RETENTION_MS` needs an explicit override.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from deltaguard.tools.deltalog.times import duration_text

#: The shortest retention cleanup accepts without ``unsafe_retention`` (as Iceberg's procedure).
MIN_SAFE_RETENTION_MS = 24 * 3600 * 1000
LOG_DIR = "_delta_log"
CHANGE_DATA_DIR = "_change_data"
_NEVER_HIDDEN = ("_delta_index", CHANGE_DATA_DIR)


class RetentionTooShortError(ValueError):
    """A retention under 24 hours was asked for without the explicit override."""


def hidden_regex(
    partition_columns: Sequence[str], configuration: dict[str, str] | None = None
) -> str:
    """Spark's ``isHiddenDirectory`` for this table as a regex (the same in Python's ``re`` and
    Java's ``Pattern``): it matches (``search``/``rlike``) a relative path at the start of each
    hidden component, so a path is visible iff it does not match, and a name is hidden iff it
    matches at its start. The one definition :func:`hidden_name_rule` and the Spark engine's
    SQL both use."""
    formats = (configuration or {}).get("delta.universalFormat.enabledFormats", "")
    iceberg = "iceberg" in [f.strip().lower() for f in formats.split(",")]
    never = [*_NEVER_HIDDEN, *(f"{c}=" for c in partition_columns)]
    hidden = [f"(?!(?:{'|'.join(re.escape(n) for n in never)}))[._]"]
    if iceberg:
        hidden.append("metadata(?:/|$)")
    return f"(?:^|/)(?:{'|'.join(hidden)})"


def hidden_name_rule(
    partition_columns: Sequence[str], configuration: dict[str, str] | None = None
) -> Callable[[str], bool]:
    """Spark's ``isHiddenDirectory`` for this table: a predicate on one path *component*
    (:func:`hidden_regex` at its start)."""
    pattern = re.compile(hidden_regex(partition_columns, configuration))

    def is_hidden(name: str) -> bool:
        return pattern.match(name) is not None

    return is_hidden


def is_visible(rel_path: str, is_hidden: Callable[[str], bool]) -> bool:
    """True if no component of ``rel_path`` is hidden (what VACUUM's listing would reach)."""
    return not any(is_hidden(part) for part in rel_path.split("/"))


def check_retention(retention_ms: int, unsafe_retention: bool) -> None:
    """Raises :class:`RetentionTooShortError` (or ValueError for a negative window) unless the
    retention is at least 24 hours or the caller explicitly accepted the risk."""
    if retention_ms < 0:
        raise ValueError(f"retention must not be negative, got {duration_text(retention_ms)}")
    if retention_ms < MIN_SAFE_RETENTION_MS and not unsafe_retention:
        raise RetentionTooShortError(
            f"a retention of {duration_text(retention_ms)} is under 24 hours: files of a "
            "writer still in flight could be deleted; pass --unsafe-retention to accept that"
        )


def partition_of(rel_path: str) -> str:
    """The partition directory of a data file (``a=1/b=2``), ``""`` for the root, and the
    ``_change_data`` subtree kept as its own group."""
    head, _, _ = rel_path.rpartition("/")
    return head
