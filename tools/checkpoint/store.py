"""Writing log files that are not commits: a checkpoint (create-exclusive, never over an
existing file) and ``_last_checkpoint`` (overwritten, as Delta does).

Create-exclusive is the one of :func:`deltaguard.tools.repair.stranded.create_exclusive`:
``link(2)`` on local disk, ``If-None-Match: *`` on S3 (a bucket that ignores the condition is
refused: S3 tables whose writers commit through DynamoDB need it for this too). Delta's own
checkpoint writers never go through DynamoDB, so neither does this.
"""

from __future__ import annotations

from deltaguard.logstore.clients import commit_client
from deltaguard.logstore.local_log_store import LocalLogStore
from deltaguard.tools.repair.stranded import create_exclusive as _create_exclusive
from deltaguard.tools.storage import LocalTableStore, S3Options, S3TableStore, TableStore


def create_exclusive(store: TableStore, s3: S3Options, rel: str, body: bytes) -> None:
    """Creates ``rel`` holding ``body`` only if it does not exist. Raises
    :class:`~deltaguard.logstore.errors.LogFileExistsError` if it does (unless it holds these
    very bytes: an earlier attempt of ours), and the stores' errors."""
    _create_exclusive(store, s3, rel, body)


def overwrite(store: TableStore, s3: S3Options, rel: str, body: bytes) -> None:
    """Writes ``rel`` whole, replacing it: atomically on local disk (a rename), one PUT on S3."""
    if isinstance(store, LocalTableStore):
        LocalLogStore().create(str(store.root / rel), body, overwrite=True)
        return
    assert isinstance(store, S3TableStore)
    client = commit_client(s3.endpoint, s3.region, s3.path_style)
    client.put_object(Bucket=store.root.bucket, Key=store.key(rel), Body=body)
