"""A commit entry planted in a DynamoDB commit table, in the item format of Delta's
``S3DynamoDBLogStore`` (``tablePath``, ``fileName``, ``tempPath``, ``complete`` as the strings
``"true"``/``"false"``, ``expireTime`` in epoch seconds): what a writer of that store left.
Used by the tests that stage entries a writer would have written (audit, history, orphans,
log-cleanup, migrate status, the DynamoDB store's recovery)."""

from __future__ import annotations

import time
from typing import Any


def put_entry(
    ddb: Any,
    table: str,
    table_path: str,
    version: int,
    temp_path: str,
    *,
    complete: bool,
    expire: bool | None = None,
) -> None:
    """Writes the entry of ``version`` (``fileName`` ``<20 digits>.json``) of ``table_path`` in
    the commit table ``table``; ``temp_path`` relative to ``_delta_log``. ``expire``: whether
    it has an ``expireTime`` (a day ahead); by default as Delta's store writes it, only a
    complete entry has one."""
    item = {
        "tablePath": {"S": table_path},
        "fileName": {"S": f"{version:020d}.json"},
        "tempPath": {"S": temp_path},
        "complete": {"S": "true" if complete else "false"},
    }
    if complete if expire is None else expire:
        item["expireTime"] = {"N": str(int(time.time()) + 86400)}
    ddb.put_item(TableName=table, Item=item)
