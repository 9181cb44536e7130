"""What the LocalStack tests of the Python appender (``deltaguard.localstack.delta_append``)
pass it: a batch of rows in the test bed's schema, and the function that writes a data file to
S3. Used by test_repair_s3.py, test_transition_logstore.py, test_migrate_status.py and
test_dynamodb_logstore.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from deltaguard.localstack.append_job import arrow_schema
from deltaguard.logstore.s3_location import S3Location


def rows(tag: str, n: int = 3) -> pa.Table:
    """``n`` rows of writer 0, batch 0 (seq 0 to n-1), each with ``tag`` as its payload."""
    return pa.table(
        {"writer": [0] * n, "batch": [0] * n, "seq": list(range(n)), "payload": [tag] * n}
    ).cast(arrow_schema())


def s3_put(endpoint: Any) -> Callable[[str, bytes], None]:
    """``put(uri, data)``: an unconditional PutObject of ``data`` at the ``s3://`` or
    ``s3a://`` ``uri``, through one client of ``endpoint``."""
    s3 = endpoint.s3_client()

    def put(uri: str, data: bytes) -> None:
        loc = S3Location.parse(uri)
        s3.put_object(Bucket=loc.bucket, Key=loc.key, Body=data)

    return put
