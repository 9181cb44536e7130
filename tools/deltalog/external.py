"""Does a file outside the table root exist? For live files and deletion vectors whose log
paths are absolute and point elsewhere (shallow clones, ``p``-type deletion vectors).

Only locations deltaguard can reach with the table's own access are checked: S3 URIs (``s3``,
``s3a``, ``s3n``, any bucket) through the table's S3 client (read policy: transient errors are
retried), and local paths / ``file:`` URIs for a table on local disk. Anything else (another
filesystem, another kind of store, a denied HEAD) is "not checked", never "missing".
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum

from botocore.exceptions import BotoCoreError, ClientError

from deltaguard.logstore.aws_errors import describe, error_code, http_status
from deltaguard.logstore.s3_location import S3_SCHEMES, InvalidS3URIError, S3Location, scheme_of
from deltaguard.tools.storage import LocalTableStore, S3TableStore, TableStore


class Presence(StrEnum):
    PRESENT = "present"
    MISSING = "missing"
    NOT_CHECKED = "not-checked"


def _local(location: str) -> str:
    """The filesystem path of a decoded ``file:`` location or ``/path``: the scheme and an
    authority split off by hand, nothing decoded again (``%`` is a literal character here)."""
    path = location[len("file:") :] if scheme_of(location) == "file" else location
    if path.startswith("//"):
        path = "/" + path[2:].partition("/")[2]
    return path


def _one(store: TableStore, location: str) -> tuple[Presence, str]:
    scheme = scheme_of(location)
    if scheme in S3_SCHEMES:
        if not isinstance(store, S3TableStore):
            return Presence.NOT_CHECKED, "an S3 location seen from a local table"
        try:
            loc = S3Location.parse(location)  # literal: a decoded path is never a URL
        except InvalidS3URIError as exc:
            return Presence.NOT_CHECKED, str(exc)
        try:
            store.client.head_object(Bucket=loc.bucket, Key=loc.key)
        except (ClientError, BotoCoreError) as exc:
            if http_status(exc) == 404 or error_code(exc) in ("404", "NoSuchKey", "NotFound"):
                return Presence.MISSING, ""
            return Presence.NOT_CHECKED, describe(exc)
        return Presence.PRESENT, ""
    if scheme == "file" or (not scheme and location.startswith("/")):
        if not isinstance(store, LocalTableStore):
            return Presence.NOT_CHECKED, "a local path seen from an S3 table"
        return (Presence.PRESENT if os.path.isfile(_local(location)) else Presence.MISSING), ""
    return Presence.NOT_CHECKED, f"deltaguard cannot reach {scheme or 'this'} locations"


def check_external(
    store: TableStore, locations: list[str], threads: int = 10
) -> list[tuple[Presence, str]]:
    """For each decoded absolute location, in order: present, missing, or not checked (with
    why). Never raises for a location it cannot check."""
    if len(locations) < 2:
        return [_one(store, loc) for loc in locations]
    with ThreadPoolExecutor(min(threads, len(locations))) as pool:
        return list(pool.map(lambda loc: _one(store, loc), locations))
