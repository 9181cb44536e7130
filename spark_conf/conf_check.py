"""``deltaguard conf check``: find unsafe or contradictory Delta/LogStore settings in a Spark
properties file, one finding per problem, each naming the line.

Rules:

- ``logstore-conflict``: ``spark.delta.logStore.class`` and a scheme store
  (``spark.delta.logStore.<scheme>.impl``) are both set (Delta refuses to start).
- ``prefix-mismatch``: a ``spark.``-prefixed key and its unprefixed form disagree (Delta and
  deltaguard read both; Delta throws, deltaguard refuses).
- ``dynamodb-incomplete``: a DynamoDB LogStore without an explicit table name or region: every
  writer must use the same table and region, and implicit defaults hide a mismatch.
- ``ttl-too-low``: the DynamoDB entry TTL is below :data:`MIN_SAFE_TTL_SECONDS`; an entry that
  expires before every writer and reader saw its commit lets a second writer take the version.
- ``single-driver-multi-writer``: the S3 scheme is served by ``S3SingleDriverLogStore``
  (explicitly, or by default) while ``spark.deltaguard.multiWriterBuckets`` marks buckets as
  written by several drivers.
- ``single-driver-store``: a file that reaches S3 (an ``fs.s3a``/``fs.s3`` setting or a store
  for ``s3``/``s3a``) leaves an S3 scheme to ``S3SingleDriverLogStore``, set explicitly or by
  Delta's default for ``s3a://`` when no store is set, without declaring one writer per table
  (``spark.deltaguard.singleDriverPerTable=true``, what the ``s3-single-driver`` preset renders
  with ``--acknowledge-single-driver``): two drivers committing to one table lose commits.
- ``missing-jar``: a local jar in ``spark.jars`` or an ``extraClassPath`` does not exist.
- ``line-mismatch``: the Delta, delta-storage, hadoop-aws, AWS SDK bundle and deltaguard plugin
  jar in ``spark.jars.packages`` / ``spark.jars`` do not belong to one Spark line of
  :data:`~deltaguard.spark_conf.spark_lines.LINES` (e.g. Delta 3.3 with hadoop-aws 3.5.0, or the
  SDK v2 plugin jar with hadoop-aws 3.3.4, whose S3A has no SDK v2 client), or the DynamoDB
  LogStore is set with the SDK v1 plugin jar (which does not carry it), or the Delta artifact is
  built for a Spark no line supports (``delta-spark_4.3_2.13``) or for another Spark than the
  lines that run its Delta, or its Delta minor is no line's (naming the plugin jar in
  ``spark.jars`` that was not built for it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from deltaguard.logstore.jars import JAR_NAMES
from deltaguard.spark_conf.presets import (
    MIN_SAFE_TTL_SECONDS,
    MULTI_WRITER_BUCKETS_KEY,
    SINGLE_DRIVER_KEY,
)
from deltaguard.spark_conf.session import SINGLE_DRIVER_STORE
from deltaguard.spark_conf.spark_lines import (
    LINES,
    NEWEST,
    SPARK_VERSIONS,
    SparkLine,
    lines_of_delta,
    sdk_of_hadoop,
)

_PREFIXED_FAMILIES = ("delta.logStore.", "io.delta.storage.", "deltaguard.logstore.")
_DYNAMODB_KEY_PREFIXES = ("io.delta.storage.S3DynamoDBLogStore.",)


@dataclass(frozen=True)
class Finding:
    code: str
    line: int
    key: str
    message: str

    def format(self, path: str) -> str:
        return f"{path}:{self.line}: {self.code}: {self.key}: {self.message}"


#: ``conf check --json``'s ``schema`` (docs/design/logstore.md).
CONF_CHECK_SCHEMA = "deltaguard.conf-check/1"


def findings_json(files: list[str], found: list[tuple[str, Finding]]) -> dict[str, object]:
    """``conf check --json``: the files checked and one object per finding (the text
    output's ``file:line: code: key: message``, as fields)."""
    return {
        "schema": CONF_CHECK_SCHEMA,
        "files": files,
        "ok": not found,
        "findings": [
            {"file": path, "line": f.line, "code": f.code, "key": f.key, "message": f.message}
            for path, f in found
        ],
    }


@dataclass(frozen=True)
class Entry:
    key: str
    value: str
    line: int


def parse_properties(text: str) -> dict[str, Entry]:
    """Java-properties parsing as spark-submit does it (``=``, ``:`` or whitespace separate key
    and value; ``#``/``!`` comments; trailing ``\\`` continues a line). Later keys win."""
    entries: dict[str, Entry] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        logical = lines[i].strip()
        while logical.endswith("\\") and i + 1 < len(lines):
            i += 1
            logical = logical[:-1] + lines[i].strip()
        i += 1
        if not logical or logical[0] in "#!":
            continue
        match = re.match(r"^((?:\\.|[^=:\s])+)\s*[=:\s]\s*(.*)$", logical)
        key, value = (match.group(1), match.group(2)) if match else (logical, "")
        entries[key] = Entry(key, value.strip(), start + 1)
    return entries


def _unprefixed(key: str) -> str:
    return key[len("spark.") :] if key.startswith("spark.") else key


@dataclass(frozen=True)
class _Settings:
    """A properties file as the rules read it: each key by its unprefixed form (``spark.x``
    and ``x`` are one setting), and the LogStores it configures."""

    by_plain: dict[str, list[Entry]]
    #: ``spark.delta.logStore.class``, if set.
    class_entry: Entry | None
    #: Every ``spark.delta.logStore.<scheme>.impl``.
    scheme_entries: list[Entry]

    @classmethod
    def of(cls, entries: dict[str, Entry]) -> _Settings:
        by_plain: dict[str, list[Entry]] = {}
        for entry in entries.values():
            by_plain.setdefault(_unprefixed(entry.key), []).append(entry)
        found = by_plain.get("delta.logStore.class")
        scheme_entries = [
            e
            for p, g in by_plain.items()
            if re.fullmatch(r"delta\.logStore\.\w+\.impl", p)
            for e in g
        ]
        return cls(by_plain, found[-1] if found else None, scheme_entries)

    def value(self, plain: str) -> Entry | None:
        """The entry that wins for the unprefixed key ``plain`` (the last one), if any."""
        found = self.by_plain.get(plain)
        return found[-1] if found else None

    @property
    def stores(self) -> list[Entry]:
        """The LogStore settings: the class, then the scheme stores."""
        return ([self.class_entry] if self.class_entry else []) + self.scheme_entries


def check(entries: dict[str, Entry]) -> list[Finding]:
    """Every finding, in line order."""
    settings = _Settings.of(entries)
    findings = [
        *_prefix_mismatches(settings),
        *_logstore_conflict(settings),
        *_dynamodb_incomplete(settings),
        *_ttl_too_low(settings),
        *_single_driver_multi_writer(settings),
        *_single_driver_store(settings),
        *_missing_jars(settings),
        *_line_findings(settings.value, settings.stores),
    ]
    return sorted(findings, key=lambda f: (f.line, f.code))


def _prefix_mismatches(settings: _Settings) -> list[Finding]:
    """``prefix-mismatch``: a prefixed key and its unprefixed form disagree."""
    findings = []
    for plain, group in settings.by_plain.items():
        if plain.startswith(_PREFIXED_FAMILIES) and len({e.value for e in group}) > 1:
            first, second = group[0], group[1]
            findings.append(
                Finding(
                    "prefix-mismatch",
                    second.line,
                    second.key,
                    f"{first.key}={first.value} (line {first.line}) but "
                    f"{second.key}={second.value}",
                )
            )
    return findings


def _logstore_conflict(settings: _Settings) -> list[Finding]:
    """``logstore-conflict``: the class and a scheme store are both set."""
    class_entry, scheme_entries = settings.class_entry, settings.scheme_entries
    if not (class_entry and scheme_entries):
        return []
    return [
        Finding(
            "logstore-conflict",
            class_entry.line,
            class_entry.key,
            f"set together with {scheme_entries[0].key} (line "
            f"{scheme_entries[0].line}); Delta refuses both. Keep only the "
            "scheme stores (spark.delta.logStore.s3a.impl, ...)",
        )
    ]


def _dynamodb_incomplete(settings: _Settings) -> list[Finding]:
    """``dynamodb-incomplete``: the first DynamoDB store without an explicit table or region."""
    store = next((s for s in settings.stores if "DynamoDB" in s.value), None)
    if store is None:
        return []
    prefix = "io.delta.storage.S3DynamoDBLogStore."
    return [
        Finding(
            "dynamodb-incomplete",
            store.line,
            store.key,
            f"{store.value} without spark.{prefix}{setting}: every "
            "writer must name the same DynamoDB table and region",
        )
        for setting in ("ddb.tableName", "ddb.region")
        if settings.value(prefix + setting) is None
    ]


def _ttl_too_low(settings: _Settings) -> list[Finding]:
    """``ttl-too-low``: a DynamoDB entry TTL that is unreadable or below the safe floor."""
    findings = []
    for plain, group in settings.by_plain.items():
        if not (plain.startswith(_DYNAMODB_KEY_PREFIXES) and plain.endswith(".ttl")):
            continue
        entry = group[-1]
        seconds = re.match(r"^(\d+)\s*(s|sec|seconds)?$", entry.value)
        if seconds is None:
            findings.append(
                Finding(
                    "ttl-too-low", entry.line, entry.key, f"cannot read {entry.value!r} as seconds"
                )
            )
        elif int(seconds.group(1)) < MIN_SAFE_TTL_SECONDS:
            findings.append(
                Finding(
                    "ttl-too-low",
                    entry.line,
                    entry.key,
                    f"{entry.value} s is below the safe floor of "
                    f"{MIN_SAFE_TTL_SECONDS} s: an entry that expires before "
                    "its commit is everywhere visible can let a second writer "
                    "take the same version (data loss)",
                )
            )
    return findings


def _single_driver_multi_writer(settings: _Settings) -> list[Finding]:
    """``single-driver-multi-writer``: buckets marked multi-writer on a scheme that
    ``S3SingleDriverLogStore`` serves (explicitly or by Delta's default)."""
    multi = settings.value(MULTI_WRITER_BUCKETS_KEY[len("spark.") :])
    if not (multi and multi.value.strip()):
        return []
    findings = []
    for scheme in ("s3", "s3a"):
        scheme_store = settings.value(f"delta.logStore.{scheme}.impl") or settings.class_entry
        if scheme_store is None or scheme_store.value == SINGLE_DRIVER_STORE:
            line = scheme_store.line if scheme_store else multi.line
            key = scheme_store.key if scheme_store else multi.key
            findings.append(
                Finding(
                    "single-driver-multi-writer",
                    line,
                    key,
                    f"{scheme}:// is served by S3SingleDriverLogStore"
                    f"{'' if scheme_store else ' (Delta default)'} but buckets "
                    f"{multi.value} are marked multi-writer: concurrent drivers "
                    "would lose commits",
                )
            )
    return findings


def _single_driver_store(settings: _Settings) -> list[Finding]:
    """``single-driver-store`` (see the module docstring); left to
    ``single-driver-multi-writer`` when buckets are marked multi-writer."""
    multi = settings.value(MULTI_WRITER_BUCKETS_KEY[len("spark.") :])
    declared = settings.value(SINGLE_DRIVER_KEY[len("spark.") :])
    if (multi and multi.value.strip()) or (declared and declared.value.lower() == "true"):
        return []
    s3_keys = [
        e
        for plain, group in settings.by_plain.items()
        if plain.startswith(("hadoop.fs.s3a.", "hadoop.fs.s3."))
        for e in group
    ]
    scheme_stores = {s: settings.value(f"delta.logStore.{s}.impl") for s in ("s3", "s3a")}
    class_store = settings.class_entry
    single_class = class_store is not None and class_store.value == SINGLE_DRIVER_STORE
    if not s3_keys and not any(scheme_stores.values()) and not single_class:
        return []
    why = (
        "two drivers committing to one table at once overwrite each other's commits: use "
        "s3-conditional, or declare one driver per table with "
        f"{SINGLE_DRIVER_KEY}=true (deltaguard conf render s3-single-driver "
        "--acknowledge-single-driver)"
    )
    findings = []
    for scheme, store in scheme_stores.items():
        store = store or settings.class_entry
        if store is not None and store.value == SINGLE_DRIVER_STORE:
            findings.append(
                Finding(
                    "single-driver-store",
                    store.line,
                    store.key,
                    f"{scheme}:// is served by S3SingleDriverLogStore: {why}",
                )
            )
        elif store is None and scheme == "s3a":
            anchors = [*s3_keys, *filter(None, scheme_stores.values())]
            first = min(anchors, key=lambda e: e.line)
            findings.append(
                Finding(
                    "single-driver-store",
                    first.line,
                    "spark.delta.logStore.s3a.impl",
                    "no LogStore is set for s3a://, so Delta's default S3SingleDriverLogStore "
                    f"serves it: {why}",
                )
            )
    return findings


def _missing_jars(settings: _Settings) -> list[Finding]:
    """``missing-jar``: a local jar in ``spark.jars`` or an ``extraClassPath`` that does not
    exist (remote jars are the cluster's business; globs are not checked)."""
    findings = []
    for key in ("jars", "driver.extraClassPath", "executor.extraClassPath"):
        jar_entry = settings.value(key)
        if jar_entry is None:
            continue
        separator = "," if key == "jars" else ":"
        for item in filter(None, (p.strip() for p in jar_entry.value.split(separator))):
            local = item[len("file:") :] if item.startswith("file:") else item
            if "://" in item and not item.startswith("file:"):
                continue  # remote jars are the cluster's business
            if "*" not in local and not Path(local).exists():
                findings.append(
                    Finding("missing-jar", jar_entry.line, jar_entry.key, f"{local} does not exist")
                )
    return findings


def _artifact_spark(artifact: str) -> str | None:
    """The Spark line a Delta artifact names (``delta-spark_4.1_2.13`` is for Spark 4.1), or
    None for Delta's unsuffixed artifacts (``delta-spark_2.13``)."""
    match = re.fullmatch(r"delta-spark_(\d+\.\d+)_\d+\.\d+", artifact)
    return match.group(1) if match else None


def _supported() -> str:
    """``3.3.3 (Spark 3.5), 4.4.0 (Spark 4.0, 4.1, 4.2)``."""
    by_delta: dict[str, list[str]] = {}
    for line in LINES:
        by_delta.setdefault(line.delta, [])
        if line.spark not in by_delta[line.delta]:
            by_delta[line.delta].append(line.spark)
    return ", ".join(f"{d} (Spark {', '.join(sparks)})" for d, sparks in by_delta.items())


def _package_versions(packages: Entry | None) -> dict[str, str]:
    """``group:artifact`` -> version of each coordinate in ``spark.jars.packages``."""
    versions: dict[str, str] = {}
    for coordinate in packages.value.split(",") if packages else []:
        parts = coordinate.strip().split(":")
        if len(parts) >= 3:
            versions[f"{parts[0]}:{parts[1]}"] = parts[-1]
    return versions


def _plugin_sdk(jars: Entry | None) -> str | None:
    """The AWS SDK generation of the deltaguard plugin jar ``spark.jars`` names, if any."""
    found = None
    for sdk, name in JAR_NAMES.items():
        if jars and any(Path(j.strip()).name == name for j in jars.value.split(",")):
            found = sdk
    return found


Problems = list[tuple[Entry, str]]


def _delta_problems(
    packages: Entry, artifact: str, delta: str, versions: dict[str, str], ours: str
) -> tuple[Problems, list[SparkLine]]:
    """The problems of the Delta coordinates (Spark line, Scala, delta-storage, hadoop-aws)
    and the lines they fit."""
    same_delta = lines_of_delta(delta)
    built_for = _artifact_spark(artifact)
    lines = [
        line
        for line in same_delta
        if artifact.endswith("_" + line.scala) and built_for in (None, line.spark)
    ]
    problems: Problems = []
    if built_for is not None and built_for not in SPARK_VERSIONS:
        problems.append(
            (
                packages,
                f"{artifact}:{delta} is Delta for Spark {built_for}, which no deltaguard line "
                f"supports; {ours}the newest supported line is Spark {NEWEST.spark} "
                f"({NEWEST.delta_artifact}:{NEWEST.delta})",
            )
        )
    elif not same_delta:
        problems.append(
            (packages, f"Delta {delta} is not a supported line; {ours}supported: {_supported()}")
        )
    elif built_for is not None and not lines:
        problems.append(
            (
                packages,
                f"{artifact}:{delta} is Delta for Spark {built_for}, but deltaguard's lines "
                f"run Delta {delta} on Spark "
                f"{', '.join(line.spark for line in same_delta)}; {ours}supported: "
                f"{_supported()}",
            )
        )
    elif not lines:
        problems.append(
            (
                packages,
                f"{artifact}:{delta} is built for another Scala than Spark "
                f"{same_delta[0].spark} (Scala {same_delta[0].scala})",
            )
        )
    storage = versions.get("io.delta:delta-storage")
    if storage and storage != delta:
        problems.append(
            (packages, f"delta-storage {storage} with {artifact} {delta}: they must match")
        )
    return problems, lines


def _hadoop_problems(
    packages: Entry, jars: Entry | None, hadoop_aws: str, bundle: str | None, plugin_sdk: str | None
) -> Problems:
    """A second AWS SDK next to hadoop-aws's, and a plugin jar of the other SDK generation."""
    problems: Problems = []
    matching = [line for line in LINES if line.hadoop == hadoop_aws]
    if bundle and matching and bundle not in {line.sdk_bundle for line in matching}:
        problems.append(
            (
                packages,
                f"{bundle} with hadoop-aws {hadoop_aws}, which is built with "
                f"{matching[0].sdk_bundle}: a second AWS SDK breaks S3A",
            )
        )
    if jars and plugin_sdk and plugin_sdk != sdk_of_hadoop(hadoop_aws).value:
        right = JAR_NAMES[sdk_of_hadoop(hadoop_aws).value]
        problems.append(
            (
                jars,
                f"{JAR_NAMES[plugin_sdk]} is built for AWS SDK {plugin_sdk[-1]}, but "
                f"hadoop-aws {hadoop_aws} runs SDK {sdk_of_hadoop(hadoop_aws).value[-1]}: "
                f"use {right} (deltaguard jar --spark-version ...)",
            )
        )
    return problems


def _sdk1_dynamodb_problems(stores: list[Entry]) -> Problems:
    """A deltaguard DynamoDB store named with the AWS SDK v1 jar, which has none."""
    for store in stores:
        if "DynamoDB" in store.value and store.value.startswith("io.deltaguard."):
            return [
                (
                    store,
                    f"{store.value} is not in {JAR_NAMES['sdk1']} (AWS SDK v1 lines have "
                    "no deltaguard DynamoDB LogStore); use s3-conditional",
                )
            ]
    return []


def _line_findings(value: Callable[[str], Entry | None], stores: list[Entry]) -> list[Finding]:
    """``line-mismatch`` findings: the coordinates and plugin jar must be one line's."""
    packages = value("jars.packages")
    jars = value("jars")
    versions = _package_versions(packages)
    delta_spark = next(
        ((k.split(":")[1], v) for k, v in versions.items() if k.startswith("io.delta:delta-spark")),
        None,
    )
    hadoop_aws = versions.get("org.apache.hadoop:hadoop-aws")
    bundles = ("com.amazonaws:aws-java-sdk-bundle", "software.amazon.awssdk:bundle")
    bundle = next((f"{k}:{v}" for k, v in versions.items() if k in bundles), None)
    plugin_sdk = _plugin_sdk(jars)
    problems: Problems = []
    if packages and delta_spark:
        artifact, delta = delta_spark
        ours = f"{JAR_NAMES[plugin_sdk]} is not built for it; " if plugin_sdk else ""
        found, lines = _delta_problems(packages, artifact, delta, versions, ours)
        problems += found
        if lines and hadoop_aws and not [line for line in lines if line.hadoop == hadoop_aws]:
            allowed = " or ".join(line.hadoop for line in lines)
            problems.append(
                (
                    packages,
                    f"hadoop-aws {hadoop_aws} with Delta {delta}: Spark {lines[0].spark} runs "
                    f"hadoop-aws {allowed} (hadoop-aws must match the Hadoop of the Spark line)",
                )
            )
    if packages and hadoop_aws:
        problems += _hadoop_problems(packages, jars, hadoop_aws, bundle, plugin_sdk)
    if jars and plugin_sdk == "sdk1":
        problems += _sdk1_dynamodb_problems(stores)
    return [Finding("line-mismatch", e.line, e.key, message) for e, message in problems]
