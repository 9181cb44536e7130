"""Locates deltaguard's LogStore jar, carried inside the Python package."""

from __future__ import annotations

from importlib import resources
from importlib.metadata import version
from pathlib import Path

#: The package version (one source: the repository's VERSION file, via the installed metadata);
#: Maven builds the jar under the same version (the Makefile passes it as ``-Drevision``).
VERSION = version("deltaguard")
JAR_NAME = f"deltaguard-logstore-{VERSION}.jar"


class PluginJarMissingError(RuntimeError):
    """The plugin jar was not built into the package."""


def plugin_jar() -> Path:
    """Path of the plugin jar shipped as package data. Raises PluginJarMissingError if absent."""
    jar = Path(str(resources.files(__package__).joinpath("jars", JAR_NAME)))
    if not jar.is_file():
        raise PluginJarMissingError(
            f"deltaguard's LogStore jar is missing at {jar}: build it with `make jar` "
            "(Maven, Java 17), or install a deltaguard wheel, which carries it."
        )
    return jar
