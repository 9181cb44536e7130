"""The Spark lines deltaguard supports: the one table of which Delta, hadoop-aws, AWS SDK and
plugin jar belong together (presets, ``deltaguard packages``, ``conf check``, the runtime-jar
cache and the per-line test bed all read it).

A line is a Spark minor version plus the Hadoop its S3A comes from: the Hadoop decides the AWS
SDK generation (hadoop-aws 3.3.x is SDK v1, 3.4+ is SDK v2), and that decides the plugin jar.
Spark 3.5 has two: pyspark's own Hadoop 3.3.4, and Hadoop 3.4.1 builds (e.g. vendor Spark 3.5
distributions on Hadoop 3.4).

:func:`line_for` picks a line from a Spark version (``"3.5"``, ``"3.5.4"``) and optionally a
Hadoop version; :func:`installed_line` is the line of the pyspark this interpreter imports, or
the newest line when there is none.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from importlib import metadata
from pathlib import Path

#: A file in a virtualenv's root naming its line, for a pyspark run on another Hadoop than the
#: one it ships (the test bed's ``3.5-hadoop3.4``: Hadoop 3.4.1 jars ahead of pyspark's).
LINE_MARKER = "deltaguard-spark-line"


class SdkGeneration(StrEnum):
    """The AWS SDK generation of S3A, and so of deltaguard's plugin jar."""

    V1 = "sdk1"
    V2 = "sdk2"


class UnknownSparkLineError(ValueError):
    """No supported line matches the asked Spark/Hadoop versions; the message lists them."""


@dataclass(frozen=True)
class SparkLine:
    """One supported combination. Versions are Maven (JVM) versions unless named ``pip``."""

    #: The line's name: the Spark minor version, plus ``-hadoop3.4`` for the second 3.5 line.
    name: str
    spark: str
    scala: str
    #: pip requirements of the line's test bed (pyspark and Delta's Python package).
    pip: tuple[str, ...]
    delta: str
    delta_artifact: str
    #: The Hadoop S3A must match (hadoop-aws == the cluster's hadoop-client version).
    hadoop: str
    sdk: SdkGeneration
    #: The AWS SDK bundle hadoop-aws depends on (``group:artifact:version``).
    sdk_bundle: str
    #: True when pyspark's own jars carry this Hadoop (so the line runs from a pip install).
    pip_hadoop: bool = True

    @property
    def coordinates(self) -> list[str]:
        """Maven coordinates Spark needs besides its own jars (``spark.jars.packages``)."""
        return [
            f"io.delta:{self.delta_artifact}:{self.delta}",
            f"io.delta:delta-storage:{self.delta}",
            f"org.apache.hadoop:hadoop-aws:{self.hadoop}",
            self.sdk_bundle,
        ]

    @property
    def hadoop_client(self) -> list[str]:
        """The Hadoop client jars to put ahead of pyspark's when pyspark ships another Hadoop
        (empty when it ships this line's)."""
        if self.pip_hadoop:
            return []
        return [
            f"org.apache.hadoop:hadoop-client-api:{self.hadoop}",
            f"org.apache.hadoop:hadoop-client-runtime:{self.hadoop}",
        ]

    @property
    def has_dynamodb_store(self) -> bool:
        """deltaguard's DynamoDB LogStore needs the SDK v2 DynamoDB client."""
        return self.sdk is SdkGeneration.V2


#: Delta's newest JVM release on Maven Central for Spark 4.x. Delta 4.4.1 (October 2026) is on
#: PyPI only: Maven Central serves no 4.4.1 artifact (delta-storage, delta-spark_2.13 and the
#: _4.x_2.13 builds all 404; checked 2026-11-27), so the 4.x lines run Delta 4.4.0's jars next to
#: the delta-spark 4.4.1 Python package (which pins pyspark >=4.0.1,<=4.2.0).
DELTA_4_JVM = "4.4.0"
DELTA_4_PIP = "delta-spark==4.4.1"

LINES: tuple[SparkLine, ...] = (
    SparkLine(
        name="3.5",
        spark="3.5",
        scala="2.12",
        pip=("pyspark>=3.5.3,<3.6", "delta-spark==3.3.3"),
        delta="3.3.3",
        delta_artifact="delta-spark_2.12",
        hadoop="3.3.4",
        sdk=SdkGeneration.V1,
        sdk_bundle="com.amazonaws:aws-java-sdk-bundle:1.12.262",
    ),
    SparkLine(
        name="3.5-hadoop3.4",
        spark="3.5",
        scala="2.12",
        pip=("pyspark>=3.5.3,<3.6", "delta-spark==3.3.3"),
        delta="3.3.3",
        delta_artifact="delta-spark_2.12",
        hadoop="3.4.1",
        sdk=SdkGeneration.V2,
        sdk_bundle="software.amazon.awssdk:bundle:2.24.6",
        pip_hadoop=False,
    ),
    SparkLine(
        # Delta 4.4's build for Spark 4.0, not Delta 4.0.1: `pip install delta-spark` next to
        # pyspark 4.0 resolves 4.4.1, whose configure_spark_with_delta_pip asks for
        # delta-spark_4.0_2.13 of its own version (docs/guides/commit-path.md, "Which Delta on Spark 4.0").
        name="4.0",
        spark="4.0",
        scala="2.13",
        pip=("pyspark>=4.0.1,<4.1", DELTA_4_PIP),
        delta=DELTA_4_JVM,
        delta_artifact="delta-spark_4.0_2.13",
        hadoop="3.4.1",
        sdk=SdkGeneration.V2,
        sdk_bundle="software.amazon.awssdk:bundle:2.24.6",
    ),
    SparkLine(
        name="4.1",
        spark="4.1",
        scala="2.13",
        pip=("pyspark>=4.1.0,<4.2", DELTA_4_PIP),
        delta=DELTA_4_JVM,
        delta_artifact="delta-spark_4.1_2.13",
        hadoop="3.4.2",
        sdk=SdkGeneration.V2,
        sdk_bundle="software.amazon.awssdk:bundle:2.29.52",
    ),
    SparkLine(
        name="4.2",
        spark="4.2",
        scala="2.13",
        pip=("pyspark==4.2.0", DELTA_4_PIP),
        delta=DELTA_4_JVM,
        delta_artifact="delta-spark_4.2_2.13",
        hadoop="3.5.0",
        sdk=SdkGeneration.V2,
        sdk_bundle="software.amazon.awssdk:bundle:2.35.4",
    ),
)

SPARK_VERSIONS: tuple[str, ...] = tuple(dict.fromkeys(line.spark for line in LINES))
NEWEST: SparkLine = LINES[-1]


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def by_name(name: str) -> SparkLine:
    for line in LINES:
        if line.name == name:
            return line
    raise UnknownSparkLineError(
        f"unknown Spark line {name!r}; supported: {', '.join(line.name for line in LINES)}"
    )


def _numbers(version: str, parts: int = 3) -> tuple[int, ...]:
    """``"4.3.0"`` -> ``(4, 3)`` for ``parts=2``; ``()`` if it is not numeric."""
    try:
        return tuple(int(p) for p in version.split(".")[:parts])
    except ValueError:
        return ()


def _unsupported(spark_version: str) -> str:
    """One line: why no line fits ``spark_version``, naming the newest supported line."""
    asked = _numbers(spark_version, 2)
    if not asked:
        why = "is not a Spark version"
    elif asked > _numbers(NEWEST.spark, 2):
        why = "is not supported: no Delta release supports it yet"
    else:
        why = "is not a supported line"
    return (
        f"Spark {spark_version} {why}; the newest supported line is Spark {NEWEST.spark} "
        f"(Delta {NEWEST.delta}, hadoop-aws {NEWEST.hadoop}); supported: "
        f"{', '.join(SPARK_VERSIONS)}"
    )


def line_for(spark_version: str, hadoop_version: str | None = None) -> SparkLine:
    """The line for Spark ``spark_version`` (any patch level) on Hadoop ``hadoop_version``
    (default: the Hadoop pyspark ships for that Spark). Raises UnknownSparkLineError, whose
    message is one line naming the newest supported line."""
    spark = _minor(spark_version)
    candidates = [line for line in LINES if line.spark == spark]
    if not candidates:
        raise UnknownSparkLineError(_unsupported(spark_version))
    if hadoop_version is None:
        return next(line for line in candidates if line.pip_hadoop)
    for line in candidates:
        if _minor(line.hadoop) == _minor(hadoop_version):
            return line
    raise UnknownSparkLineError(
        f"Spark {spark} with Hadoop {hadoop_version} is not a supported line; Spark {spark} "
        f"runs with hadoop-aws {' or '.join(line.hadoop for line in candidates)}"
    )


def installed_pyspark() -> str | None:
    """The version of the pyspark this interpreter would import, or None."""
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return None


def installed_line() -> SparkLine:
    """The line this interpreter runs: the one its virtualenv names (:data:`LINE_MARKER`), else
    the installed pyspark's (with the Hadoop it ships), else the newest line. Raises
    UnknownSparkLineError when the installed pyspark is of no supported line (e.g. 4.3)."""
    marker = Path(sys.prefix) / LINE_MARKER
    if marker.is_file():
        return by_name(marker.read_text().strip())
    version = installed_pyspark()
    if version is None:
        return NEWEST
    try:
        return line_for(version)
    except UnknownSparkLineError as exc:
        raise UnknownSparkLineError(f"the installed pyspark: {exc}") from None


def lines_of_delta(delta_version: str) -> list[SparkLine]:
    """The lines whose Delta has the same minor version as ``delta_version``."""
    return [line for line in LINES if _minor(line.delta) == _minor(delta_version)]


def sdk_of_hadoop(hadoop_version: str) -> SdkGeneration:
    """hadoop-aws 3.3.x and older are SDK v1; 3.4.0 and later SDK v2 (HADOOP-18820)."""
    major, minor = (int(p) for p in hadoop_version.split(".")[:2])
    return SdkGeneration.V1 if (major, minor) < (3, 4) else SdkGeneration.V2


def storage_builds() -> list[tuple[str, str]]:
    """Each (plugin jar's SDK generation, delta-storage version) some line runs together: the
    builds ``make test-java`` compiles beyond the shipped ones (which use the oldest)."""
    oldest = min((line.delta for line in LINES), key=_numbers)
    return list(dict.fromkeys((ln.sdk.value, ln.delta) for ln in LINES if ln.delta != oldest))


if __name__ == "__main__":
    if sys.argv[1:] != ["storage-builds"]:
        sys.exit("usage: python -m deltaguard.spark_conf.spark_lines storage-builds")
    for sdk, delta in storage_builds():
        print(sdk, delta)
