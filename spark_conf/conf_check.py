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
- ``missing-jar``: a local jar in ``spark.jars`` or an ``extraClassPath`` does not exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from deltaguard.spark_conf.presets import MIN_SAFE_TTL_SECONDS, MULTI_WRITER_BUCKETS_KEY
from deltaguard.spark_conf.session import SINGLE_DRIVER_STORE

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


def check(entries: dict[str, Entry]) -> list[Finding]:
    """Every finding, in line order."""
    findings: list[Finding] = []
    by_plain: dict[str, list[Entry]] = {}
    for entry in entries.values():
        by_plain.setdefault(_unprefixed(entry.key), []).append(entry)

    def value(plain: str) -> Entry | None:
        found = by_plain.get(plain)
        return found[-1] if found else None

    for plain, group in by_plain.items():
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

    class_entry = value("delta.logStore.class")
    scheme_entries = [
        e for p, g in by_plain.items() if re.fullmatch(r"delta\.logStore\.\w+\.impl", p) for e in g
    ]
    if class_entry and scheme_entries:
        findings.append(
            Finding(
                "logstore-conflict",
                class_entry.line,
                class_entry.key,
                f"set together with {scheme_entries[0].key} (line "
                f"{scheme_entries[0].line}); Delta refuses both. Keep only the "
                "scheme stores (spark.delta.logStore.s3a.impl, ...)",
            )
        )

    stores = [e for e in ([class_entry] if class_entry else []) + scheme_entries]
    for store in stores:
        if "DynamoDB" not in store.value:
            continue
        prefix = "io.delta.storage.S3DynamoDBLogStore."
        for setting in ("ddb.tableName", "ddb.region"):
            if value(prefix + setting) is None:
                findings.append(
                    Finding(
                        "dynamodb-incomplete",
                        store.line,
                        store.key,
                        f"{store.value} without spark.{prefix}{setting}: every "
                        "writer must name the same DynamoDB table and region",
                    )
                )
        break
    for plain, group in by_plain.items():
        if plain.startswith(_DYNAMODB_KEY_PREFIXES) and plain.endswith(".ttl"):
            entry = group[-1]
            seconds = re.match(r"^(\d+)\s*(s|sec|seconds)?$", entry.value)
            if seconds is None:
                findings.append(
                    Finding(
                        "ttl-too-low",
                        entry.line,
                        entry.key,
                        f"cannot read {entry.value!r} as seconds",
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

    multi = value(MULTI_WRITER_BUCKETS_KEY[len("spark.") :])
    if multi and multi.value.strip():
        for scheme in ("s3", "s3a"):
            scheme_store = value(f"delta.logStore.{scheme}.impl") or class_entry
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

    for key in ("jars", "driver.extraClassPath", "executor.extraClassPath"):
        jar_entry = value(key)
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
    return sorted(findings, key=lambda f: (f.line, f.code))
