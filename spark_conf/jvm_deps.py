"""The JVM jars Spark needs for Delta on S3, resolved once from Maven Central into a cache.

Contract:
- ``jvm/pom.xml`` beside this module is the single source of truth for the Maven coordinates
  (:func:`maven_coordinates` reads it; presets render them as ``spark.jars.packages``).
- :func:`resolve` runs ``mvn dependency:copy-dependencies`` once per pom content into
  ``$DELTAGUARD_CACHE/jars/<pom hash>/`` and drops every jar whose artifact pyspark already
  ships (a second Hadoop, Jackson or Parquet on the classpath breaks Spark). Re-running it with
  the same pom is a no-op. Maven's own cache (``~/.m2``) makes a fresh resolve cheap.
- :func:`runtime_jars` never downloads: it returns the resolved jars or raises
  :class:`JarsNotResolvedError` saying which command resolves them.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
# Provided by pyspark's jars already, under other artifact names.
_ALSO_PROVIDED_BY_SPARK = {"commons-logging"}
_JAR_NAME = re.compile(r"^(?P<artifact>.+?)-(?P<version>\d[^-]*(?:-[A-Za-z0-9.]+)?)\.jar$")


class JarsNotResolvedError(RuntimeError):
    """The runtime jars are not in the cache yet."""


def cache_dir() -> Path:
    """deltaguard's cache root: ``$DELTAGUARD_CACHE`` or ``~/.cache/deltaguard``."""
    return Path(os.environ.get("DELTAGUARD_CACHE", Path.home() / ".cache" / "deltaguard"))


def pom_path() -> Path:
    return Path(str(resources.files(__package__).joinpath("jvm", "pom.xml")))


def maven_coordinates() -> list[str]:
    """``group:artifact:version`` of every dependency the pom lists, in order."""
    root = ET.parse(pom_path()).getroot()
    coords = []
    for dep in root.iterfind("m:dependencies/m:dependency", _POM_NS):
        parts = [
            dep.findtext(f"m:{tag}", namespaces=_POM_NS)
            for tag in ("groupId", "artifactId", "version")
        ]
        coords.append(":".join(p or "" for p in parts))
    return coords


def _jar_dir() -> Path:
    digest = hashlib.sha256(pom_path().read_bytes()).hexdigest()[:16]
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


def runtime_jars() -> list[Path]:
    """The resolved jars, sorted by name. Raises JarsNotResolvedError if not resolved yet."""
    manifest = _jar_dir() / "MANIFEST"
    if not manifest.is_file():
        raise JarsNotResolvedError(
            f"Spark's Delta/S3 jars are not resolved in {_jar_dir()} yet: run `make jars` "
            "(or `python -m deltaguard.spark_conf.jvm_deps`)."
        )
    jars = [_jar_dir() / line for line in manifest.read_text().split()]
    missing = [str(j) for j in jars if not j.is_file()]
    if missing:
        raise JarsNotResolvedError(
            f"resolved jars missing from the cache: {missing}; run `make jars`"
        )
    return jars


def resolve(mvn: str = "mvn") -> list[Path]:
    """Resolves the jars into the cache if needed (idempotent); returns them."""
    try:
        return runtime_jars()
    except JarsNotResolvedError:
        pass
    target = _jar_dir()
    staging = target.with_name(target.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    cmd = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(pom_path()),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={staging}",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise JarsNotResolvedError(
            f"Maven could not resolve {pom_path()}:\n{result.stdout[-4000:]}{result.stderr[-2000:]}"
        )
    shipped = _spark_shipped_artifacts()
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
    return runtime_jars()


if __name__ == "__main__":
    for jar in resolve():
        print(jar)
    sys.exit(0)
