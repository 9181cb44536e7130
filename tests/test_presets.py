"""spark-submit presets and `deltaguard conf render/check`."""

from __future__ import annotations

import json
from xml.etree import ElementTree

import pytest

from deltaguard.logstore.jars import plugin_jar
from deltaguard.spark_conf.conf_check import check, parse_properties
from deltaguard.spark_conf.jvm_deps import submit_jars
from deltaguard.spark_conf.presets import (
    IVY_SETTINGS,
    MULTI_WRITER_BUCKETS_KEY,
    PresetError,
    PresetName,
    PresetOptions,
    render,
    shipped_preset_file,
    shipped_preset_text,
    to_properties,
)


def _codes(text: str) -> list[str]:
    return [f.code for f in check(parse_properties(text))]


def test_conditional_preset():
    conf = render(
        "s3-conditional",
        PresetOptions(
            table_root="s3://lake/events",
            endpoint="http://x:9000",
            path_style=True,
            jars="packages",
        ),
    )
    assert conf["spark.delta.logStore.s3a.impl"] == "io.deltaguard.logstore.S3ConditionalLogStore"
    assert conf["spark.delta.logStore.s3.impl"] == "io.deltaguard.logstore.S3ConditionalLogStore"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://x:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.jars"] == str(plugin_jar())
    assert conf["spark.jars.packages"].startswith("io.delta:delta-spark_4.2_2.13:4.4.0")
    assert conf[MULTI_WRITER_BUCKETS_KEY] == "lake"
    assert "spark.driver.bindAddress" not in conf, "no test-bed settings in user presets"
    assert _codes("\n".join(f"{k}={v}" for k, v in conf.items())) == []


def test_jars_cache_lists_the_cached_jars_after_the_plugin():
    conf = render("s3-conditional", PresetOptions(jars="cache"))
    assert conf["spark.jars"].split(",") == [str(plugin_jar())] + [str(j) for j in submit_jars()]
    assert "spark.jars.packages" not in conf
    assert render("s3-conditional") == conf, "auto: the cache when it holds the line's jars"
    assert _codes(to_properties(conf)) == []


def test_jars_without_a_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("DELTAGUARD_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(PresetError, match=r"jars=cache: .* run `make jars`"):
        render("s3-conditional", PresetOptions(jars="cache"))
    conf = render("s3-conditional")
    assert conf == render("s3-conditional", PresetOptions(jars="packages"))
    assert conf["spark.jars.ivySettings"] == str(IVY_SETTINGS)


def test_ivy_settings_never_read_the_local_maven_repository():
    """Spark's own Ivy chain reads ~/.m2 (`local-m2-cache`), where Maven leaves POM-only
    entries; the settings packages renders resolve from Maven Central only."""
    root = ElementTree.parse(IVY_SETTINGS).getroot()
    resolvers = list(root.iterfind("resolvers/*"))
    assert [(r.tag, r.get("root")) for r in resolvers] == [
        ("ibiblio", "https://repo1.maven.org/maven2/")
    ]
    assert root.find("settings").get("defaultResolver") == resolvers[0].get("name")


def test_single_driver_needs_acknowledgement(run_cli):
    with pytest.raises(PresetError, match="overwrite each other's commits"):
        render("s3-single-driver")
    conf = render("s3-single-driver", PresetOptions(acknowledge_single_driver=True))
    assert conf["spark.delta.logStore.s3a.impl"] == "io.delta.storage.S3SingleDriverLogStore"
    out = run_cli("conf", "render", "s3-single-driver")
    assert out.returncode == 2 and "--acknowledge-single-driver" in out.stderr
    assert "Traceback" not in out.stderr


def test_local_preset_has_no_s3():
    conf = render("local")
    assert not [k for k in conf if "s3" in k or "logStore" in k]


@pytest.mark.parametrize("name", list(PresetName))
def test_shipped_properties_files_match_render(name):
    assert shipped_preset_file(name).read_text() == shipped_preset_text(name)


def test_render_formats_and_spark_submit_can_read_properties(tmp_path, run_cli):
    props = run_cli(
        "conf", "render", "s3-conditional", "--table-root", "s3://lake/t", "--region", "eu-west-1"
    )
    assert props.returncode == 0, props.stderr
    parsed = {k: e.value for k, e in parse_properties(props.stdout).items()}
    assert parsed == render(
        "s3-conditional", PresetOptions(table_root="s3://lake/t", region="eu-west-1")
    )
    as_json = json.loads(run_cli("conf", "render", "s3-conditional", "--format", "json").stdout)
    assert as_json["spark.delta.logStore.s3a.impl"].endswith("S3ConditionalLogStore")
    env = run_cli("conf", "render", "local", "--format", "env").stdout
    assert env.startswith("export PYSPARK_SUBMIT_ARGS=") and "pyspark-shell" in env
    (tmp_path / "p.properties").write_text(props.stdout)
    assert run_cli("conf", "check", str(tmp_path / "p.properties")).returncode == 0


def test_check_finds_each_problem_with_its_line(tmp_path, run_cli):
    text = "\n".join(
        [
            "# a bad file",
            "spark.delta.logStore.class=io.delta.storage.S3SingleDriverLogStore",  # 2
            "spark.delta.logStore.s3a.impl=io.delta.storage.S3DynamoDBLogStore",  # 3
            "delta.logStore.s3a.impl=io.deltaguard.logstore.S3ConditionalLogStore",  # 4
            "spark.io.delta.storage.S3DynamoDBLogStore.ddb.ttl=60",  # 5
            f"{MULTI_WRITER_BUCKETS_KEY}=lake",  # 6
            "spark.jars=/nonexistent/deltaguard.jar",  # 7
        ]
    )
    findings = check(parse_properties(text))
    got = {(f.code, f.line) for f in findings}
    assert ("logstore-conflict", 2) in got
    assert ("prefix-mismatch", 4) in got
    assert ("dynamodb-incomplete", 4) in got or ("dynamodb-incomplete", 3) in got
    assert ("ttl-too-low", 5) in got
    assert ("missing-jar", 7) in got
    path = tmp_path / "bad.properties"
    path.write_text(text)
    out = run_cli("conf", "check", str(path))
    assert out.returncode == 1
    assert f"{path}:5: ttl-too-low" in out.stdout
    assert len(out.stdout.strip().splitlines()) == len(findings)


def test_check_flags_single_driver_on_multi_writer_bucket():
    text = f"{MULTI_WRITER_BUCKETS_KEY}=lake\nspark.delta.logStore.s3.impl=io.deltaguard.logstore.S3ConditionalLogStore\n"
    findings = check(parse_properties(text))
    assert [(f.code, f.message.split(":")[0]) for f in findings] == [
        ("single-driver-multi-writer", "s3a")
    ], "s3a:// falls back to Delta's single-driver default"


def test_check_missing_file_is_a_clean_error(tmp_path, run_cli):
    out = run_cli("conf", "check", str(tmp_path / "nope.properties"))
    assert out.returncode == 2
    assert "cannot read" in out.stderr and "Traceback" not in out.stderr


def test_properties_parser_handles_separators_comments_and_continuations():
    entries = parse_properties("! c\na = 1\nb:2\nc 3\nd=x\\\n  y\n")
    assert {k: (e.value, e.line) for k, e in entries.items()} == {
        "a": ("1", 2),
        "b": ("2", 3),
        "c": ("3", 4),
        "d": ("xy", 5),
    }
