"""Spark configuration: one builder, the right jars, consistent versions."""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pyspark

from deltaguard.logstore.jars import plugin_jar
from deltaguard.spark_conf import jvm_deps
from deltaguard.spark_conf.preset_name import PresetName
from deltaguard.spark_conf.session import LOGSTORE_CLASSES, delta_spark_conf
from deltaguard.spark_conf.storage import LocalStorage, S3Storage

REPO = Path(__file__).resolve().parents[1]
NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def test_runtime_coordinates_come_from_the_pom():
    assert jvm_deps.maven_coordinates() == [
        "io.delta:delta-spark_4.2_2.13:4.4.0",
        "io.delta:delta-storage:4.4.0",
        "org.apache.hadoop:hadoop-aws:3.5.0",
    ]


def test_plugin_compiles_against_the_versions_spark_runs():
    props = ET.parse(REPO / "logstore" / "pom.xml").getroot().find("m:properties", NS)
    runtime = dict(c.rsplit(":", 1) for c in jvm_deps.maven_coordinates())
    assert props.findtext("m:delta.version", namespaces=NS) == runtime["io.delta:delta-storage"]
    assert (
        props.findtext("m:hadoop.version", namespaces=NS) == runtime["org.apache.hadoop:hadoop-aws"]
    )
    hadoop_api = next((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    assert (
        hadoop_api.name
        == f"hadoop-client-api-{props.findtext('m:hadoop.version', namespaces=NS)}.jar"
    )
    # the SDK the plugin compiles against is the bundle hadoop-aws ships with
    bundle = [j.name for j in jvm_deps.runtime_jars() if j.name.startswith("bundle-")]
    assert bundle == [f"bundle-{props.findtext('m:awssdk.version', namespaces=NS)}.jar"]


def test_resolved_jars_never_duplicate_what_pyspark_ships():
    shipped = {
        re.sub(r"-\d.*$", "", j.name)
        for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")
    }
    ours = {re.sub(r"-\d.*$", "", j.name) for j in jvm_deps.runtime_jars()}
    assert not ours & shipped
    assert {"delta-spark_4.2_2.13", "delta-storage", "hadoop-aws", "bundle"} <= ours


def test_plugin_jar_is_package_data_and_holds_the_logstore():
    import zipfile

    with zipfile.ZipFile(plugin_jar()) as jar:
        names = jar.namelist()
    assert "io/deltaguard/logstore/S3ConditionalLogStore.class" in names
    assert not [n for n in names if "CommitLatency" in n], "bench code in the plugin jar"


def test_s3_conf_for_conditional_store():
    conf = delta_spark_conf(
        S3Storage(
            endpoint="http://127.0.0.1:1234",
            region="eu-west-1",
            access_key="a",
            secret_key="b",
            path_style=True,
        ),
        PresetName.S3_CONDITIONAL,
    )
    assert conf["spark.delta.logStore.s3a.impl"] == "io.deltaguard.logstore.S3ConditionalLogStore"
    assert conf["spark.delta.logStore.s3.impl"] == "io.deltaguard.logstore.S3ConditionalLogStore"
    assert "spark.delta.logStore.class" not in conf, (
        "Delta rejects a class conf next to scheme confs"
    )
    assert conf["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:1234"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith(
        "SimpleAWSCredentialsProvider"
    )
    assert str(plugin_jar()) in conf["spark.driver.extraClassPath"].split(":")


def test_default_store_sets_no_logstore_and_local_has_no_s3():
    conf = delta_spark_conf(LocalStorage(), PresetName.LOCAL)
    assert not [k for k in conf if "logStore" in k or "s3a" in k]
    assert LOGSTORE_CLASSES[PresetName.LOCAL] is None
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"


# Settings a user's job depends on: where commits go and through which LogStore, how Hadoop
# reaches S3, Delta's extension and catalog, which jars. Only spark_conf/ writes them; the test
# bed's driver tuning (loopback, JIT, tiny tables: localstack/spark_driver.py) is not one.
USER_FACING_SETTINGS = re.compile(
    r"[\"'](spark\.delta\.logStore\.|spark\.hadoop\.|spark\.sql\.catalog\.|spark\.io\.delta\.storage\.)\w"
    r"|[\"'](spark\.sql\.extensions|spark\.jars(\.packages)?|spark\.(driver|executor)\.extraClassPath)[\"']"
    r"|fs\.s3a\.\w|\.config\(\s*[\"']spark\."
)


def test_user_facing_spark_settings_are_written_only_in_spark_conf():
    tracked = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    offenders = []
    for name in tracked:
        path = REPO / name
        if path.parts[len(REPO.parts)] in ("spark_conf", "tests"):
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if USER_FACING_SETTINGS.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert offenders == []


def test_guard_sees_a_user_facing_setting_and_ignores_driver_tuning():
    assert USER_FACING_SETTINGS.search('conf["spark.delta.logStore.s3a.impl"] = x')
    assert USER_FACING_SETTINGS.search('"spark.hadoop.fs.s3a.endpoint": url')
    assert USER_FACING_SETTINGS.search('conf["spark.sql.extensions"] = "io.delta..."')
    assert not USER_FACING_SETTINGS.search('"spark.driver.bindAddress": "127.0.0.1"')
    assert not USER_FACING_SETTINGS.search('"spark.databricks.delta.snapshotPartitions": "1"')
