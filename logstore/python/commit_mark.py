"""The one definition (Python side) of the provenance mark on a commit object: S3 user metadata
``x-amz-meta-deltaguard-commit: <preset>/<runtime>/<deltaguard version>`` that every deltaguard
store sets on the ``_delta_log/N.json`` it creates, in the same request that creates it (the
conditional PUT, the DynamoDB protocol's copy, the transition store's conditional PUT). The JVM
twin is ``io.deltaguard.logstore.CommitMark``; docs/design/logstore.md ("Provenance mark")
documents the format.

``<preset>`` names the store and its protocol (:class:`~.preset_name.PresetName`:
``s3-conditional``, ``s3-dynamodb``, ``s3-dynamodb-transition``), ``<runtime>`` is ``jvm`` or
``python``. A leaf module: the stores set the mark, the log reader parses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from deltaguard.logstore.preset_name import PresetName

#: The user-metadata name as boto3 takes and returns it (S3 sends it as ``x-amz-meta-`` + this).
COMMIT_MARK_KEY = "deltaguard-commit"
#: The runtimes that write marks.
RUNTIMES = ("jvm", "python")
#: The presets whose stores write marks.
MARKING_PRESETS = (
    PresetName.S3_CONDITIONAL,
    PresetName.S3_DYNAMODB,
    PresetName.S3_DYNAMODB_TRANSITION,
)


def _version() -> str:
    try:
        return version("deltaguard")
    except PackageNotFoundError:  # pragma: no cover - only outside an installed package
        return "dev"


def commit_mark(preset: PresetName) -> dict[str, str]:
    """The ``Metadata`` argument of the PUT that creates a commit of ``preset``'s Python store."""
    return {COMMIT_MARK_KEY: f"{preset}/python/{_version()}"}


@dataclass(frozen=True)
class CommitMark:
    """A parsed mark: which store (by its preset) in which runtime and version wrote it."""

    preset: PresetName
    runtime: str
    version: str

    def __str__(self) -> str:
        return f"{self.preset}/{self.runtime}/{self.version}"


def parse_commit_mark(metadata: dict[str, str] | None) -> CommitMark | None:
    """The mark in an object's user metadata (boto3's ``Metadata``: names without the
    ``x-amz-meta-`` prefix, any case), or None without one or with one not of the documented
    form (``<preset>/<runtime>/<version>``, a marking preset, a known runtime)."""
    if not metadata:
        return None
    value = next((v for k, v in metadata.items() if k.lower() == COMMIT_MARK_KEY), None)
    if value is None:
        return None
    parts = value.strip().split("/")
    if len(parts) != 3 or parts[1] not in RUNTIMES:
        return None
    try:
        preset = PresetName(parts[0])
    except ValueError:
        return None
    if preset not in MARKING_PRESETS:
        return None
    return CommitMark(preset, parts[1], parts[2])
