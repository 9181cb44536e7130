"""The s3-conditional preset's request- and job-saving settings (spark_conf.request_tuning): which
preset and which Spark line gets which, the reasons in rendered files, and (against each
line's own hadoop-aws and Delta jars) that every rendered key is one that line really reads.
What they save is measured in the staged race (test_spark_commits) and in docs/design/logstore.md."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyspark
import pytest

from deltaguard.localstack.spark_line_venvs import ensure, venv_dir
from deltaguard.spark_conf.jvm_deps import runtime_jars
from deltaguard.spark_conf.presets import PresetName, PresetOptions, render, to_properties
from deltaguard.spark_conf.request_tuning import (
    FEWER_REQUESTS,
    fewer_requests_conf,
    untuned_conf,
)
from deltaguard.spark_conf.spark_lines import LINES, SparkLine, by_name, installed_line

FLAGS = "spark.hadoop.fs.s3a.performance.flags"
MARKERS = "spark.hadoop.fs.s3a.directory.marker.retention"
MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
OURS_35 = "io.deltaguard.logstore.S3PutCheckpointFileManagerSpark35"
OURS_42 = "io.deltaguard.logstore.S3PutCheckpointFileManager"
ALL_FILES = "spark.databricks.delta.allFilesInCrc.enabled"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("3.5", {MARKERS: "keep", MANAGER: OURS_35, ALL_FILES: "false"}),
        ("3.5-hadoop3.4", {FLAGS: "create,mkdir", MANAGER: OURS_35, ALL_FILES: "false"}),
        ("4.0", {FLAGS: "create,mkdir", MANAGER: OURS_35, ALL_FILES: "false"}),
        ("4.2", {FLAGS: "create,mkdir", MANAGER: OURS_42, ALL_FILES: "false"}),
    ],
)
def test_each_line_renders_only_the_keys_its_hadoop_reads(line, expected):
    assert fewer_requests_conf(by_name(line)) == expected
    spark, hadoop = by_name(line).spark, by_name(line).hadoop
    conf = render("s3-conditional", PresetOptions(spark_version=spark, hadoop_version=hadoop))
    assert {k: conf[k] for k in expected} == expected
    assert set(untuned_conf(by_name(line))) == set(expected)
    # Checksums stay on (Delta's default): the preset does not turn them off any more.
    assert "spark.databricks.delta.writeChecksumFile.enabled" not in conf


def test_only_the_conditional_preset_carries_them():
    keys = {s.key for s in FEWER_REQUESTS}
    for name in (PresetName.S3_DYNAMODB, PresetName.S3_SINGLE_DRIVER, PresetName.LOCAL):
        options = PresetOptions(acknowledge_single_driver=True)
        assert not keys & set(render(name, options)), name


def test_rendered_properties_say_why_each_setting_is_safe():
    text = to_properties(render("s3-conditional", PresetOptions(spark_version="4.2")))
    lines = text.splitlines()
    for key in (FLAGS, MANAGER, ALL_FILES):
        at = next(i for i, line in enumerate(lines) if line.startswith(key + "="))
        assert lines[at - 1].startswith("# "), f"no reason above {key}"


def _spark_sql_jar(line: SparkLine) -> Path:
    """The line's own spark-sql jar: the installed pyspark's, or its cached virtualenv's."""
    if line == installed_line():
        return next((Path(pyspark.__file__).parent / "jars").glob("spark-sql_*.jar"))
    ensure(line)
    return next(venv_dir(line).glob("lib/python*/site-packages/pyspark/jars/spark-sql_*.jar"))


@pytest.mark.spark  # needs every line's resolved jars (make setup), not a JVM
@pytest.mark.parametrize("line", [line.name for line in LINES])
def test_rendered_keys_exist_in_the_lines_own_jars_and_the_rest_do_not(line):
    jars = {j.name: j for j in runtime_jars(by_name(line))}
    hadoop_aws = next(j for n, j in jars.items() if n.startswith("hadoop-aws-"))
    delta = next(j for n, j in jars.items() if n.startswith("delta-spark"))
    with zipfile.ZipFile(hadoop_aws) as jar:
        constants = jar.read("org/apache/hadoop/fs/s3a/Constants.class")
        flags = "org/apache/hadoop/fs/s3a/api/PerformanceFlagEnum.class"
        flag_names = jar.read(flags) if flags in jar.namelist() else b""
    with zipfile.ZipFile(delta) as jar:
        delta_conf = jar.read("org/apache/spark/sql/delta/sources/DeltaSQLConfBase.class")
    rendered = fewer_requests_conf(by_name(line))
    spark_sql = _spark_sql_jar(by_name(line))
    for setting in FEWER_REQUESTS:
        if setting.key == MANAGER:
            # The class Spark's own default would be, and the interface ours implements, exist
            # in this line's Spark exactly when the setting is rendered for it.
            interface = setting.default.replace("FileContextBased", "").replace(".", "/")
            with zipfile.ZipFile(spark_sql) as jar:
                exists = f"{interface}.class" in jar.namelist()
            assert exists == (rendered.get(MANAGER) == setting.value), (line, setting.value)
            continue
        if setting.key.startswith("spark.hadoop."):
            known = setting.key.removeprefix("spark.hadoop.").encode() in constants
        else:
            known = setting.key.removeprefix("spark.databricks.delta.").encode() in delta_conf
        assert known == (setting.key in rendered) or setting.key == MARKERS, (line, setting.key)
    if FLAGS in rendered:
        for flag in rendered[FLAGS].split(","):
            assert flag.capitalize().encode() in flag_names, (line, flag)
    if MARKERS in rendered:
        # Every line knows the key; only hadoop-aws 3.3.x deletes markers by default.
        assert b"fs.s3a.directory.marker.retention" in constants
        assert hadoop_aws.name.startswith("hadoop-aws-3.3.")
