"""How executors reach the table: a picklable description, opened once per Python worker."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from deltaguard.tools.deltalog.storage import S3Options, TableStore, open_table


@dataclass(frozen=True)
class StoreSpec:
    """The table root and the S3 options: what an executor needs to open the same
    :class:`~deltaguard.tools.deltalog.storage.TableStore` as the driver (credentials come from
    the executor's environment, boto3's default chain)."""

    uri: str
    s3: S3Options = field(default_factory=S3Options)

    def open(self) -> TableStore:
        return _open(self)


@functools.lru_cache(maxsize=8)
def _open(spec: StoreSpec) -> TableStore:
    return open_table(spec.uri, spec.s3)
