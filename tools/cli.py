"""The ``deltaguard`` command.

Errors a user can cause (a missing jar, bad arguments) end with a one-line message and a
non-zero exit code, never a traceback.
"""

from __future__ import annotations

from importlib.metadata import version

import click

from deltaguard.logstore.jars import PluginJarMissingError, plugin_jar
from deltaguard.spark_conf.jvm_deps import maven_coordinates


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("deltaguard"), prog_name="deltaguard")
def main() -> None:
    """Safe concurrent Delta Lake commits on S3."""


@main.command("jar")
def jar_command() -> None:
    """Print the path of deltaguard's LogStore jar (for spark-submit --jars)."""
    try:
        click.echo(str(plugin_jar()))
    except PluginJarMissingError as exc:
        raise click.ClickException(str(exc)) from None


@main.command("packages")
def packages_command() -> None:
    """Print the Maven coordinates Spark needs besides pyspark (for --packages)."""
    click.echo(",".join(maven_coordinates()))
