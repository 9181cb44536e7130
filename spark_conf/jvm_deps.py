"""The JVM jars Spark needs for Delta on S3, resolved once from Maven Central into a cache.

Contract:
- The Maven coordinates of each Spark line come from the lines table
  (:mod:`deltaguard.spark_conf.spark_lines`); :func:`maven_coordinates` returns them (presets
  render them as ``spark.jars.packages``) and :func:`pom_text` writes them as a Maven pom.
- :func:`resolve` runs ``mvn dependency:copy-dependencies`` once per pom content into
  ``$DELTAGUARD_CACHE/jars/<pom hash>/`` and drops every jar whose artifact the line's pyspark
  already ships (a second Hadoop, Jackson or Parquet on the classpath breaks Spark). Re-running
  it with the same pom is a no-op. Maven's own cache (``~/.m2``) makes a fresh resolve cheap.
- :func:`runtime_jars` never downloads: it returns the resolved jars or raises
  :class:`JarsNotResolvedError` saying which command resolves them. :func:`submit_jars` is
  the part of them a ``spark.jars`` setting carries (presets' ``jars="cache"``).
- Every function defaults to the line of the pyspark this interpreter imports
  (:func:`~deltaguard.spark_conf.spark_lines.installed_line`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from deltaguard.spark_conf.spark_lines import SparkLine, installed_line

# Provided by pyspark's jars already, under other artifact names.
_ALSO_PROVIDED_BY_SPARK = {"commons-logging"}
_JAR_NAME = re.compile(r"^(?P<artifact>.+?)-(?P<version>\d[^-]*(?:-[A-Za-z0-9.]+)?)\.jar$")


class JarsNotResolvedError(RuntimeError):
    """The runtime jars are not in the cache yet."""


def cache_dir() -> Path:
    """deltaguard's cache root: ``$DELTAGUARD_CACHE`` or ``~/.cache/deltaguard``."""
    return Path(os.environ.get("DELTAGUARD_CACHE", Path.home() / ".cache" / "deltaguard"))


def maven_coordinates(line: SparkLine | None = None) -> list[str]:
    """``group:artifact:version`` of every jar ``line`` needs besides pyspark's, in order."""
    return (line or installed_line()).coordinates


def pom_text(line: SparkLine | None = None) -> str:
    """A Maven pom whose dependencies are the line's coordinates; Scala comes from pyspark."""
    line = line or installed_line()
    deps = []
    for coordinate in [*line.coordinates, *line.hadoop_client]:
        group, artifact, version = coordinate.split(":")
        exclusions = ""
        if artifact.startswith("delta-spark"):
            exclusions = (
                "<exclusions><exclusion><groupId>org.scala-lang</groupId>"
                "<artifactId>*</artifactId></exclusion></exclusions>"
            )
        deps.append(
            f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version>{exclusions}</dependency>"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<!-- deltaguard Spark line {line.name}: generated from spark_lines.LINES -->\n"
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>io.deltaguard</groupId>\n"
        f"  <artifactId>deltaguard-spark-{line.name}-runtime-deps</artifactId>\n"
        "  <version>0.1.0</version>\n  <packaging>pom</packaging>\n"
        "  <dependencies>\n" + "\n".join(deps) + "\n  </dependencies>\n</project>\n"
    )


def _jar_dir(line: SparkLine | None = None) -> Path:
    digest = hashlib.sha256(pom_text(line).encode()).hexdigest()[:16]
    return cache_dir() / "jars" / digest


def _spark_shipped_artifacts() -> set[str]:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    names = set()
    for jar in jars.glob("*.jar"):
        match = _JAR_NAME.match(jar.name)
        if match:
            names.add(match.group("artifact"))
    return names | _ALSO_PROVIDED_BY_SPARK


def runtime_jars(line: SparkLine | None = None) -> list[Path]:
    """The resolved jars, sorted by name. Raises JarsNotResolvedError if not resolved yet."""
    line = line or installed_line()
    manifest = _jar_dir(line) / "MANIFEST"
    if not manifest.is_file():
        raise JarsNotResolvedError(
            f"Spark {line.name}'s Delta/S3 jars are not resolved in {_jar_dir(line)} yet: run "
            "`make jars` (or `python -m deltaguard.spark_conf.jvm_deps` with that line's pyspark)."
        )
    jars = [_jar_dir(line) / name for name in manifest.read_text().split()]
    missing = [str(j) for j in jars if not j.is_file()]
    if missing:
        raise JarsNotResolvedError(
            f"resolved jars missing from the cache: {missing}; run `make jars`"
        )
    return jars


def submit_jars(line: SparkLine | None = None) -> list[Path]:
    """The resolved jars a ``spark.jars`` setting adds to a Spark of ``line``: the same set
    ``spark.jars.packages`` with :func:`maven_coordinates` brings, that is :func:`runtime_jars`
    without the Hadoop client jars the test bed puts ahead of a pyspark that ships another
    Hadoop (a cluster of that line runs its own). Raises JarsNotResolvedError."""
    line = line or installed_line()
    own_hadoop = {coordinate.split(":")[1] for coordinate in line.hadoop_client}
    return [
        jar
        for jar in runtime_jars(line)
        if not ((match := _JAR_NAME.match(jar.name)) and match.group("artifact") in own_hadoop)
    ]


def resolve(mvn: str = "mvn") -> list[Path]:
    """Resolves the installed pyspark's line's jars into the cache if needed (idempotent);
    returns them. Runs in the interpreter of that line (it reads pyspark's own jar list)."""
    line = installed_line()
    try:
        return runtime_jars(line)
    except JarsNotResolvedError:
        pass
    target = _jar_dir(line)
    staging = target.with_name(target.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    pom = staging / "pom.xml"
    pom.write_text(pom_text(line))
    cmd = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={staging}",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise JarsNotResolvedError(
            f"Maven could not resolve Spark {line.name}'s jars ({pom}):\n{result.stdout[-4000:]}{result.stderr[-2000:]}"
        )
    # The line's own Hadoop client goes ahead of a pyspark that ships another one.
    shipped = _spark_shipped_artifacts() - {c.split(":")[1] for c in line.hadoop_client}
    kept = []
    for jar in sorted(staging.glob("*.jar")):
        match = _JAR_NAME.match(jar.name)
        if match and match.group("artifact") in shipped:
            jar.unlink()
        else:
            kept.append(jar.name)
    (staging / "MANIFEST").write_text("\n".join(kept) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return runtime_jars(line)


if __name__ == "__main__":
    for jar in resolve():
        print(jar)
    sys.exit(0)
