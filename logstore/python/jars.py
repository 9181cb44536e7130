"""Locates deltaguard's LogStore jars, carried inside the Python package: one per AWS SDK
generation (see ``deltaguard.spark_conf.spark_lines`` for which Spark line takes which)."""

from __future__ import annotations

from importlib import resources
from importlib.metadata import version
from pathlib import Path

#: The package version (one source: the repository's VERSION file, via the installed metadata);
#: Maven builds the jars under the same version (the Makefile passes it as ``-Drevision``).
VERSION = version("deltaguard")
#: The jar of each AWS SDK generation (keys: ``SdkGeneration`` values).
JAR_NAMES: dict[str, str] = {
    "sdk2": f"deltaguard-logstore-{VERSION}.jar",
    "sdk1": f"deltaguard-logstore-sdk1-{VERSION}.jar",
}
JAR_NAME = JAR_NAMES["sdk2"]


class PluginJarMissingError(RuntimeError):
    """The plugin jar was not built into the package."""


def plugin_jar(sdk: str = "sdk2") -> Path:
    """Path of the plugin jar for AWS SDK generation ``sdk`` (``sdk1`` or ``sdk2``), shipped as
    package data. Raises PluginJarMissingError if absent."""
    jar = Path(str(resources.files(__package__).joinpath("jars", JAR_NAMES[sdk])))
    if not jar.is_file():
        raise PluginJarMissingError(
            f"deltaguard's LogStore jar is missing at {jar}: build it with `make jar` "
            "(Maven, Java 17), or install a deltaguard wheel, which carries it."
        )
    return jar
