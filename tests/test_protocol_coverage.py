"""The whole Delta protocol, not a snapshot of it: every table feature of Delta 4.4 /
delta-kernel 4.4 is known (both directions: every name here is Delta's, and every feature the
Delta 4.4.0 jars list is here, with its kind), deletion vectors outside the table root are checked, Hadoop
checksums in ``_delta_log`` have their own orphans reason, ``_staged_commits/`` is understood,
and an old ``metaData`` without ``schemaString`` is an incomplete action, not damage."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
import zipfile
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
import pytest
from click.testing import CliRunner

from deltaguard.localstack.synthetic_table import ADD, SyntheticTable
from deltaguard.spark_conf.jvm_deps import runtime_jars
from deltaguard.tools.cli import main
from deltaguard.tools.commands.audit import audit_exit_code
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.deltalog.features import (
    FEATURES,
    READER_FEATURES,
    FeatureKind,
    Support,
    feature,
)
from deltaguard.tools.orphans import scan

DAY = 86_400_000
NOW = int(time.time() * 1000)
#: Where Delta 4.4.0 defines its feature names (Spark connector, kernel).
_FEATURE_CLASS_DIRS = ("org/apache/spark/sql/delta/", "io/delta/kernel/internal/tablefeatures/")


def _utf8_constant(name: str) -> bytes:
    """A class file's constant-pool entry for the string ``name`` (tag 1, u2 length)."""
    raw = name.encode()
    return b"\x01" + len(raw).to_bytes(2, "big") + raw


def _delta_feature_classes() -> list[bytes]:
    jars = [j for j in runtime_jars() if j.name.startswith(("delta-spark_", "delta-kernel-api-"))]
    assert len(jars) == 2, f"Delta 4.4 spark and kernel jars not among {runtime_jars()}"
    classes = []
    for jar in jars:
        with zipfile.ZipFile(jar) as z:
            for entry in z.namelist():
                if entry.startswith(_FEATURE_CLASS_DIRS) and "Feature" in entry.rpartition("/")[2]:
                    classes.append(z.read(entry))
    return classes


def test_every_feature_name_is_a_delta_4_4_feature():
    classes = _delta_feature_classes()
    unknown = [n for n in FEATURES if not any(_utf8_constant(n) in c for c in classes)]
    assert unknown == [], f"not feature names in Delta 4.4.0: {unknown}"
    for name in ("collations", "materializePartitionColumns", "geospatial", "catalogManaged"):
        assert name in FEATURES
    assert "collations" not in READER_FEATURES  # a writer feature
    assert FEATURES["catalogManaged"].support is Support.REFUSED
    assert all(FEATURES[n].kind is FeatureKind.READER_WRITER for n in READER_FEATURES)


#: Prints Delta 4.4.0's own feature lists, as the jars define them at run time: the Spark
#: connector's ``TableFeature.allSupportedFeaturesMap`` (test-only features are in it only
#: under Delta's test mode, which is off here) and delta-kernel's ``TableFeatures.TABLE_FEATURES``;
#: one line ``<source> <name> <rw|w>`` per feature.
_FEATURE_LISTER = """
public class DeltaFeatureList {
  public static void main(String[] args) {
    scala.collection.Iterator<org.apache.spark.sql.delta.TableFeature> spark =
        org.apache.spark.sql.delta.TableFeature$.MODULE$.allSupportedFeaturesMap()
            .values().iterator();
    while (spark.hasNext()) {
      org.apache.spark.sql.delta.TableFeature f = spark.next();
      System.out.println("spark " + f.name() + " " + (f.isReaderWriterFeature() ? "rw" : "w"));
    }
    for (io.delta.kernel.internal.tablefeatures.TableFeature f :
        io.delta.kernel.internal.tablefeatures.TableFeatures.TABLE_FEATURES) {
      System.out.println(
          "kernel " + f.featureName() + " " + (f.isReaderWriterFeature() ? "rw" : "w"));
    }
  }
}
"""


def _delta_feature_list(tmp_path: Path) -> set[tuple[str, str, FeatureKind]]:
    """(source, name, kind) of every feature Delta 4.4.0's Spark connector and kernel list,
    read by running the cached jars (Java's single-file source launcher, no build step)."""
    source = tmp_path / "DeltaFeatureList.java"
    source.write_text(_FEATURE_LISTER)
    classpath = [str(j) for j in runtime_jars()] + [
        str(Path(pyspark.__file__).parent / "jars" / "*")
    ]
    out = subprocess.run(
        # C1 only and the serial collector: a one-shot listing, twice as fast to start.
        [
            "java",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-cp",
            os.pathsep.join(classpath),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    kinds = {"rw": FeatureKind.READER_WRITER, "w": FeatureKind.WRITER}
    listed = set()
    for line in out.stdout.splitlines():
        where, name, kind = line.split()
        listed.add((where, name, kinds[kind]))
    return listed


def test_every_delta_4_4_feature_is_known_with_its_kind(tmp_path):
    """The other direction: a feature Delta 4.4.0 lists and the audit does not know would be
    refused (a reader feature) or only warned about; each is in FEATURES, with Delta's kind."""
    listed = _delta_feature_list(tmp_path)
    sources = {where for where, _, _ in listed}
    assert sources == {"spark", "kernel"}, f"a feature list came back empty: {sorted(listed)}"
    assert len(listed) > 50
    unknown = sorted(f"{where}: {name}" for where, name, _ in listed if name not in FEATURES)
    assert unknown == [], f"Delta 4.4.0 features missing from features.FEATURES: {unknown}"
    other_kind = sorted(
        f"{where}: {name} is {kind}, FEATURES says {FEATURES[name].kind}"
        for where, name, kind in listed
        if FEATURES[name].kind is not kind
    )
    assert other_kind == []


def _table(root: Path) -> SyntheticTable:
    t = SyntheticTable(root)
    t.create(NOW - 10 * DAY)
    size = t.write_parquet("p=a/f.parquet", NOW - 9 * DAY, [1])
    t.commit([{"add": t.add_action("p=a/f.parquet", NOW - 9 * DAY, size=size)}], NOW - 9 * DAY)
    return t


def _audit(table: Path, *extra: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["audit", str(table), "--json", *extra])
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else {}


def test_table_using_new_features_audits_healthy(tmp_path):
    t = _table(tmp_path / "t")
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors", "geospatial", "variantShredding"],
        "writerFeatures": [
            "deletionVectors",
            "geospatial",
            "variantShredding",
            "collations",
            "domainMetadata",
            "materializePartitionColumns",
            "icebergWriterCompatV3",
        ],
    }
    t.commit([{"protocol": protocol}], NOW - 8 * DAY)
    code, doc = _audit(t.root)
    assert code == 0, doc
    assert doc["healthy"] is True and doc["findings"] == []


@pytest.mark.parametrize(
    "name", ["adaptiveMetadata-preview", "coordinatedCommits-preview", "catalogOwned-preview"]
)
def test_tables_a_listing_cannot_serve_are_refused(tmp_path, name):
    t = _table(tmp_path / "t")
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7, "writerFeatures": [name]}
    found = feature(name)
    assert found is not None and found.support is Support.REFUSED
    if found.kind is FeatureKind.READER_WRITER:
        protocol["readerFeatures"] = [name]
    t.commit([{"protocol": protocol}], NOW - 8 * DAY)
    result = CliRunner().invoke(main, ["audit", str(t.root)])
    assert result.exit_code == 2 and name in result.stderr


def _p_dv(location: Path) -> dict:
    return {
        "storageType": "p",
        "pathOrInlineDv": quote(f"file://{location}", safe="/:"),
        "offset": 1,
        "sizeInBytes": 36,
        "cardinality": 2,
    }


def test_absolute_dv_outside_the_root_is_checked(tmp_path):
    t = _table(tmp_path / "t")
    elsewhere = tmp_path / "shared dvs" / "dv-1.bin"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(b"x" * 40)
    size = t.write_parquet("p=a/g.parquet", NOW - 8 * DAY, [2])
    add = t.add_action("p=a/g.parquet", NOW - 8 * DAY, dv=_p_dv(elsewhere), size=size)
    t.commit([{"add": add}], NOW - 8 * DAY)
    report = audit_table(str(t.root))
    external = [f for f in report.findings if f.code == "external-file"]
    assert len(external) == 1 and str(elsewhere) in external[0].message
    assert "exists" in external[0].message and audit_exit_code(report) == 0
    assert report.summary["external_dv_files"] == 1
    elsewhere.unlink()
    report = audit_table(str(t.root))
    (missing,) = [f for f in report.findings if f.code == "missing-dv-file"]
    assert str(elsewhere) in missing.message and audit_exit_code(report) == 1
    assert CliRunner().invoke(main, ["audit", str(t.root)]).exit_code == 1


def _sidecar_checkpoint(t: SyntheticTable, sidecar: str) -> None:
    """A V2 JSON checkpoint of the current version whose adds live in one sidecar."""
    side_dir = t.log / "_sidecars"
    side_dir.mkdir(exist_ok=True)
    rows = [
        {"add": {**a, "partitionValues": list(a["partitionValues"].items())}}
        for a in t.live.values()
    ]
    pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema([("add", ADD)])), side_dir / sidecar)
    size = (side_dir / sidecar).stat().st_size
    lines = [
        {"checkpointMetadata": {"version": t.version}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": t._metadata()},
        {"sidecar": {"path": sidecar, "sizeInBytes": size, "modificationTime": NOW - 9 * DAY}},
    ]
    name = f"{t.version:020d}.checkpoint.{uuid.uuid4()}.json"
    (t.log / name).write_text("\n".join(json.dumps(line) for line in lines) + "\n")


def _old(path: Path, content: bytes = b"crc") -> Path:
    path.write_bytes(content)
    stamp = (NOW - 9 * DAY) * 1_000_000
    os.utime(path, ns=(stamp, stamp))
    return path


def test_hadoop_checksums_follow_their_file(tmp_path):
    t = _table(tmp_path / "t")
    _sidecar_checkpoint(t, "used.parquet")
    log = t.log
    _old(log / ".00000000000000000001.json.crc")  # its commit exists: kept
    _old(log / ".00000000000000000000.json.crc")
    (log / "00000000000000000000.json").rename(log / "00000000000000000000.json.bak")
    (log / "00000000000000000000.json.bak").unlink()  # log cleanup removed commit 0
    _old(log / "_sidecars" / ".used.parquet.crc")  # its sidecar is referenced: kept
    _old(log / "_sidecars" / "unused.parquet", b"PAR1")
    _old(log / "_sidecars" / ".unused.parquet.crc")
    _old(log / ".00000000000000000002.json.abc.tmp")
    _old(log / "..00000000000000000002.json.abc.tmp.crc")
    result = scan(open_table_for(t.root), retention_ms=DAY)
    reasons = {c.path: c.reason for c in result.candidates}
    assert "_delta_log/.00000000000000000001.json.crc" not in reasons
    assert "_delta_log/_sidecars/.used.parquet.crc" not in reasons
    assert reasons["_delta_log/.00000000000000000000.json.crc"] == (
        "Hadoop checksum (.crc) of _delta_log/00000000000000000000.json, which no longer exists"
    )
    assert reasons["_delta_log/_sidecars/unused.parquet"] == (
        "sidecar no retained checkpoint references"
    )
    assert reasons["_delta_log/_sidecars/.unused.parquet.crc"] == (
        "Hadoop checksum (.crc) of _delta_log/_sidecars/unused.parquet, which is cleaned up with it"
    )
    assert reasons["_delta_log/..00000000000000000002.json.abc.tmp.crc"].endswith(
        "00000000000000000002.json.abc.tmp, which is cleaned up with it"
    )
    report = audit_table(str(t.root))
    assert not [f for f in report.findings if f.code == "stray-log-file"]


def open_table_for(root: Path):
    from deltaguard.tools.storage import open_table

    return open_table(str(root))


# proves: docs/guides/cleanup.md and docs/guides/audit.md "staged commits are never touched"
def test_staged_commits_are_understood(tmp_path):
    t = _table(tmp_path / "t")
    staged = t.log / "_staged_commits"
    staged.mkdir()
    for v in (2, 3):
        _old(staged / f"{v:020d}.{uuid.uuid4()}.json", b'{"commitInfo":{}}\n')
    code, doc = _audit(t.root)
    assert code == 0 and doc["findings"] == []
    assert doc["summary"]["staged_commits"] == 2
    result = scan(open_table_for(t.root), retention_ms=0)
    assert not [c for c in result.candidates if "_staged_commits" in c.path]


def test_metadata_without_schema_string_is_an_incomplete_action(tmp_path):
    t = SyntheticTable(tmp_path / "t")
    t.create(NOW - 10 * DAY)
    first = t.log / "00000000000000000000.json"
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    for line in lines:
        if "metaData" in line:
            del line["metaData"]["schemaString"]
    first.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    report = audit_table(str(t.root))
    codes = {f.code: f for f in report.findings}
    assert "corrupt-json-line" not in codes
    finding = codes["incomplete-action"]
    assert finding.file == "_delta_log/00000000000000000000.json" and finding.line == 3
    assert "schemaString" in finding.message
    assert "restore" not in finding.hint.lower()  # restoring a backup would not change it
    assert "not damaged" in finding.hint
    assert "incomplete action" in codes["snapshot-unreadable"].message
