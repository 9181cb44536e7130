"""A table under an S3 prefix: :class:`S3TableStore`, with the retry rules of its deletes.

Its client comes from :func:`deltaguard.tools.storage.open.open_table` (a read-policy client,
:func:`deltaguard.logstore.clients.read_client`) or from the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Container, Iterator, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from deltaguard.logstore.aws_errors import describe, error_code, http_status
from deltaguard.logstore.backoff import sleep_before_retry
from deltaguard.logstore.s3_listing import list_pages
from deltaguard.logstore.s3_location import S3_SCHEMES, S3Location
from deltaguard.tools.progress import note
from deltaguard.tools.storage.errors import FileMissingError, StorageError
from deltaguard.tools.storage.table_store import (
    Children,
    DeleteOutcome,
    FileInfo,
    StopCheck,
    below,
    in_key_range,
    in_skip,
)

#: Per-key DeleteObjects errors worth retrying.
_RETRYABLE_KEY_ERRORS = frozenset({"SlowDown", "InternalError", "ServiceUnavailable", "503"})


class _StopBeforeSend(Exception):
    """Raised by the S3 client's ``before-send`` hook for a DeleteObjects request once a stop
    was asked for: the request is not sent (botocore does not retry this exception)."""


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, BotoCoreError):
        return True
    status = http_status(exc)
    return status >= 500 or status == 429 or error_code(exc) in _RETRYABLE_KEY_ERRORS


def _may_have_applied(exc: Exception) -> bool:
    """A request that failed this way may still have been carried out: no response at all,
    or a server error other than 503 (which S3 answers to requests it did not process)."""
    if isinstance(exc, BotoCoreError):
        return True
    status = http_status(exc)
    return status >= 500 and status != 503


class S3TableStore:
    """A table under an S3 prefix (``s3``, ``s3a`` and ``s3n`` name the same objects)."""

    listing_workers = 8
    read_threads = 10  # botocore's default connection pool

    def __init__(self, client: Any, root: S3Location, scheme: str = "s3") -> None:
        self.client = client
        self.root = root
        self.scheme = scheme
        self.uri = f"{scheme}://{root.bucket}/{root.key}".rstrip("/")
        self._prefix = f"{root.key.strip('/')}/" if root.key.strip("/") else ""
        self._delete_call = threading.local()  # the stop check of a DeleteObjects call
        self._delete_hook = threading.Lock()
        self._delete_hooked = False

    def key(self, rel_path: str) -> str:
        """The object key of ``rel_path`` below the root, taken literally."""
        return self._prefix + rel_path

    def exists(self) -> bool:
        page: dict[str, Any] = next(iter(self.pages(self._prefix)), {})
        return bool(page.get("Contents") or page.get("CommonPrefixes"))

    def _error(self, exc: Exception, what: str, key: str) -> StorageError:
        where = f"s3://{self.root.bucket}/{key}"
        if error_code(exc) in ("NoSuchKey", "404", "NotFound") or http_status(exc) == 404:
            if error_code(exc) == "NoSuchBucket":
                return StorageError(f"bucket {self.root.bucket} does not exist", where)
            return FileMissingError(f"{where} does not exist", where)
        return StorageError(f"cannot {what} {where}: {describe(exc)}", where)

    def pages(
        self, prefix: str, delimiter: bool = True, start_after: str | None = None
    ) -> Iterator[Any]:
        """ListObjectsV2 pages of the keys under ``prefix`` (a full key prefix), from
        ``start_after`` (relative to ``prefix``). Raises :class:`StorageError` naming it."""
        from botocore.parsers import ResponseParserError  # heavy: only once S3 is in use

        start = prefix + start_after if start_after is not None else None
        try:
            yield from list_pages(
                self.client,
                self.root.bucket,
                prefix,
                delimiter="/" if delimiter else None,
                start_after=start,
            )
        except (ClientError, BotoCoreError, ResponseParserError) as exc:
            raise self._error(exc, "list", prefix) from None

    def infos(self, page: Any) -> Iterator[FileInfo]:
        """The files of one :meth:`pages` page, relative to the root (directory markers
        skipped)."""
        for obj in page.get("Contents", []):
            rel = obj["Key"][len(self._prefix) :]
            if rel and not rel.endswith("/"):
                yield FileInfo(rel, int(obj["Size"]), int(obj["LastModified"].timestamp() * 1000))

    def list_dir(self, rel_dir: str, start_after: str | None = None) -> list[FileInfo]:
        prefix = self.key(f"{rel_dir}/" if rel_dir else "")
        out = [info for page in self.pages(prefix, True, start_after) for info in self.infos(page)]
        out.sort(key=lambda f: f.path)
        return out

    def walk(self, rel_dir: str = "") -> Iterator[FileInfo]:
        prefix = self.key(f"{rel_dir}/" if rel_dir else "")
        for page in self.pages(prefix, False, None):
            yield from self.infos(page)

    def read(self, rel_path: str) -> bytes:
        key = self.key(rel_path)
        try:
            return bytes(self.client.get_object(Bucket=self.root.bucket, Key=key)["Body"].read())
        except (ClientError, BotoCoreError) as exc:
            raise self._error(exc, "read", key) from None

    def read_with_metadata(self, rel_path: str) -> tuple[bytes, dict[str, str] | None]:
        key = self.key(rel_path)
        try:
            response = self.client.get_object(Bucket=self.root.bucket, Key=key)
            return bytes(response["Body"].read()), dict(response.get("Metadata") or {})
        except (ClientError, BotoCoreError) as exc:
            raise self._error(exc, "read", key) from None

    def read_lines(self, rel_path: str) -> Iterator[bytes]:
        yield from self.read(rel_path).splitlines(keepends=True)

    def read_range(self, rel_path: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the file (one ranged GET). Raises as :meth:`read`."""
        key = self.key(rel_path)
        try:
            response = self.client.get_object(
                Bucket=self.root.bucket, Key=key, Range=f"bytes={start}-{end - 1}"
            )
            return bytes(response["Body"].read())
        except (ClientError, BotoCoreError) as exc:
            raise self._error(exc, "read", key) from None

    def stat(self, rel_path: str) -> FileInfo | None:
        key = self.key(rel_path)
        try:
            head = self.client.head_object(Bucket=self.root.bucket, Key=key)
        except (ClientError, BotoCoreError) as exc:
            err = self._error(exc, "stat", key)
            if isinstance(err, FileMissingError):
                return None
            raise err from None
        return FileInfo(
            rel_path, int(head["ContentLength"]), int(head["LastModified"].timestamp() * 1000)
        )

    def location(self, rel_path: str) -> str:
        return f"{self.uri}/{rel_path}" if rel_path else self.uri

    def children(
        self,
        rel_dir: str,
        skip: Container[str] = frozenset(),
        after: str | None = None,
        up_to: str | None = None,
    ) -> Children:
        root_prefix = self._prefix
        dir_prefix = f"{rel_dir}/" if rel_dir else ""
        files: list[FileInfo] = []
        dirs: list[str] = []
        known = 0
        for page in self.pages(root_prefix + dir_prefix, True, after):
            infos = list(self.infos(page))
            subdirs = [
                c["Prefix"][len(root_prefix) :].rstrip("/") for c in page.get("CommonPrefixes", ())
            ]
            if up_to is not None:
                names = len(dir_prefix)
                kept = [i for i in infos if in_key_range(i.path[names:], False, None, up_to)]
                kept_dirs = [d for d in subdirs if in_key_range(d[names:], True, None, up_to)]
                beyond = len(kept) < len(infos) or len(kept_dirs) < len(subdirs)
                infos, subdirs = kept, kept_dirs
            skipped = in_skip([info.path for info in infos], skip)
            known += int(sum(skipped))
            files += [info for info, hit in zip(infos, skipped, strict=True) if not hit]
            dirs += subdirs
            if up_to is not None and beyond:
                break  # every later page is beyond the range too
        return files, dirs, known

    def relative_of(self, scheme: str, netloc: str, path: str) -> str | None:
        if scheme not in S3_SCHEMES or netloc != self.root.bucket:
            return None
        return below(path.lstrip("/"), self.root.key.strip("/"))

    def real_root(self) -> str | None:
        return None

    def delete_batch(
        self, rel_paths: Sequence[str], attempts: int, stop: StopCheck | None = None
    ) -> DeleteOutcome:
        out = DeleteOutcome()
        prefix = self._prefix
        todo = list(rel_paths)
        why = ""
        #: How the paths still in ``todo`` stand if no further request is sent.
        standing: tuple[str, str] | None = None  # (outcome, error); None: never sent
        for attempt in range(attempts):
            if not todo:
                break
            if attempt:
                note(
                    f"retrying DeleteObjects of {len(todo)} keys after {why} ({attempt + 1}/{attempts})"
                )
                sleep_before_retry(attempt, base_s=0.1, cap_s=5.0)
            if stop is not None and stop():
                break
            out.requests += 1
            try:
                response: dict[str, Any] = self._delete_objects(todo, stop)
            except _StopBeforeSend as stopped:
                sent_before = stopped.args[0] if stopped.args else 0
                if not sent_before:
                    out.requests -= 1  # never sent
                else:  # botocore's retry of a request that failed: may have applied
                    standing = (
                        "unknown",
                        "stopped before the S3 client's retry of a failed request",
                    )
                break
            except (ClientError, BotoCoreError) as exc:
                standing = ("unknown" if _may_have_applied(exc) else "failed", describe(exc))
                if _retryable(exc) and attempt + 1 < attempts:
                    why = error_code(exc) or type(exc).__name__
                    continue
                break
            errors = {e["Key"][len(prefix) :]: e for e in response.get("Errors", ())}
            out.deleted += [r for r in todo if r not in errors]
            retry = []
            for rel, err in errors.items():
                code = str(err.get("Code", ""))
                what = f"{code}: {err.get('Message', '')}".strip(": ")
                if code == "NoSuchKey":
                    out.missing.append(rel)
                elif code in _RETRYABLE_KEY_ERRORS and attempt + 1 < attempts:
                    retry.append(rel)
                    why = code
                    standing = ("failed", what)
                else:
                    out.failed.append((rel, what))
            todo = retry
        if todo:  # stopped, or the last attempt failed as a whole
            if standing is None:
                out.not_sent += todo
            elif standing[0] == "unknown":
                out.unknown += [(r, standing[1]) for r in todo]
            else:
                out.failed += [(r, standing[1]) for r in todo]
        return out

    def _delete_objects(self, keys: list[str], stop: StopCheck | None) -> dict[str, Any]:
        """One DeleteObjects call (botocore's retries included) that sends nothing once
        ``stop`` returns True: :meth:`_before_delete_send` raises :class:`_StopBeforeSend`
        (its argument: how many times this call had sent the request before) instead."""
        with self._delete_hook:  # once, before this store's first DeleteObjects
            if not self._delete_hooked:
                self.client.meta.events.register(
                    "before-send.s3.DeleteObjects",
                    self._before_delete_send,
                    unique_id=f"deltaguard-delete-stop-{id(self)}",
                )
                self._delete_hooked = True
        state = self._delete_call
        state.stop, state.sent = stop, 0
        try:
            return self.client.delete_objects(  # type: ignore[no-any-return]
                Bucket=self.root.bucket,
                Delete={"Objects": [{"Key": self._prefix + r} for r in keys], "Quiet": True},
            )
        finally:
            state.stop = None

    def _before_delete_send(self, **_kwargs: Any) -> None:
        """botocore's ``before-send`` hook for DeleteObjects (each send, retries included, in
        the calling thread): the stop check of this thread's :meth:`_delete_objects`."""
        state = self._delete_call
        stop = getattr(state, "stop", None)
        if stop is None:
            return
        if stop():
            raise _StopBeforeSend(state.sent)
        state.sent += 1
