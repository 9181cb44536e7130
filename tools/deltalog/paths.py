"""The one rule for a log path under the table root, used by the log reader, the audit and both
orphans engines.

``add``/``remove``/``cdc`` paths and absolute deletion-vector paths are URL-encoded URIs
(PROTOCOL.md), relative to the table root or absolute. deltaguard keeps them decoded
(:func:`~deltaguard.tools.deltalog.actions.decode_path`) and keys files by their path relative
to the root, as Spark keys them by absolute path: ``part-1.parquet`` and
``file:/t/part-1.parquet`` (in table ``/t``) are one file. :func:`relative_to_root` maps a
decoded log path into the table:

* **Relative or absolute is decided on the encoded form** (as Delta's ``new Path(new URI(p))``
  does): :func:`~deltaguard.tools.deltalog.actions.decode_path` prefixes ``./`` to a relative
  path whose decoded form would look absolute (``ab%3Ac`` decodes to ``ab:c``, not the scheme
  ``ab``), and this rule strips it.
* **A decoded absolute path is never parsed as a URL**: after decoding, ``#``, ``?`` and ``%``
  are literal characters of the path, so only the scheme (``s3``/``s3a``/``s3n``, one scheme
  here; ``file``; or a bare ``/path``) and the authority (the bucket) are split off by hand,
  never with ``urlsplit`` (which would cut ``s3://b/t/a#b`` at the ``#``).
* ``.``/``..`` segments and doubled slashes are normalized, as ``java.net.URI.normalize`` does
  in Hadoop's ``Path``; then the path is inside the root if the store says so
  (:meth:`~deltaguard.tools.storage.TableStore.relative_of`: same bucket and below
  its prefix, or below the local root).
* Anything else (another bucket, another filesystem such as ``abfss:``/``gs:``) is outside the
  table: ``None``.
"""

from __future__ import annotations

import posixpath
import re

import pyarrow as pa
import pyarrow.compute as pc

from deltaguard.logstore.s3_location import S3_SCHEMES
from deltaguard.tools.storage import TableStore

#: An absolute log path: a URI scheme (two characters or more: ``C:`` is no scheme) or a ``/``.
ABSOLUTE = r"^(/|[A-Za-z][A-Za-z0-9+.-]+:)"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
#: What a relative path needs normalized: a ``.``/``..`` segment or a doubled slash.
_UNNORMAL = r"(^|/)\.\.?(/|$)|//"
_UNNORMAL_RE = re.compile(_UNNORMAL)
_NEEDS_RULE = f"{ABSOLUTE}|{_UNNORMAL}"
#: A raw (encoded) log path that :func:`~deltaguard.tools.deltalog.actions.decode_path` or
#: :func:`relative_to_root` could change (escaped, with a ``:`` or a leading ``/``, or not
#: normalized; a regex valid in Python and Java): every other raw path is already its decoded
#: form relative to the root (what lets the Spark engine map those in Spark SQL).
NEEDS_RULE_OR_DECODING = f"[%:]|^/|{_UNNORMAL}"


def is_absolute(path: str) -> bool:
    """True for a URI with a scheme (``s3://``, ``file:``) or an absolute filesystem path."""
    return re.match(ABSOLUTE, path) is not None


def _normal(path: str) -> str:
    """``path`` with ``.``/``..`` segments resolved and doubled slashes collapsed."""
    if not _UNNORMAL_RE.search(path):
        return path
    out = posixpath.normpath(path)
    return out[1:] if out.startswith("//") else out  # POSIX keeps two leading slashes


def relative_to_root(path: str, store: TableStore) -> str | None:
    """A decoded log path (see the module docstring) relative to the table root of ``store``,
    or None if it points outside the table. Relative paths are returned normalized."""
    if ":" not in path and not path.startswith("/"):
        return _normal(path)  # relative: the common case, fast
    if path.startswith("/"):
        return store.relative_of("", "", _normal(path))
    match = _SCHEME.match(path)
    if match is None:
        return _normal(path)
    scheme = match.group(1).lower()
    if scheme not in S3_SCHEMES and scheme != "file":
        return None  # another filesystem (abfss:, gs:, hdfs:): never this table
    rest = path[match.end() :]
    netloc = ""
    if rest.startswith("//"):
        netloc, slash, below = rest[2:].partition("/")
        rest = slash + below
        netloc = netloc.rsplit("@", 1)[-1]  # user info is no part of the bucket
    return store.relative_of(scheme, netloc, _normal(rest))


def relativize(paths: pa.Array | pa.ChunkedArray, store: TableStore) -> pa.Array | pa.ChunkedArray:
    """:func:`relative_to_root` over a column of decoded paths: paths inside the root become
    relative (normalized), paths outside it stay as they are. Only the paths that need the
    rule (absolute, or not normalized) leave Arrow."""
    needs = pc.match_substring_regex(paths, _NEEDS_RULE)
    if not len(paths) or not pc.any(needs).as_py():
        return paths
    values = paths.to_pylist()
    for i, flag in enumerate(needs.to_pylist()):
        if flag:
            rel = relative_to_root(values[i], store)
            if rel is not None:
                values[i] = rel
    return pa.array(values, pa.string())


def relative_paths(paths: pa.Array | pa.ChunkedArray, store: TableStore) -> pa.ChunkedArray:
    """:func:`relative_to_root` over a column of decoded paths, keeping only the paths inside
    the root (relative, normalized; nulls dropped). As :func:`relativize`, only the paths that
    need the rule leave Arrow, and a chunk that needs nothing is not copied."""
    out: list[pa.Array] = []
    for chunk in paths.chunks if isinstance(paths, pa.ChunkedArray) else [paths]:
        chunk = chunk.filter(pc.is_valid(chunk)) if chunk.null_count else chunk
        needs = pc.match_substring_regex(chunk, _NEEDS_RULE)
        if not len(chunk) or not pc.any(needs).as_py():
            out.append(chunk)
            continue
        out.append(chunk.filter(pc.invert(needs)))
        mapped = [relative_to_root(p, store) for p in chunk.filter(needs).to_pylist()]
        out.append(pa.array([p for p in mapped if p is not None], pa.string()))
    return pa.chunked_array([c.cast(pa.string()) for c in out], pa.string())
