"""Copies of test tables: to a scratch directory (to damage them) or to an S3 bucket."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any


def copy_table(src: Path, dst: Path) -> Path:
    """A full copy of the table directory at ``src`` (log and data), keeping modification
    times (time travel by timestamp depends on them)."""
    shutil.copytree(src, dst, copy_function=shutil.copy2)
    return dst


def upload_table(src: Path, s3: Any, bucket: str, prefix: str) -> str:
    """Uploads every file under ``src`` to ``s3://bucket/prefix/`` and returns that URI."""
    for path in sorted(src.rglob("*")):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(src).as_posix()}"
            s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
    return f"s3://{bucket}/{prefix}"
