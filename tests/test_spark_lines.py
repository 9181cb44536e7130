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
    ("3.5", None): "io.delta:delta-spark_2.12:3.3.3,io.delta:delta-storage:3.3.3,"
    "org.apache.hadoop:hadoop-aws:3.3.4,com.amazonaws:aws-java-sdk-bundle:1.12.262",
    ("3.5", "3.4.1"): "io.delta:delta-spark_2.12:3.3.3,io.delta:delta-storage:3.3.3,"
    "org.apache.hadoop:hadoop-aws:3.4.1,software.amazon.awssdk:bundle:2.24.6",
    ("4.0", None): "io.delta:delta-spark_4.0_2.13:4.4.0,io.delta:delta-storage:4.4.0,"
    "org.apache.hadoop:hadoop-aws:3.4.1,software.amazon.awssdk:bundle:2.24.6",
    ("4.1", None): "io.delta:delta-spark_4.1_2.13:4.4.0,io.delta:delta-storage:4.4.0,"
    "org.apache.hadoop:hadoop-aws:3.4.2,software.amazon.awssdk:bundle:2.29.52",
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
    assert run_cli("jar", "--spark-version", "4.1").stdout.strip() == str(plugin_jar("sdk2"))
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
    with pytest.raises(UnknownSparkLineError, match=r"supported: 3\.5, 4\.0, 4\.1, 4\.2$"):
        line_for("3.4.1")
    with pytest.raises(UnknownSparkLineError, match=r"hadoop-aws 3\.5\.0"):
        line_for("4.2", "3.3.4")
    out = run_cli("packages", "--spark-version", "4.0", "--hadoop-version", "3.3.4")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "Spark 4.0 with Hadoop 3.3.4 is not a supported line" in out.stderr


UNSUPPORTED = (
    "Spark 4.3 is not supported: no Delta release supports it yet; the newest supported line "
    "is Spark 4.2 (Delta 4.4.0, hadoop-aws 3.5.0); supported: 3.5, 4.0, 4.1, 4.2"
)


@pytest.mark.parametrize(
    "command",
    [["packages"], ["jar"], ["conf", "render", "s3-conditional", "--jars", "packages"]],
    ids=["packages", "jar", "conf-render"],
)
def test_a_line_no_delta_supports_is_refused_in_one_line(run_cli, command):
    out = run_cli(*command, "--spark-version", "4.3")
    name = " ".join(["deltaguard", *command[:2]])  # deltaguard packages / conf render
    assert (out.returncode, out.stdout, out.stderr) == (2, "", f"{name}: {UNSUPPORTED}\n")


@pytest.mark.slow  # 5-10 s: make test-fast stays under 3 minutes
def test_an_installed_pyspark_no_delta_supports_is_refused(run_cli, tmp_path):
    """A pyspark 4.3 in the environment (its distribution metadata, ahead on sys.path): the
    commands that default to the installed line refuse it in one line, exit 2."""
    dist = tmp_path / "pyspark-4.3.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pyspark\nVersion: 4.3.0\n")
    env = {"PYTHONPATH": str(tmp_path)}
    for command in (["packages"], ["jar"], ["conf", "render", "s3-conditional"]):
        out = run_cli(*command, env=env)
        name = " ".join(["deltaguard", *command[:2]])
        refused = UNSUPPORTED.replace("Spark 4.3", "Spark 4.3.0")
        want = f"{name}: the installed pyspark: {refused}\n"
        assert (out.returncode, out.stdout, out.stderr) == (2, "", want), command
    # an explicit supported line still works next to it
    assert run_cli("packages", "--spark-version", "4.1", env=env).returncode == 0


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
    assert any("hadoop-aws 3.5.0 with Delta 3.3.3" in m for m in _findings(newer_hadoop))
    # delta-storage of another Delta
    storage = {
        **conf,
        "spark.jars.packages": packages.replace("delta-storage:3.3.3", "delta-storage:4.4.0"),
    }
    assert any("delta-storage 4.4.0 with delta-spark_2.12 3.3.3" in m for m in _findings(storage))
    # Delta 4.4 (Spark 4.2) with the Spark 3.5 line's jars
    delta44 = {
        **conf,
        "spark.jars.packages": packages.replace(
            "delta-spark_2.12:3.3.3", "delta-spark_4.2_2.13:4.4.0"
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
    assert [line.name for line in LINES] == ["3.5", "3.5-hadoop3.4", "4.0", "4.1", "4.2"]
    for line in LINES:
        assert by_name(line.name) is line
        assert line.delta_artifact.endswith("_" + line.scala)
        # Delta 4.x names the Spark line in its artifacts (project/CrossSparkVersions.scala)
        if line.delta.startswith("4."):
            assert line.delta_artifact == f"delta-spark_{line.spark}_{line.scala}"
        expected = SdkGeneration.V1 if line.hadoop.startswith("3.3") else SdkGeneration.V2
        assert line.sdk is expected


def test_check_flags_the_plugin_jar_with_a_spark_or_delta_it_was_not_built_for():
    conf = render(PresetName.S3_CONDITIONAL, PresetOptions(spark_version="4.1", jars="packages"))
    packages = conf["spark.jars.packages"]
    # Delta's build for Spark 4.3 (which no line supports) next to the plugin jar
    spark43 = {**conf, "spark.jars.packages": packages.replace("_4.1_", "_4.3_")}
    assert [m for m in _findings(spark43) if "Spark 4.3" in m] == [
        "delta-spark_4.3_2.13:4.4.0 is Delta for Spark 4.3, which no deltaguard line supports; "
        "deltaguard-logstore-0.1.0.jar is not built for it; the newest supported line is "
        "Spark 4.2 (delta-spark_4.2_2.13:4.4.0)"
    ]
    # a Delta minor no line runs (Delta 4.0.0 was the 4.0 line before Delta 4.4's 4.0 build)
    delta40 = {
        **conf,
        "spark.jars.packages": packages.replace(
            "delta-spark_4.1_2.13:4.4.0", "delta-spark_4.0_2.13:4.0.0"
        ).replace("delta-storage:4.4.0", "delta-storage:4.0.0"),
    }
    assert any(
        m.startswith(
            "Delta 4.0.0 is not a supported line; deltaguard-logstore-0.1.0.jar is not "
            "built for it; supported: 3.3.3 (Spark 3.5), 4.4.0 (Spark 4.0, 4.1, 4.2)"
        )
        for m in _findings(delta40)
    ), _findings(delta40)
    # Delta 3.3's Scala 2.12 build is not Spark 4's; Delta 4.4 for Spark 4.1 on 3.5's Hadoop
    on35 = render(PresetName.S3_CONDITIONAL, PresetOptions(spark_version="3.5", jars="packages"))
    mixed = {
        **on35,
        "spark.jars.packages": on35["spark.jars.packages"]
        .replace("delta-spark_2.12:3.3.3", "delta-spark_4.1_2.13:4.4.0")
        .replace("delta-storage:3.3.3", "delta-storage:4.4.0"),
    }
    assert any("hadoop-aws 3.3.4 with Delta 4.4.0" in m for m in _findings(mixed)), _findings(mixed)
    # the lines as rendered pass (the parametrized test above covers every preset)
    assert _findings(conf) == []


def test_storage_builds_cover_every_lines_delta():
    from deltaguard.spark_conf.spark_lines import storage_builds

    assert storage_builds() == [("sdk2", "4.4.0")]
