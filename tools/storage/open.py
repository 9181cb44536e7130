"""Opening a table location as a :class:`~deltaguard.tools.storage.table_store.TableStore`
(:func:`open_table`, :func:`local_path`), the error for a location without a table
(:func:`table_not_found`), and reading many files at once (:func:`read_each`,
:func:`read_each_with_metadata`, :func:`read_many`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from deltaguard.logstore.s3_location import (
    S3_SCHEMES,
    InvalidFileURIError,
    S3Location,
    file_uri_path,
    scheme_of,
)
from deltaguard.tools.storage.errors import StorageError, TableNotFoundError
from deltaguard.tools.storage.local import LocalTableStore
from deltaguard.tools.storage.s3 import S3TableStore
from deltaguard.tools.storage.table_store import S3Options, TableStore

_T = TypeVar("_T")


def read_each(
    store: TableStore,
    rel_paths: list[str],
    threads: int = 10,
    on_read: Callable[[], None] | None = None,
) -> list[bytes | StorageError]:
    """The contents of several files, in order, each either its bytes or the
    :class:`StorageError` reading it raised. S3 reads run concurrently (boto3 clients are
    thread-safe; 10 threads is botocore's default connection pool); local reads are
    sequential (each store's ``read_threads``). ``on_read`` is called after each file (from
    the reading thread): a progress counter."""
    return _each(store, store.read, rel_paths, threads, on_read)


def read_each_with_metadata(
    store: TableStore,
    rel_paths: list[str],
    threads: int = 10,
    on_read: Callable[[], None] | None = None,
) -> list[tuple[bytes, dict[str, str] | None] | StorageError]:
    """:func:`read_each` through :meth:`TableStore.read_with_metadata`: each file's bytes with
    its user metadata from the same GET (None on local disk), or the error reading it."""
    return _each(store, store.read_with_metadata, rel_paths, threads, on_read)


def _each(
    store: TableStore,
    read: Callable[[str], _T],
    rel_paths: list[str],
    threads: int,
    on_read: Callable[[], None] | None,
) -> list[_T | StorageError]:
    def one(rel: str) -> _T | StorageError:
        try:
            return read(rel)
        except StorageError as exc:
            return exc
        finally:
            if on_read is not None:
                on_read()

    workers = min(threads, store.read_threads, len(rel_paths))
    if workers < 2:
        return [one(p) for p in rel_paths]
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(workers)
    try:
        return list(pool.map(one, rel_paths))
    finally:  # an interrupt does not wait for the reads in flight (all are done otherwise)
        pool.shutdown(wait=False, cancel_futures=True)


def read_many(store: TableStore, rel_paths: list[str]) -> list[bytes]:
    """Like :func:`read_each`, but raises the first file's error."""
    out = []
    for result in read_each(store, rel_paths):
        if isinstance(result, StorageError):
            raise result
        out.append(result)
    return out


def local_path(location: str) -> Path | None:
    """``location`` as a local path (a path taken literally, or a ``file:`` URI decoded:
    :mod:`deltaguard.logstore.s3_location`; as given, not resolved), or None for an S3 URI.
    Raises :class:`StorageError` for another scheme or a ``file:`` URI with ``?``/``#``."""
    scheme = scheme_of(location)
    if scheme in S3_SCHEMES:
        return None
    if scheme == "file":
        try:
            return Path(file_uri_path(location))
        except InvalidFileURIError as exc:
            raise StorageError(str(exc), location) from None
    if scheme:
        raise StorageError(
            f"unsupported location {location!r}: use a local path, file:, s3:// or s3a://"
        )
    return Path(location)


def table_not_found(store: TableStore, why: str) -> TableNotFoundError:
    """The error for a location without a Delta log: ``<uri> does not exist`` when nothing at
    all is there (a typo in the path), else ``<uri> is not a Delta table: <why>``."""
    if not store.exists():
        return TableNotFoundError(f"{store.uri} does not exist", store.uri)
    return TableNotFoundError(f"{store.uri} is not a Delta table: {why}", store.uri)


def open_table(location: str, s3: S3Options | None = None, client: Any = None) -> TableStore:
    """A store for the table at ``location``: a local path, a ``file:`` URI (:func:`local_path`),
    or an S3 prefix taken literally (:meth:`S3Location.parse`: ``s3://b/hash`` is never the table
    at ``s3://b/hash#1``). ``client`` overrides the S3 client built from ``s3`` (a read-policy
    client). Raises :class:`StorageError` for an unsupported scheme."""
    path = local_path(location)
    if path is not None:
        return LocalTableStore(path.resolve())
    if client is None:
        from deltaguard.logstore.clients import read_client

        opts = s3 or S3Options()
        client = read_client(opts.endpoint, opts.region, path_style=opts.path_style)
    return S3TableStore(client, S3Location.parse(location.rstrip("/")), scheme_of(location))
