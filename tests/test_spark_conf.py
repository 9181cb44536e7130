"""Spark configuration: one builder, the right jars, consistent versions."""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pyspark

from deltaguard.logstore.jars import plugin_jar
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf import jvm_deps
from deltaguard.spark_conf.session import LOGSTORE_CLASSES, delta_spark_conf
from deltaguard.spark_conf.spark_lines import LINES, installed_line
from deltaguard.spark_conf.storage import LocalStorage, S3Storage

REPO = Path(__file__).resolve().parents[1]
NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def test_runtime_coordinates_are_the_installed_lines():
    assert jvm_deps.maven_coordinates() == [
        "io.delta:delta-spark_4.2_2.13:4.4.0",
        "io.delta:delta-storage:4.4.0",
        "org.apache.hadoop:hadoop-aws:3.5.0",
        "software.amazon.awssdk:bundle:2.35.4",
    ]


def test_installed_line_runs_the_hadoop_and_sdk_it_resolves():
    line = installed_line()
    hadoop_api = next((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    assert hadoop_api.name == f"hadoop-client-api-{line.hadoop}.jar"
    # the SDK on the classpath is the bundle hadoop-aws ships with, once
    bundle = [j.name for j in jvm_deps.runtime_jars() if j.name.startswith("bundle-")]
    assert bundle == [f"bundle-{line.sdk_bundle.rsplit(':', 1)[1]}.jar"]


def test_each_plugin_jar_compiles_against_the_oldest_line_of_its_sdk():
    root = ET.parse(REPO / "logstore" / "pom.xml").getroot()
    props = root.find("m:properties", NS)
    assert props.findtext("m:delta.version", namespaces=NS) == min(
        (line.delta for line in LINES), key=lambda v: tuple(map(int, v.split(".")))
    )
    for profile in root.iterfind("m:profiles/m:profile", NS):
        sdk = profile.findtext("m:id", namespaces=NS)
        own = [line for line in LINES if line.sdk.value == sdk]
        oldest = min(own, key=lambda line: tuple(map(int, line.hadoop.split("."))))
        pprops = profile.find("m:properties", NS)
        assert pprops.findtext("m:hadoop.version", namespaces=NS) == oldest.hadoop, sdk
        assert (
            pprops.findtext("m:awssdk.version", namespaces=NS)
            == oldest.sdk_bundle.rsplit(":", 1)[1]
        ), sdk


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
