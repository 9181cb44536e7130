"""Option types and options the ``deltaguard`` commands share, spelled as users already type
them (aws-cli's ``--profile`` and ``--endpoint-url``, durations such as ``7d``). A value that
does not fit is a usage error naming the option (exit 2, :mod:`deltaguard.tools.cli_errors`),
before anything is read.

The region rule, one for every command (:func:`deltaguard.logstore.clients.region_or_default`):
``--region``, else the AWS configuration's (``AWS_REGION``, ``AWS_DEFAULT_REGION``, the
profile's ``region``), else ``us-east-1``.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from deltaguard.tools.output import format_option
from deltaguard.tools.progress import progress_option

F = TypeVar("F", bound=Callable[..., Any])

#: Duration units: seconds per unit (a plain number is hours).
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)


#: The longest duration any option takes (retention, windows): 100 years, in hours. Longer is
#: a typo, and would overflow the millisecond arithmetic of the commands (int64).
MAX_DURATION_HOURS = 100 * 365 * 24
#: The largest table version (and version count) an option takes: Delta versions are Java longs.
MAX_VERSION = 2**63 - 1


def bounded(low: int, high: int) -> click.IntRange:
    """An integer option's type: ``low`` to ``high`` inclusive. Out of range is a usage error
    naming the option and the range (exit 2); the range shows in ``--help`` and
    docs/reference/cli.md."""
    return click.IntRange(min=low, max=high)


def describe_range(param_type: click.ParamType) -> str | None:  # type: ignore[type-arg]
    """The documented range of a numeric option's type (``1<=x<=256``, ``0s<=x<=100 years``), or
    None for another type."""
    if isinstance(param_type, click.IntRange | click.FloatRange):
        return param_type._describe_range()
    if isinstance(param_type, Duration):
        return f"{'0<x' if param_type.positive else '0<=x'}<={MAX_DURATION_HOURS // 8760} years"
    return None


class Duration(click.ParamType):  # type: ignore[type-arg]
    """A duration as hours (float): ``7d``, ``36h``, ``90m``, ``45s``, ``2w``; a plain number is
    hours. Negative values and more than :data:`MAX_DURATION_HOURS` are refused; ``positive``
    also refuses 0."""

    name = "duration"

    def __init__(self, positive: bool = False) -> None:
        self.positive = positive

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int | float):
            hours = float(value)
        else:
            match = _DURATION.match(str(value))
            if match is None:
                self.fail(
                    f"{value!r} is not a duration: a number of hours, or a number with a "
                    "unit s, m, h, d or w (7d, 36h, 90m)",
                    param,
                    ctx,
                )
            number, unit = float(match.group(1)), match.group(2).lower() or "h"
            hours = number * _UNITS[unit] / 3600
        if hours > MAX_DURATION_HOURS:
            self.fail(
                f"{value!r} is longer than {MAX_DURATION_HOURS // 8760} years, the longest "
                "duration taken",
                param,
                ctx,
            )
        if hours < 0 or (self.positive and hours == 0):
            self.fail(
                f"{value!r} is {'negative' if hours < 0 else 'zero'}: give a duration "
                f"{'above' if self.positive else 'of at least'} 0",
                param,
                ctx,
            )
        return hours


class EndpointURL(click.ParamType):  # type: ignore[type-arg]
    """An endpoint URL with its scheme: ``http://127.0.0.1:9000``, ``https://s3.example.com``."""

    name = "url"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value)
        parts = urllib.parse.urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            hint = f": http://{text} or https://{text}" if "://" not in text else ""
            self.fail(f"{text!r} is not an http:// or https:// URL{hint}", param, ctx)
        return text


class TableLocation(click.ParamType):  # type: ignore[type-arg]
    """A table: a local path (literal), a ``file:`` URI, or ``s3://bucket/prefix`` (``s3a://``,
    ``s3n://``), the prefix taken literally (the rule:
    :mod:`deltaguard.logstore.s3_location`). A URI with an S3 scheme must name a bucket
    (``s3:/x/t`` and ``s3://`` are refused), a ``file:`` URI must have no ``?`` or ``#``;
    another scheme is refused. Whether the table exists is the reader's question."""

    name = "table"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from deltaguard.logstore.s3_location import (
            S3_SCHEMES,
            InvalidFileURIError,
            InvalidS3URIError,
            S3Location,
            file_uri_path,
            scheme_of,
        )

        text = str(value)
        scheme = scheme_of(text)
        if not text.strip():
            self.fail("an empty location", param, ctx)
        elif scheme in S3_SCHEMES:
            try:
                S3Location.parse(text)
            except InvalidS3URIError:
                self.fail(f"{text!r} is not an S3 URI: s3://bucket/prefix", param, ctx)
        elif scheme == "file":
            try:
                file_uri_path(text)
            except InvalidFileURIError as exc:
                self.fail(str(exc), param, ctx)
        elif scheme:
            self.fail(
                f"{text!r}: unsupported scheme {scheme!r} (a local path, file:, s3:// or s3a://)",
                param,
                ctx,
            )
        return text


def _use_profile(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--profile NAME``: checked against the AWS configuration files, then used by every AWS
    client of the command as ``AWS_PROFILE`` would be (and by the Spark engine's executors,
    which inherit the environment)."""
    if value is None:
        return None
    import botocore.session

    available = botocore.session.Session().available_profiles
    if value not in available:
        known = ", ".join(sorted(available)[:10]) or "none"
        raise click.BadParameter(
            f"AWS profile {value!r} is not in the AWS configuration files (profiles: {known})",
            ctx=ctx,
            param=param,
        )
    os.environ["AWS_PROFILE"] = value
    return value


#: ``--profile NAME``: the AWS named profile (as aws-cli's): every S3 and DynamoDB command.
profile_option = click.option(
    "--profile",
    metavar="NAME",
    expose_value=False,
    is_eager=True,
    callback=_use_profile,
    help="AWS named profile for credentials and region (default: AWS_PROFILE, else the "
    "default chain)",
)


def endpoint_option(*names: str, help: str) -> Callable[[F], F]:
    """An endpoint URL option under ``names`` (the first is the parameter's name), checked by
    :class:`EndpointURL`."""
    return click.option(*names, type=EndpointURL(), help=help)


#: ``--region``: see the region rule in the module docstring.
REGION_HELP = "region (default: AWS_REGION / AWS_DEFAULT_REGION / the profile's, else us-east-1)"


def check_option(default_note: str = "") -> Callable[[F], F]:
    """``--check exists|footers`` (:class:`~deltaguard.tools.deltalog.check_depth.CheckMode`),
    the one definition ``audit`` and ``repair`` share. Unset is None: the command takes
    ``footers`` unless it says otherwise in ``default_note`` (shown in the help)."""
    from deltaguard.tools.deltalog.check_depth import CheckMode

    return click.option(
        "--check",
        "check_mode",
        type=click.Choice([m.value for m in CheckMode]),
        default=None,
        help="how deeply live files are checked. footers (the default"
        + (f"; {default_note}" if default_note else "")
        + "): each live data file's Parquet footer and each deletion vector are read, as well "
        "as the listing; exists: the listing only (missing files, sizes other than the "
        "log's); a clean result then says that file contents were not read",
    )


def combine(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """One decorator applying ``decorators`` in order, the first outermost."""

    def apply(f: F) -> F:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return apply


#: How a command reaches S3: shared by probe, audit, history, orphans and migrate status.
s3_options = combine(
    endpoint_option(
        "--endpoint", "--endpoint-url", help="S3 endpoint URL (default: AWS for the region)"
    ),
    click.option("--region", default=None, help=f"S3 {REGION_HELP}"),
    click.option("--path-style/--virtual-host-style", default=False, help="S3 addressing style"),
    profile_option,
)
#: The DynamoDB LogStore's table, to check: shared by probe and audit.
dynamodb_options = combine(
    click.option(
        "--dynamodb-table", help="also check this DynamoDB table for the DynamoDB LogStore"
    ),
    endpoint_option("--dynamodb-endpoint", help="DynamoDB endpoint URL (default: AWS)"),
    click.option("--dynamodb-region", help="DynamoDB region (default: --region's rule)"),
)


#: The ``tablePath`` the DynamoDB LogStore's writers use: shared by audit and orphans.
dynamodb_table_path_option = click.option(
    "--dynamodb-table-path",
    "table_paths",
    multiple=True,
    help="tablePath the DynamoDB writers use (default: TABLE as s3a:// and s3://)",
)


def dynamodb_check(
    table: str,
    table_paths: tuple[str, ...],
    dynamodb_table: str | None,
    dynamodb_endpoint: str | None,
    dynamodb_region: str | None,
    endpoint: str | None,
    region: str | None,
) -> Any:
    """The :class:`~deltaguard.tools.deltalog.temp_commits.DynamoDBCheck` of
    ``--dynamodb-table`` (None without it): audit's and orphans' one reading of the options."""
    from deltaguard.tools.deltalog.temp_commits import DynamoDBCheck

    if not dynamodb_table:
        return None
    return DynamoDBCheck(
        dynamodb_client_for(dynamodb_endpoint or endpoint, dynamodb_region or region),
        dynamodb_table,
        dynamodb_table_paths(table, table_paths),
    )


def engine_option(help: str) -> Callable[[F], F]:
    """``--engine local|spark`` (default local): shared by audit and orphans."""
    return click.option(
        "--engine",
        type=click.Choice(["local", "spark"]),
        default="local",
        show_default=True,
        help=help,
    )


#: Where ``--engine spark`` runs when no session is active: shared by audit and orphans.
spark_master_option = click.option(
    "--spark-master", help="--engine spark without a running session: the master"
)


def dynamodb_table_paths(table: str, given: tuple[str, ...]) -> tuple[str, ...]:
    """The tablePath values DynamoDB writers use: ``given``, else TABLE (no trailing ``/``) as
    s3a:// and s3://."""
    root = table.rstrip("/")
    return given or tuple(
        dict.fromkeys(root.replace(s, t, 1) for s, t in (("s3://", "s3a://"), ("s3a://", "s3://")))
    )


def dynamodb_client_for(endpoint: str | None, region: str | None) -> Any:
    from deltaguard.logstore.clients import dynamodb_client

    return dynamodb_client(endpoint, region)


def parse_timestamp(value: str) -> int:
    """Epoch milliseconds, or an ISO 8601 time (UTC unless it has an offset)."""
    from datetime import UTC, datetime

    if value.isdigit():
        return int(value)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is neither epoch milliseconds nor an ISO 8601 time",
            param_hint="--timestamp",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def manifest_dir(path: Path | None) -> Path | None:
    """``--manifest``: a path that can hold the runs' manifest directories, else a usage error
    (exit 2) before anything is scanned."""
    if path is None:
        return None
    from deltaguard.tools.orphans.manifest import ManifestPathError, check_manifests_dir

    try:
        check_manifests_dir(path)
    except ManifestPathError as exc:
        raise click.BadParameter(str(exc)) from exc
    return path


def cleanup_options(retention: str, yes: str, manifest: str) -> Callable[[F], F]:
    """The options ``orphans`` and ``log-cleanup`` share, with each command's help for
    ``--retention``, ``--yes`` and ``--manifest``: the retention and its floor, the report's
    formats and the manifest directory."""
    return combine(
        click.option("--retention", "retention_hours", type=Duration(), help=retention),
        click.option("--yes", is_flag=True, help=yes),
        click.option("--unsafe-retention", is_flag=True, help="allow a retention under 24 hours"),
        click.option(
            "--json",
            "as_json",
            is_flag=True,
            help="print the report as JSON (docs/reference/json-schemas.md)",
        ),
        format_option,
        progress_option,
        click.option(
            "--manifest",
            "manifest_path",
            type=click.Path(file_okay=False, path_type=Path),
            callback=lambda _ctx, _param, value: manifest_dir(value),
            help=manifest,
        ),
    )
