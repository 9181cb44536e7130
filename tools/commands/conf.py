"""``deltaguard jar``, ``packages``, ``conf render`` and ``conf check``: what a spark-submit needs
(the shape of every command: :mod:`deltaguard.tools.commands`; each runner returns its exit
code, a refused setting raises :class:`~deltaguard.tools.cli_errors.Refused`). The settings
themselves are :mod:`deltaguard.spark_conf`'s."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from deltaguard.logstore.jars import PluginJarMissingError, plugin_jar
from deltaguard.spark_conf.conf_check import Entry, check, findings_json, parse_properties
from deltaguard.spark_conf.conf_check_across import check_across
from deltaguard.spark_conf.presets import (
    JAR_MODES,
    PresetError,
    PresetName,
    PresetOptions,
    render,
    to_env,
    to_json,
    to_properties,
)
from deltaguard.spark_conf.spark_lines import SPARK_VERSIONS, SparkLine, UnknownSparkLineError
from deltaguard.tools.cli_errors import Refused
from deltaguard.tools.cli_options import REGION_HELP, bounded, combine, endpoint_option
from deltaguard.tools.exit_codes import ExitCode

GROUP_HELP = "spark-submit presets: render them, check properties files."
JAR_HELP = "Print the path of deltaguard's LogStore jar for a Spark line (for spark-submit --jars)."
PACKAGES_HELP = "Print the Maven coordinates a Spark line needs besides pyspark (for --packages)."
RENDER_HELP = """Print the Spark settings of PRESET (s3-conditional, s3-dynamodb,
s3-dynamodb-transition, s3-single-driver, local)."""
CHECK_HELP = """Check Spark properties FILES: one line per problem, exit code 1 if any. With
several files, also a bucket that some give to a plain DynamoDB store and others to a
conditional store (mixed-commit-protocols)."""

#: --spark-version / --hadoop-version: which Spark line's jars (spark_lines.LINES).
line_options = combine(
    click.option(
        "--spark-version",
        metavar="|".join(SPARK_VERSIONS),
        help="the Spark line (default: the installed pyspark's, else the newest); another "
        "version is refused with exit code 2",
    ),
    click.option(
        "--hadoop-version",
        help="the cluster's Hadoop (3.3.4 or 3.4.1 for Spark 3.5; default: what pyspark ships)",
    ),
)


def line(spark_version: str | None, hadoop_version: str | None) -> SparkLine:
    """The Spark line of ``--spark-version`` / ``--hadoop-version``; an unknown one is refused."""
    try:
        return PresetOptions(spark_version=spark_version, hadoop_version=hadoop_version).line()
    except UnknownSparkLineError as exc:
        raise Refused(str(exc)) from None


def run_jar(chosen: SparkLine) -> int:
    """Prints the plugin jar of ``chosen``'s AWS SDK generation; a missing jar is refused."""
    try:
        click.echo(str(plugin_jar(chosen.sdk)))
    except PluginJarMissingError as exc:
        raise Refused(str(exc)) from None
    return ExitCode.CLEAN


def run_packages(chosen: SparkLine) -> int:
    """Prints ``chosen``'s Maven coordinates, comma-separated."""
    click.echo(",".join(chosen.coordinates))
    return ExitCode.CLEAN


render_options = combine(
    click.option(
        "--table-root", help="s3://bucket/prefix the preset is for (marks the bucket multi-writer)"
    ),
    click.option("--region", default=None, help=f"S3 {REGION_HELP}"),
    endpoint_option(
        "--endpoint", "--endpoint-url", help="S3 endpoint URL (S3-compatible stores, LocalStack)"
    ),
    click.option("--path-style/--virtual-host-style", default=False, help="S3 addressing style"),
    click.option("--credentials-provider", help="Hadoop/SDK v2 credentials provider class"),
    click.option(
        "--dynamodb-table",
        default="delta_log",
        show_default=True,
        help="s3-dynamodb(-transition): the table",
    ),
    click.option(
        "--dynamodb-region",
        help="s3-dynamodb(-transition): the table's region (default: --region)",
    ),
    endpoint_option(
        "--dynamodb-endpoint",
        help="s3-dynamodb(-transition): DynamoDB endpoint URL (default: AWS)",
    ),
    click.option(
        "--ttl",
        "ttl_seconds",
        default=86400,
        show_default=True,
        type=bounded(1, 10 * 366 * 86400),
        help="s3-dynamodb(-transition): seconds a completed entry is kept",
    ),
    click.option(
        "--acknowledge-single-driver",
        is_flag=True,
        help="s3-single-driver only: confirm exactly one driver writes each table",
    ),
    click.option(
        "--jars",
        type=click.Choice(JAR_MODES),
        default="auto",
        show_default=True,
        help="cache: spark.jars from deltaguard's jar cache (`make jars`); packages: Maven "
        "coordinates resolved from Maven Central (not ~/.m2); auto: cache if resolved, else "
        "packages; none: no jar settings (docs/guides/commit-path.md)",
    ),
    click.option(
        "--format",
        "fmt",
        type=click.Choice(["properties", "json", "env"]),
        default="properties",
        show_default=True,
    ),
    line_options,
)

PRESET_CHOICE = click.Choice([p.value for p in PresetName])


@dataclass(frozen=True)
class RenderRequest:
    """The command line, as plain values: the preset, its options, the output format."""

    preset: str
    options: PresetOptions
    #: ``properties``, ``json`` or ``env``.
    fmt: str = "properties"


def render_request(preset: str, fmt: str, **options: Any) -> RenderRequest:
    """The :class:`RenderRequest` of the command line (the region by the one region rule)."""
    from deltaguard.logstore.clients import region_or_default

    options["region"] = region_or_default(options["region"])
    return RenderRequest(preset, PresetOptions(**options), fmt)


def run_render(req: RenderRequest) -> int:
    """Prints the preset's settings; a setting the preset refuses raises :class:`Refused`."""
    try:
        conf = render(req.preset, req.options)
    except (PresetError, PluginJarMissingError, ValueError) as exc:
        raise Refused(str(exc)) from None
    formatter = {"properties": to_properties, "json": to_json, "env": to_env}[req.fmt]
    click.echo(formatter(conf), nl=False)
    return ExitCode.CLEAN


check_options = click.option(
    "--json", "as_json", is_flag=True, help="print the problems as JSON (deltaguard.conf-check/1)"
)


def run_check(files: tuple[Path, ...], as_json: bool) -> int:
    """Checks each properties file and the files together; prints one line per problem (or the
    JSON document) and returns FOUND if any; a file that cannot be read: one line,
    UNREADABLE."""
    parsed: dict[str, dict[str, Entry]] = {}
    for file in files:
        try:
            parsed[str(file)] = parse_properties(file.read_text())
        except OSError as exc:
            click.echo(f"deltaguard conf check: cannot read {file}: {exc.strerror}", err=True)
            return ExitCode.UNREADABLE
    found = [(path, f) for path, entries in parsed.items() for f in check(entries)]
    found += check_across(parsed)
    code = ExitCode.FOUND if found else ExitCode.CLEAN
    if as_json:
        click.echo(json.dumps(findings_json(list(parsed), found), indent=2))
        return code
    for path, finding in found:
        click.echo(finding.format(path))
    if not found:
        click.echo(f"{', '.join(parsed)}: no problems found")
    return code
