"""``deltaguard probe``: does an S3 endpoint really honour conditional writes? Decide before
trusting it with commits.

Checks, in order (each a :class:`Check` with a status and a detail):

1. ``access``: the credentials work and the bucket exists (HeadBucket). Failing here means the
   probe could not run (exit 2), not that the store is unsafe.
2. ``if-none-match``: a create-only PUT of a fresh key succeeds; a second create-only PUT of
   the same key gets 412 PreconditionFailed and leaves the first body in place
   (:func:`deltaguard.logstore.s3_conditional.check_if_none_match`).
3. ``atomicity``: ``writers`` threads, each with its own client, race behind a barrier to
   create one fresh key, for ``rounds`` rounds. A round with more than one winner means the
   store checks and stores non-atomically (moto does, measured): unsafe.
4. ``dynamodb-*`` (with a table name): the table exists, its key schema is Delta's
   (``tablePath`` HASH S, ``fileName`` RANGE S), TTL is enabled on ``expireTime``, and its
   billing mode (PAY_PER_REQUEST recommended).

Both create checks go through the commit protocol's settled create
(:meth:`~deltaguard.logstore.s3_conditional.S3ConditionalLogStore.create_settled`, on
commit-policy clients): a 503, a throttle or a lost response is retried and settled by a
read-back, exactly as a commit would be. A check whose outcome transient errors kept unsettled
past the attempt budget is ``undecided``: the verdict is then "could not decide" (exit 2), never
"unsafe". Everything else the probe sends (HeadBucket, the final listing and deletes) uses a
read-policy client (botocore retries).

Every probe key lives under ``<prefix>/_deltaguard_probe/<run id>/`` and is deleted at the end,
whatever happened. The verdict recommends a preset: ``s3-conditional`` when 2 and 3 pass,
``s3-dynamodb`` when they fail but a sound DynamoDB table was given, otherwise none.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from deltaguard.logstore.aws_errors import (
    describe,
    error_code,
    http_status,
)
from deltaguard.logstore.dynamodb_table import TTL_ATTRIBUTE, schema_problem
from deltaguard.logstore.errors import CommitOutcomeUnknownError, LogFileExistsError
from deltaguard.logstore.preset_name import PresetName
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore, check_if_none_match
from deltaguard.logstore.s3_location import S3Location

PASS, FAIL, WARN, SKIP, UNDECIDED = "pass", "fail", "warn", "skip", "undecided"
_CREATE_CHECKS = ("if-none-match", "atomicity")


class ProbeAbortedError(RuntimeError):
    """The probe could not run (credentials, bucket, endpoint); the message says which."""


@dataclass
class Check:
    name: str
    status: str
    detail: str


#: ``probe --json``'s ``schema``.
PROBE_SCHEMA = "deltaguard.probe/1"


@dataclass
class ProbeReport:
    target: str
    endpoint: str
    checks: list[Check] = field(default_factory=list)
    race_rounds: int = 0
    race_rounds_with_several_winners: int = 0

    @property
    def conditional_writes_safe(self) -> bool:
        return all(c.status == PASS for c in self.checks if c.name in _CREATE_CHECKS)

    @property
    def undecided(self) -> bool:
        """No create check failed, but at least one could not be settled."""
        statuses = {c.status for c in self.checks if c.name in _CREATE_CHECKS}
        return UNDECIDED in statuses and FAIL not in statuses

    @property
    def exit_code(self) -> int:
        """0: a preset is recommended; 2: could not decide; 1: unsafe."""
        if self.recommended_preset:
            return 0
        return 2 if self.undecided else 1

    @property
    def dynamodb_sound(self) -> bool:
        ddb = [c for c in self.checks if c.name.startswith("dynamodb-")]
        return bool(ddb) and all(c.status in (PASS, WARN) for c in ddb)

    @property
    def recommended_preset(self) -> PresetName | None:
        if self.conditional_writes_safe:
            return PresetName.S3_CONDITIONAL
        if self.dynamodb_sound:
            return PresetName.S3_DYNAMODB
        return None

    @property
    def verdict(self) -> str:
        if self.conditional_writes_safe:
            return "safe: conditional writes are honoured and atomic"
        if self.undecided:
            prefix = "could not decide whether conditional writes are safe: transient errors "
            prefix += "outlasted the retry budget (run the probe again)"
            return prefix + ("; the DynamoDB table is sound" if self.dynamodb_sound else "")
        if self.dynamodb_sound:
            return "conditional writes are NOT safe here; commit through DynamoDB"
        return "UNSAFE: conditional writes are not honoured atomically and no sound DynamoDB table was given"

    def to_json(self) -> dict[str, Any]:
        """``probe --json`` (schema :data:`PROBE_SCHEMA`, docs/reference/json-schemas.md)."""
        out: dict[str, Any] = {"schema": PROBE_SCHEMA, **asdict(self)}
        out.update(
            verdict=self.verdict,
            safe=self.recommended_preset is not None,
            decided=not self.undecided,
            recommended_preset=self.recommended_preset,
        )
        return out


def _check_access(s3: Any, bucket: str, endpoint: str) -> Check:
    try:
        s3.head_bucket(Bucket=bucket)
    except NoCredentialsError:
        raise ProbeAbortedError(
            "no AWS credentials found: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
            "or run where an instance role is available"
        ) from None
    except ClientError as exc:
        status = http_status(exc)
        if status == 404 or error_code(exc) in ("NoSuchBucket", "404"):
            raise ProbeAbortedError(f"bucket {bucket} does not exist at {endpoint}") from None
        if status in (401, 403):
            raise ProbeAbortedError(
                f"access to bucket {bucket} at {endpoint} was denied ({describe(exc)}): check the "
                "credentials and the bucket policy (the probe needs s3:PutObject, s3:GetObject, "
                "s3:DeleteObject, s3:ListBucket)"
            ) from None
        raise ProbeAbortedError(
            f"HeadBucket {bucket} at {endpoint} failed: {describe(exc)}"
        ) from None
    except BotoCoreError as exc:
        raise ProbeAbortedError(f"cannot reach {endpoint}: {describe(exc)}") from None
    return Check("access", PASS, f"bucket {bucket} reachable with the given credentials")


def _check_if_none_match(store: S3ConditionalLogStore, probe: S3Location) -> Check:
    try:
        honoured = check_if_none_match(store, probe)
    except CommitOutcomeUnknownError as exc:
        return Check("if-none-match", UNDECIDED, f"transient errors did not settle: {exc}")
    except LogFileExistsError:
        return Check("if-none-match", UNDECIDED, f"the fresh key {probe.uri()} already existed")
    except OSError as exc:
        return Check("if-none-match", FAIL, f"a create-only PUT failed: {exc}")
    if not honoured:
        return Check(
            "if-none-match",
            FAIL,
            "the second create-only PUT of an existing key succeeded and overwrote it: "
            "the store ignores If-None-Match",
        )
    return Check(
        "if-none-match", PASS, "second create-only PUT got 412 and the first body was kept"
    )


def _check_atomicity(
    make_client: Any,
    bucket: str,
    prefix: str,
    writers: int,
    rounds: int,
    report: ProbeReport,
    on_round: Callable[[], None] | None = None,
) -> Check:
    stores = [
        S3ConditionalLogStore(make_client(), verify_conditional_writes=False)
        for _ in range(writers)
    ]
    several = 0
    errors: list[str] = []
    unsettled: list[str] = []
    for r in range(rounds):
        key = S3Location(bucket, f"{prefix}race-{r}")
        barrier = threading.Barrier(writers)
        wins = [False] * writers

        def attempt(
            i: int,
            key: S3Location = key,
            barrier: threading.Barrier = barrier,
            wins: list[bool] = wins,
        ) -> None:
            body = f"writer {i} {uuid.uuid4()}".encode()
            barrier.wait()
            try:
                stores[i].create_settled(key, body)
                wins[i] = True
            except LogFileExistsError:
                pass
            except CommitOutcomeUnknownError as exc:
                unsettled.append(str(exc))
            except OSError as exc:
                errors.append(str(exc))

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if sum(wins) > 1:
            several += 1
        if on_round is not None:
            on_round()
    report.race_rounds = rounds
    report.race_rounds_with_several_winners = several
    if several:
        return Check(
            "atomicity",
            FAIL,
            f"{several} of {rounds} rounds of {writers} concurrent create-only PUTs had "
            "more than one winner: the store's check and store are not atomic",
        )
    if errors:
        return Check(
            "atomicity", FAIL, f"{len(errors)} racing PUTs failed unexpectedly, e.g. {errors[0]}"
        )
    if unsettled:
        return Check(
            "atomicity",
            UNDECIDED,
            f"{len(unsettled)} racing creates did not settle, e.g. {unsettled[0]}",
        )
    return Check(
        "atomicity",
        PASS,
        f"{rounds} rounds of {writers} concurrent create-only PUTs: one winner each",
    )


def _check_dynamodb(ddb: Any, table: str) -> list[Check]:
    try:
        described = ddb.describe_table(TableName=table)["Table"]
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            return [
                Check(
                    "dynamodb-table",
                    FAIL,
                    f"table {table} does not exist: create it with "
                    f"`deltaguard dynamodb create-table {table}`",
                )
            ]
        return [Check("dynamodb-table", FAIL, f"DescribeTable {table} failed: {describe(exc)}")]
    except BotoCoreError as exc:
        return [Check("dynamodb-table", FAIL, f"cannot reach DynamoDB: {describe(exc)}")]
    checks = [
        Check("dynamodb-table", PASS, f"table {table} exists ({described.get('TableStatus')})")
    ]
    problem = schema_problem(described)
    if problem:
        checks.append(Check("dynamodb-key-schema", FAIL, problem))
    else:
        checks.append(Check("dynamodb-key-schema", PASS, "tablePath HASH (S), fileName RANGE (S)"))
    try:
        ttl = ddb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
        if (
            ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING")
            and ttl.get("AttributeName") == TTL_ATTRIBUTE
        ):
            checks.append(Check("dynamodb-ttl", PASS, "TTL enabled on expireTime"))
        else:
            checks.append(
                Check(
                    "dynamodb-ttl",
                    WARN,
                    f"TTL is {ttl.get('TimeToLiveStatus')} on "
                    f"{ttl.get('AttributeName')}: completed entries are never removed",
                )
            )
    except (ClientError, BotoCoreError) as exc:
        checks.append(
            Check("dynamodb-ttl", WARN, f"could not read the TTL setting: {describe(exc)}")
        )
    mode = (described.get("BillingModeSummary") or {}).get("BillingMode", "PROVISIONED")
    checks.append(
        Check(
            "dynamodb-billing",
            PASS if mode == "PAY_PER_REQUEST" else WARN,
            f"billing mode {mode}"
            + ("" if mode == "PAY_PER_REQUEST" else ": bursts of commits can be throttled"),
        )
    )
    return checks


def run_probe(
    target: str,
    make_s3_client: Any,
    *,
    make_read_client: Any = None,
    writers: int = 8,
    rounds: int = 20,
    dynamodb_client: Any = None,
    dynamodb_table: str | None = None,
    on_round: Callable[[], None] | None = None,
) -> ProbeReport:
    """Runs every check against ``target`` (``s3://bucket/prefix``). ``make_s3_client`` builds a
    new commit-policy S3 client (one for the if-none-match check, one per racing writer);
    ``make_read_client`` a read-policy one for everything else (default: ``make_s3_client``).
    ``on_round`` is called after each race round (a progress counter). Raises
    ProbeAbortedError if it could not run."""
    loc = S3Location.parse(target)
    s3 = (make_read_client or make_s3_client)()
    endpoint = str(s3.meta.endpoint_url)
    report = ProbeReport(target=target, endpoint=endpoint)
    report.checks.append(_check_access(s3, loc.bucket, endpoint))
    prefix = (
        f"{loc.key.rstrip('/') + '/' if loc.key else ''}_deltaguard_probe/{uuid.uuid4().hex[:12]}/"
    )
    try:
        store = S3ConditionalLogStore(make_s3_client(), verify_conditional_writes=False)
        report.checks.append(
            _check_if_none_match(store, S3Location(loc.bucket, prefix + "if-none-match"))
        )
        report.checks.append(
            _check_atomicity(make_s3_client, loc.bucket, prefix, writers, rounds, report, on_round)
        )
    finally:
        _delete_prefix(s3, loc.bucket, prefix)
    if dynamodb_table:
        report.checks.extend(_check_dynamodb(dynamodb_client, dynamodb_table))
    return report


def _delete_prefix(s3: Any, bucket: str, prefix: str) -> None:
    """Deletes every probe key (only keys under the probe's own run prefix)."""
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", []) if o["Key"].startswith(prefix)]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})


def print_report(report: ProbeReport, console: Any) -> None:
    """The report as a rich table plus verdict lines (used by the CLI and the demo)."""
    from rich.table import Table

    table = Table(title=f"deltaguard probe {report.target} ({report.endpoint})")
    for column in ("check", "result", "detail"):
        table.add_column(column)
    colours = {PASS: "green", WARN: "yellow", FAIL: "bold red", SKIP: "dim", UNDECIDED: "yellow"}
    for check in report.checks:
        table.add_row(check.name, f"[{colours[check.status]}]{check.status}[/]", check.detail)
    console.print(table)
    console.print(f"verdict: {report.verdict}")
    console.print(f"recommended preset: {report.recommended_preset or 'none'}")
