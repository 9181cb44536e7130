"""The S3 conditional-write commit protocol in Python, on boto3.

Byte-for-byte the same protocol as the JVM ``io.deltaguard.logstore.S3ConditionalLogStore``, so
Python and Spark writers can commit to one table at once. Why two writers can never both create
N.json is argued once, in that class's javadoc
(``logstore/src/main/java/io/deltaguard/logstore/S3ConditionalLogStore.java``). The contract:

- ``write(uri, lines, overwrite=False)`` creates the object with one ``PutObject`` carrying
  ``If-None-Match: *``. On 412 / 409 / 5xx / throttling / no response it reads the key back:
  our own bytes mean an earlier attempt landed and only the response was lost (success, never a
  duplicate commit); other bytes raise :class:`LogFileExistsError`; absent means retry, with
  jittered exponential backoff, at most ``max_attempts`` PUTs, then
  :class:`CommitOutcomeUnknownError` (also when a read-back keeps failing), whose message says how
  to check whether the commit landed. 403 / missing bucket / other 4xx raise at once.
- ``overwrite=True`` is a plain PUT (``_last_checkpoint`` and the like).
- Before the first create on an (endpoint, bucket), it verifies that a second create-only PUT of
  a probe key gets 412 (fail closed: :class:`ConditionalWritesNotHonouredError`), once per
  process.
- Every line is written followed by ``\\n``, UTF-8, as every Delta LogStore writes them.

Give it a client with the *commit* policy (:func:`deltaguard.logstore.clients.commit_client`,
botocore retries off): then the protocol alone decides what is retried, always conditionally,
always after a read-back. (With botocore retries on it stays correct, since a retried PUT that finds its own
earlier bytes is settled by the read-back, but its attempt budget is no longer what it says.)
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from deltaguard.logstore.aws_errors import (
    describe,
    error_code,
    http_status,
    is_precondition_failed,
)
from deltaguard.logstore.backoff import sleep_before_retry
from deltaguard.logstore.commit_mark import commit_mark
from deltaguard.logstore.commit_metrics import CommitMetrics, CommitTally
from deltaguard.logstore.commit_names import commit_version
from deltaguard.logstore.errors import (
    CommitOutcomeUnknownError,
    ConditionalWritesNotHonouredError,
    LogFileExistsError,
)
from deltaguard.logstore.preset_name import PresetName
from deltaguard.logstore.s3_location import S3Location

LOG = logging.getLogger(__name__)

_VERIFIED: set[tuple[str, str]] = set()
_VERIFIED_LOCK = threading.Lock()


class _Kind:
    PRECONDITION_FAILED = "precondition-failed"
    CONDITIONAL_CONFLICT = "conditional-conflict"
    RETRYABLE = "retryable"
    UNKNOWN_OUTCOME = "unknown-outcome"
    FATAL = "fatal"


def classify(error: Exception) -> str:
    """What a failed S3 request means for a conditional create (see the JVM S3Failure)."""
    if isinstance(error, ClientError):
        if is_precondition_failed(error):
            return _Kind.PRECONDITION_FAILED
        code, status = error_code(error), http_status(error)
        if status == 409 or code == "ConditionalRequestConflict":
            return _Kind.CONDITIONAL_CONFLICT
        if status == 501 or code == "NotImplemented":
            # The store says it cannot do what the request asks (a conditional PUT): asking
            # again gets the same answer, and nothing was written.
            return _Kind.FATAL
        if status >= 500 or status in (408, 429) or code in ("SlowDown", "RequestTimeout"):
            return _Kind.RETRYABLE
        return _Kind.FATAL
    if isinstance(error, BotoCoreError):
        return _Kind.UNKNOWN_OUTCOME
    return _Kind.FATAL


@dataclass(frozen=True)
class LogFileStatus:
    """One entry of a ``list_from`` listing."""

    uri: str
    name: str
    size: int
    modified: datetime


class S3ConditionalLogStore:
    """Delta log reads and writes on S3 with conditional creates. Thread-safe."""

    def __init__(
        self,
        s3: Any,
        *,
        max_attempts: int = 10,
        base_delay_s: float = 0.05,
        max_delay_s: float = 5.0,
        verify_conditional_writes: bool = True,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        self.s3 = s3
        self.max_attempts = max_attempts
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.verify_conditional_writes = verify_conditional_writes
        #: This store's commit counters (:mod:`~.commit_metrics`).
        self.metrics = CommitMetrics()

    # -- writes -------------------------------------------------------------------------

    def write(self, uri: str, lines: Iterable[str], overwrite: bool = False) -> None:
        """Writes the lines to ``uri``; with ``overwrite=False``, only if it does not exist.

        Raises LogFileExistsError, CommitOutcomeUnknownError, ConditionalWritesNotHonouredError,
        or OSError for non-retryable S3 errors.
        """
        loc = S3Location.parse(uri)
        body = "".join(line + "\n" for line in lines).encode("utf-8")
        if overwrite:
            try:
                self.s3.put_object(Bucket=loc.bucket, Key=loc.key, Body=body)
            except (ClientError, BotoCoreError) as exc:
                raise OSError(f"PUT of {loc.uri()} failed: {describe(exc)}") from exc
            return
        if self.verify_conditional_writes:
            self.ensure_verified(loc)
        mark = commit_mark(PresetName.S3_CONDITIONAL)
        version = commit_version(loc.name)
        if version is None:  # not a commit
            self.create_settled(loc, body, mark=mark)
            return
        with self.metrics.observe(PresetName.S3_CONDITIONAL.value, uri, version) as tally:
            self.create_settled(loc, body, mark=mark, tally=tally)

    def _sleep_before(self, retry: int) -> None:
        sleep_before_retry(retry, self.base_delay_s, self.max_delay_s)

    def create_settled(
        self,
        loc: S3Location,
        body: bytes,
        *,
        mark: dict[str, str] | None = None,
        tally: CommitTally | None = None,
    ) -> None:
        """Creates ``loc`` with ``body`` only if it does not exist, settling every ambiguous
        outcome: one ``PutObject`` with ``If-None-Match: *`` per attempt; after a 412 / 409 /
        5xx / throttle / lost response, a read-back decides (our bytes: done; other bytes:
        :class:`LogFileExistsError`; absent: retry after jittered backoff). Raises
        :class:`CommitOutcomeUnknownError` when it cannot be settled (``max_attempts`` PUTs with
        nothing readable under the key, a 412 included, a read-back that keeps failing, or an
        error that cannot be retried after an unsettled attempt), and OSError at once for a first
        PUT's error that cannot be retried (403, 400, missing bucket). The
        JVM twin is ``ConditionalCreate``; the safety argument is in the JVM
        ``S3ConditionalLogStore``'s javadoc. This is the commit protocol's create; the probe
        reuses it. ``mark``: the object's user metadata, sent with every attempt
        (:func:`~.commit_mark.commit_mark`: the store's provenance mark on a commit).
        ``tally``: a commit's :class:`~.commit_metrics.CommitTally`, told of each PUT and of a
        settle (a read-back finding our bytes)."""
        tally = tally if tally is not None else CommitTally()
        last_error = ""
        for attempt in range(1, self.max_attempts + 1):
            if attempt > 1:
                self._sleep_before(attempt - 1)
            failed = self._put_if_absent(loc, body, mark, tally, attempt)
            if failed is None:
                return
            kind, last_error = failed
            if self._settle(loc, body, tally, attempt, last_error):
                return
            if kind == _Kind.PRECONDITION_FAILED:
                # 412 yet nothing readable: a concurrent create is not visible yet, or was deleted.
                last_error += "; and the object was not readable afterwards"
        raise CommitOutcomeUnknownError(
            loc.uri(),
            f"the conditional create did not settle after {self.max_attempts} attempts; "
            f"last error: {last_error} (raise max_attempts if the store is merely slow)",
        )

    def _put_if_absent(
        self,
        loc: S3Location,
        body: bytes,
        mark: dict[str, str] | None,
        tally: CommitTally,
        attempt: int,
    ) -> tuple[str, str] | None:
        """Attempt ``attempt`` of :meth:`create_settled`: one ``PutObject`` with
        ``If-None-Match: *``. None if it created the object; else the failure's kind
        (:func:`classify`) and description, for the read-back to settle. Raises OSError for a
        first attempt's error that cannot be retried, :class:`CommitOutcomeUnknownError` for a
        later one's (an earlier, unsettled attempt may still land)."""
        try:
            tally.attempts += 1
            self.s3.put_object(
                Bucket=loc.bucket,
                Key=loc.key,
                Body=body,
                IfNoneMatch="*",
                ContentType="application/json",
                **({"Metadata": mark} if mark else {}),
            )
            return None
        except (ClientError, BotoCoreError) as exc:
            kind = classify(exc)
            last_error = describe(exc)
            if kind == _Kind.FATAL and attempt == 1:
                raise OSError(
                    f"Conditional create of {loc.uri()} failed and cannot be retried: {last_error}"
                ) from exc
            if kind == _Kind.FATAL:  # an earlier, unsettled attempt may still land
                raise CommitOutcomeUnknownError(
                    loc.uri(),
                    f"attempt {attempt}/{self.max_attempts} failed and cannot be retried "
                    f"({last_error}) after an earlier attempt whose outcome was not settled",
                ) from exc
            LOG.info(
                "conditional create of %s attempt %d/%d: %s (%s)",
                loc.uri(),
                attempt,
                self.max_attempts,
                kind,
                last_error,
            )
            return kind, last_error

    def _settle(
        self, loc: S3Location, body: bytes, tally: CommitTally, attempt: int, last_error: str
    ) -> bool:
        """The read-back after failed attempt ``attempt`` of :meth:`create_settled`: True if
        ``loc`` holds our bytes (an earlier attempt landed: a settle), False if it is absent
        (retry). Raises :class:`LogFileExistsError` if it holds other bytes,
        :class:`CommitOutcomeUnknownError` if the read-back fails."""
        try:
            stored = self.read_back(loc)
        except CommitOutcomeUnknownError as exc:
            raise CommitOutcomeUnknownError(
                loc.uri(),
                f"attempt {attempt}/{self.max_attempts} of the conditional create failed "
                f"({last_error}) and the read-back to settle it failed: {exc.detail}",
            ) from exc
        if stored is None:
            return False
        if stored == body:
            LOG.info("%s already holds our bytes: an earlier attempt landed", loc.uri())
            tally.settles += 1
            return True
        raise LogFileExistsError(f"{loc.uri()}: another writer created it first ({last_error})")

    def read_back(self, loc: S3Location) -> bytes | None:
        """The object's bytes, or None if it does not exist. Transient errors are retried up to
        ``max_attempts`` times; then (or at once for a non-retryable error)
        :class:`CommitOutcomeUnknownError`."""
        last_error = ""
        for attempt in range(1, self.max_attempts + 1):
            if attempt > 1:
                self._sleep_before(attempt - 1)
            try:
                return bytes(self.s3.get_object(Bucket=loc.bucket, Key=loc.key)["Body"].read())
            except ClientError as exc:
                if error_code(exc) in ("NoSuchKey", "404"):
                    return None
                last_error = describe(exc)
                if classify(exc) == _Kind.FATAL:
                    break
            except BotoCoreError as exc:
                last_error = describe(exc)
        raise CommitOutcomeUnknownError(
            loc.uri(), f"could not read back {loc.uri()}; last error: {last_error}"
        )

    def ensure_verified(self, loc: S3Location) -> None:
        """Once per process, endpoint and bucket: :func:`verify_conditional_writes` next to
        ``loc`` (fail closed). Stores that create commit files through this one call it."""
        endpoint = str(self.s3.meta.endpoint_url)
        cache_key = (endpoint, loc.bucket)
        with _VERIFIED_LOCK:
            if cache_key in _VERIFIED:
                return
            probe = S3Location(loc.bucket, f"{loc.parent_key}/.deltaguard-probe.{uuid.uuid4()}.tmp")
            verify_conditional_writes(self, probe)
            _VERIFIED.add(cache_key)

    # -- reads --------------------------------------------------------------------------

    def read(self, uri: str) -> Iterator[str]:
        """The file's lines without line breaks. Raises FileNotFoundError if absent."""
        loc = S3Location.parse(uri)
        try:
            body = self.s3.get_object(Bucket=loc.bucket, Key=loc.key)["Body"]
        except ClientError as exc:
            if error_code(exc) in ("NoSuchKey", "404"):
                raise FileNotFoundError(uri) from exc
            raise OSError(f"GET of {loc.uri()} failed: {describe(exc)}") from exc
        for raw in body.iter_lines():
            yield raw.decode("utf-8")

    def list_from(self, uri: str) -> Iterator[LogFileStatus]:
        """Files of the same directory whose names sort at or after ``uri``'s name, in order,
        listed with ``StartAfter`` (not a listing of the whole directory). Files only: the
        commit protocol reads no subdirectory of ``_delta_log``. (The JVM store also returns
        subdirectories, because Spark's VACUUM lists data directories through it.)

        Raises FileNotFoundError if the directory holds no object at all."""
        loc = S3Location.parse(uri)
        prefix = f"{loc.parent_key}/" if loc.parent_key else ""
        start_after = _key_before(loc.key)
        paginator = self.s3.get_paginator("list_objects_v2")
        kwargs: dict[str, Any] = {"Bucket": loc.bucket, "Prefix": prefix, "Delimiter": "/"}
        if start_after:
            kwargs["StartAfter"] = start_after
        seen_any = False
        scheme = uri.split(":", 1)[0]
        for page in paginator.paginate(**kwargs):
            for obj in page.get("Contents", []):
                key = obj["Key"]
                if key == prefix or key < loc.key:
                    continue
                seen_any = True
                yield LogFileStatus(
                    f"{scheme}://{loc.bucket}/{key}",
                    key[len(prefix) :],
                    int(obj["Size"]),
                    obj["LastModified"],
                )
        if not seen_any:
            probe = self.s3.list_objects_v2(Bucket=loc.bucket, Prefix=prefix, MaxKeys=1)
            if not probe.get("KeyCount"):
                raise FileNotFoundError(
                    f"No such file or directory: {scheme}://{loc.bucket}/{prefix}"
                )


def _key_before(key: str) -> str:
    """The key just before ``key`` in byte order, so StartAfter includes ``key`` itself."""
    raw = key.encode("utf-8")
    if not raw:
        return ""
    if raw[-1] > 0:
        return (raw[:-1] + bytes([raw[-1] - 1])).decode("utf-8", errors="ignore")
    return raw[:-1].decode("utf-8", errors="ignore")


def verify_conditional_writes(store: S3ConditionalLogStore, probe: S3Location) -> None:
    """Fail-closed check of one endpoint and bucket: :func:`check_if_none_match` on ``probe``,
    which it then deletes.

    Raises ConditionalWritesNotHonouredError if the store ignores If-None-Match, or OSError
    (CommitOutcomeUnknownError included) if the check could not decide."""
    s3 = store.s3
    endpoint = str(s3.meta.endpoint_url)
    try:
        honoured = check_if_none_match(store, probe)
    except LogFileExistsError as exc:
        raise OSError(
            f"Could not verify conditional writes on {endpoint}: the fresh probe key "
            f"{probe.uri()} already held other bytes"
        ) from exc
    except OSError as exc:
        raise OSError(f"Could not verify conditional writes on {endpoint}: {exc}") from exc
    finally:
        try:
            s3.delete_object(Bucket=probe.bucket, Key=probe.key)
        except (ClientError, BotoCoreError) as exc:
            LOG.warning("could not delete probe object %s: %s", probe.uri(), describe(exc))
    if not honoured:
        raise ConditionalWritesNotHonouredError(
            f"Refusing to commit: S3 endpoint {endpoint} (bucket {probe.bucket}) does not honour "
            f"If-None-Match: a second create-only PUT of {probe.uri()} overwrote the object "
            "instead of failing with 412. Concurrent Delta writers would lose commits here. Use "
            "the DynamoDB LogStore for this store, or, only if a single writer commits, pass "
            "verify_conditional_writes=False (JVM: deltaguard.logstore.verifyConditionalWrites=false)."
        )


def check_if_none_match(store: S3ConditionalLogStore, probe: S3Location) -> bool:
    """Does the store honour ``If-None-Match: *``? Creates the fresh key ``probe`` with
    :meth:`S3ConditionalLogStore.create_settled`, sends a second create-only PUT of it (retried
    on transient errors, up to ``max_attempts``), and reads it back (:meth:`read_back`). True if
    the second PUT got 412 and the first body is still there; False if it overwrote the object.

    Raises LogFileExistsError if the fresh key already held other bytes,
    CommitOutcomeUnknownError if transient errors outlasted the attempt budget (undecided), and
    OSError for an answer that is neither success nor 412 and cannot be retried."""
    first = f"deltaguard probe 1 {uuid.uuid4()}".encode()
    store.create_settled(probe, first)
    overwritten = _second_put_overwrote(store, probe)
    stored = store.read_back(probe)
    return not overwritten and stored == first


def _second_put_overwrote(store: S3ConditionalLogStore, probe: S3Location) -> bool:
    last_error = ""
    for attempt in range(1, store.max_attempts + 1):
        if attempt > 1:
            store._sleep_before(attempt - 1)
        try:
            store.s3.put_object(
                Bucket=probe.bucket,
                Key=probe.key,
                IfNoneMatch="*",
                Body=f"deltaguard probe 2 {uuid.uuid4()}".encode(),
            )
            return True
        except (ClientError, BotoCoreError) as exc:
            kind = classify(exc)
            if kind == _Kind.PRECONDITION_FAILED:
                return False
            last_error = describe(exc)
            if kind == _Kind.FATAL:
                raise OSError(
                    f"the second create-only PUT of {probe.uri()} failed with {last_error} "
                    "instead of 412 PreconditionFailed"
                ) from exc
    raise CommitOutcomeUnknownError(
        probe.uri(),
        f"the second create-only PUT did not get an answer in {store.max_attempts} attempts; "
        f"last error: {last_error}",
    )


def forget_verifications() -> None:
    """Forget every successful verification (tests only)."""
    with _VERIFIED_LOCK:
        _VERIFIED.clear()
