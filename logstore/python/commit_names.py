"""The one definition of a Delta commit file's name: ``_delta_log/<version, 20 digits>.json``.

Every module that names, lists or matches commit files (the LogStores, the log reader, the
test bed) uses these; PROTOCOL.md "Delta Log Entries" is the reference.
"""

from __future__ import annotations

import re

#: A commit file name as a regular-expression fragment (no anchors), for larger patterns.
COMMIT_FILE_PATTERN = r"\d{20}\.json"
#: A whole commit file name; group 1 is the version.
COMMIT_FILE = re.compile(r"^(\d{20})\.json$")


def commit_file_name(version: int) -> str:
    """``00000000000000000042.json`` for version 42."""
    return f"{version:020d}.json"


def commit_version(name: str) -> int | None:
    """The version of a commit file name, or None if ``name`` is not one."""
    match = COMMIT_FILE.match(name)
    return int(match.group(1)) if match else None
