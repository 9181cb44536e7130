"""Copies of test tables: to a scratch directory (to damage them) or to an S3 bucket."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


def copy_table(src: Path, dst: Path) -> Path:
    """A full copy of the table directory at ``src`` (log and data), keeping modification
    times (time travel by timestamp depends on them)."""
    shutil.copytree(src, dst, copy_function=shutil.copy2)
    return dst


def upload_table(src: Path, s3: Any, bucket: str, prefix: str, workers: int = 16) -> str:
    """PUTs every file under ``src`` to ``s3://bucket/prefix/`` with ``workers`` concurrent
    requests (one boto3 client shared: clients are thread-safe) and returns that URI. Raises
    the first failed PUT's error."""
    files = [p for p in src.rglob("*") if p.is_file()]

    def put(path: Path) -> None:
        key = f"{prefix}/{path.relative_to(src).as_posix()}"
        s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())

    with ThreadPoolExecutor(max(1, workers)) as pool:
        list(pool.map(put, files))
    return f"s3://{bucket}/{prefix}"
