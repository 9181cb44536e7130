"""Locates deltaguard's LogStore jars, carried inside the Python package: one per AWS SDK
generation (see ``deltaguard.spark_conf.spark_lines`` for which Spark line takes which)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

#: The jar of each AWS SDK generation (keys: ``SdkGeneration`` values).
JAR_NAMES: dict[str, str] = {
    "sdk2": "deltaguard-logstore-0.1.0.jar",
    "sdk1": "deltaguard-logstore-sdk1-0.1.0.jar",
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
