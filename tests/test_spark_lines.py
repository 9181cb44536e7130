"""Spark lines: presets, packages and conf check render and accept only coordinates that
belong together (fast tier, no JVM)."""

from __future__ import annotations

import zipfile

import pytest

from deltaguard.logstore.jars import JAR_NAMES, plugin_jar
from deltaguard.spark_conf.conf_check import check, parse_properties
from deltaguard.spark_conf.presets import (
    PresetError,
    PresetName,
    PresetOptions,
    render,
    to_properties,
)
from deltaguard.spark_conf.spark_lines import (
    LINES,
    NEWEST,
    SdkGeneration,
    UnknownSparkLineError,
    by_name,
    installed_line,
    line_for,
)

EXPECTED_PACKAGES = {
    ("3.5", None): "io.delta:delta-spark_2.12:3.3.2,io.delta:delta-storage:3.3.2,"
    "org.apache.hadoop:hadoop-aws:3.3.4,com.amazonaws:aws-java-sdk-bundle:1.12.262",
    ("3.5", "3.4.1"): "io.delta:delta-spark_2.12:3.3.2,io.delta:delta-storage:3.3.2,"
    "org.apache.hadoop:hadoop-aws:3.4.1,software.amazon.awssdk:bundle:2.24.6",
    ("4.0", None): "io.delta:delta-spark_2.13:4.0.0,io.delta:delta-storage:4.0.0,"
    "org.apache.hadoop:hadoop-aws:3.4.1,software.amazon.awssdk:bundle:2.24.6",
    ("4.2", None): "io.delta:delta-spark_4.2_2.13:4.4.0,io.delta:delta-storage:4.4.0,"
    "org.apache.hadoop:hadoop-aws:3.5.0,software.amazon.awssdk:bundle:2.35.4",
}


@pytest.mark.parametrize(("spark", "hadoop"), list(EXPECTED_PACKAGES))
def test_packages_render_each_lines_coordinates(run_cli, spark, hadoop):
    args = ["packages", "--spark-version", spark] + (["--hadoop-version", hadoop] if hadoop else [])
    out = run_cli(*args)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == EXPECTED_PACKAGES[(spark, hadoop)]


def test_default_line_is_the_installed_pyspark(run_cli):
    import pyspark

    assert installed_line() == line_for(pyspark.__version__)
    assert run_cli("packages").stdout.strip() == ",".join(installed_line().coordinates)
    assert NEWEST.spark == "4.2"


def test_jar_follows_the_sdk_generation(run_cli):
    assert run_cli("jar", "--spark-version", "3.5").stdout.strip() == str(plugin_jar("sdk1"))
    assert run_cli("jar", "--spark-version", "4.0").stdout.strip() == str(plugin_jar("sdk2"))
    three_four = run_cli("jar", "--spark-version", "3.5", "--hadoop-version", "3.4.1")
    assert three_four.stdout.strip() == str(plugin_jar("sdk2"))
    for sdk, name in JAR_NAMES.items():
        with zipfile.ZipFile(plugin_jar(sdk)) as jar:
            names = jar.namelist()
        assert "io/deltaguard/logstore/S3ConditionalLogStore.class" in names, name
        assert "io/deltaguard/logstore/SdkS3Calls.class" in names, name
        has_dynamodb = "io/deltaguard/logstore/S3DynamoDBLogStore.class" in names
        assert has_dynamodb == (sdk == "sdk2"), name


def test_unknown_lines_are_clean_errors(run_cli):
    with pytest.raises(UnknownSparkLineError, match=r"supported: 3\.5, 4\.0, 4\.2"):
        line_for("4.1.1")
    with pytest.raises(UnknownSparkLineError, match=r"hadoop-aws 3\.5\.0"):
        line_for("4.2", "3.3.4")
    out = run_cli("packages", "--spark-version", "4.0", "--hadoop-version", "3.3.4")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "Spark 4.0 with Hadoop 3.3.4 is not a supported line" in out.stderr


@pytest.mark.parametrize("line", LINES, ids=lambda line: line.name)
@pytest.mark.parametrize("preset", [PresetName.S3_CONDITIONAL, PresetName.S3_DYNAMODB])
def test_rendered_presets_pass_conf_check(line, preset, tmp_path):
    options = PresetOptions(spark_version=line.spark, hadoop_version=line.hadoop, jars="packages")
    if preset is PresetName.S3_DYNAMODB and not line.has_dynamodb_store:
        with pytest.raises(PresetError, match=r"not available on Spark line 3\.5"):
            render(preset, options)
        return
    conf = render(preset, options)
    assert conf["spark.jars.packages"] == ",".join(line.coordinates)
    assert conf["spark.jars"] == str(plugin_jar(line.sdk))
    assert check(parse_properties(to_properties(conf))) == []


def _findings(conf: dict[str, str]) -> list[str]:
    return [f.message for f in check(parse_properties(to_properties(conf)))]


def test_check_flags_coordinates_that_do_not_belong_together():
    conf = render(PresetName.S3_CONDITIONAL, PresetOptions(spark_version="3.5", jars="packages"))
    # the SDK v2 plugin jar on hadoop-aws 3.3.4 (S3A on SDK v1)
    wrong_jar = {**conf, "spark.jars": str(plugin_jar("sdk2"))}
    assert any("use deltaguard-logstore-sdk1-0.1.0.jar" in m for m in _findings(wrong_jar))
    # Delta 3.3 with the Hadoop of Spark 4.2
    packages = conf["spark.jars.packages"]
    newer_hadoop = {**conf, "spark.jars.packages": packages.replace("3.3.4", "3.5.0")}
    assert any("hadoop-aws 3.5.0 with Delta 3.3.2" in m for m in _findings(newer_hadoop))
    # delta-storage of another Delta
    storage = {
        **conf,
        "spark.jars.packages": packages.replace("delta-storage:3.3.2", "delta-storage:4.4.0"),
    }
    assert any("delta-storage 4.4.0 with delta-spark_2.12 3.3.2" in m for m in _findings(storage))
    # Delta 4.4 (Spark 4.2) with the Spark 3.5 line's jars
    delta44 = {
        **conf,
        "spark.jars.packages": packages.replace(
            "delta-spark_2.12:3.3.2", "delta-spark_4.2_2.13:4.4.0"
        ),
    }
    assert any(
        "Delta 4.4.0" in m and "Spark 4.2 runs hadoop-aws 3.5.0" in m for m in _findings(delta44)
    )
    # a second SDK
    v2 = render(PresetName.S3_CONDITIONAL, PresetOptions(spark_version="4.0", jars="packages"))
    two_sdks = {**v2, "spark.jars.packages": v2["spark.jars.packages"].replace("2.24.6", "2.35.4")}
    assert any("a second AWS SDK breaks S3A" in m for m in _findings(two_sdks))
    # the DynamoDB store with the SDK v1 jar
    ddb = render(
        PresetName.S3_DYNAMODB,
        PresetOptions(spark_version="3.5", hadoop_version="3.4.1", jars="packages"),
    )
    v1_ddb = {
        **ddb,
        "spark.jars.packages": conf["spark.jars.packages"],
        "spark.jars": str(plugin_jar("sdk1")),
    }
    assert any("is not in deltaguard-logstore-sdk1" in m for m in _findings(v1_ddb))


def test_lines_table_is_consistent():
    assert [line.name for line in LINES] == ["3.5", "3.5-hadoop3.4", "4.0", "4.2"]
    for line in LINES:
        assert by_name(line.name) is line
        assert line.delta_artifact.endswith("_" + line.scala)
        expected = SdkGeneration.V1 if line.hadoop.startswith("3.3") else SdkGeneration.V2
        assert line.sdk is expected
