"""Log paths relative to the table root.

``add``/``remove`` paths may be relative or absolute URIs. Spark keys files by absolute path, so
``part-1.parquet`` and ``file:/t/part-1.parquet`` (in table ``/t``) are one file. deltaguard
keys them by their path relative to the root instead (same equivalence): an absolute path
inside the root is rewritten relative, under any of the root's spellings (``s3``, ``s3a``,
``s3n``; ``file:``, ``file://``, bare path). Absolute paths elsewhere stay absolute.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

from deltaguard.tools.deltalog.storage import TableStore

ABSOLUTE = r"^(/|[A-Za-z][A-Za-z0-9+.-]*:)"
_S3 = re.compile(r"^s3[an]?://")


def is_absolute(path: str) -> bool:
    """True for a URI with a scheme (``s3://``, ``file:``) or an absolute filesystem path."""
    return re.match(ABSOLUTE, path) is not None


def root_prefixes(store: TableStore) -> tuple[str, ...]:
    """Every spelling of ``<root>/`` an absolute log path inside the table may use."""
    root = store.location("").rstrip("/")
    if _S3.match(root):
        rest = _S3.sub("", root)
        return tuple(f"{scheme}://{rest}/" for scheme in ("s3", "s3a", "s3n"))
    return (f"file://{root}/", f"file:{root}/", f"{root}/")


def relative_to_root(path: str, prefixes: tuple[str, ...]) -> str | None:
    """``path`` relative to the root: unchanged if relative, None if absolute elsewhere."""
    if not is_absolute(path):
        return path
    for prefix in prefixes:
        if path.startswith(prefix):
            return path[len(prefix) :]
    return None


def relativize(
    paths: pa.Array | pa.ChunkedArray, prefixes: tuple[str, ...]
) -> pa.Array | pa.ChunkedArray:
    """Vectorized: absolute paths inside the root become relative; others are unchanged."""
    if not len(paths) or not pc.any(pc.match_substring_regex(paths, ABSOLUTE)).as_py():
        return paths
    for prefix in prefixes:
        inside = pc.starts_with(paths, prefix)
        stripped = pc.utf8_slice_codeunits(paths, len(prefix))
        paths = pc.if_else(inside, stripped, paths)
    return paths
