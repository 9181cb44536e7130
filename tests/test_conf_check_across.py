"""`deltaguard conf check` over several properties files: a bucket that some give to a plain
DynamoDB store and others to a conditional store is `mixed-commit-protocols`."""

from __future__ import annotations

from pathlib import Path

from deltaguard.spark_conf.presets import PresetOptions, render, to_properties


def _render(tmp_path: Path, name: str, preset: str, root: str) -> str:
    path = tmp_path / f"{name}.properties"
    options = PresetOptions(table_root=root, jars="none", spark_version="4.2")
    path.write_text(to_properties(render(preset, options)))
    return str(path)


def test_plain_dynamodb_and_conditional_on_one_bucket_are_flagged(tmp_path, run_cli):
    ddb = _render(tmp_path, "etl", "s3-dynamodb", "s3://lake/events")
    cond = _render(tmp_path, "rs", "s3-conditional", "s3://lake/other")
    out = run_cli("conf", "check", ddb, cond)
    assert out.returncode == 1, out.stdout + out.stderr
    lines = [line for line in out.stdout.splitlines() if "mixed-commit-protocols" in line]
    assert len(lines) == 2, out.stdout
    assert lines[0].startswith(f"{ddb}:") and f"{cond}:" in lines[0]
    assert "bucket lake" in lines[0] and "docs/guides/migration.md" in lines[0]
    assert lines[1].startswith(f"{cond}:") and f"{ddb}:" in lines[1]


def test_transition_next_to_either_and_other_buckets_are_fine(tmp_path, run_cli):
    ddb = _render(tmp_path, "etl", "s3-dynamodb", "s3://lake/events")
    transition = _render(tmp_path, "moved", "s3-dynamodb-transition", "s3://lake/events")
    cond = _render(tmp_path, "rs", "s3-conditional", "s3://other-lake/t")
    out = run_cli("conf", "check", ddb, transition, cond)
    assert out.returncode == 0, out.stdout
    assert out.stdout.strip() == f"{ddb}, {transition}, {cond}: no problems found"
    phase2 = _render(tmp_path, "phase2", "s3-conditional", "s3://lake/events")
    assert run_cli("conf", "check", transition, phase2).returncode == 0


def test_a_file_without_buckets_covers_every_bucket(tmp_path, run_cli):
    ddb = tmp_path / "bare.properties"
    ddb.write_text(
        "spark.delta.logStore.s3a.impl=io.delta.storage.S3DynamoDBLogStore\n"
        "spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName=delta_log\n"
        "spark.io.delta.storage.S3DynamoDBLogStore.ddb.region=us-east-1\n"
    )
    cond = _render(tmp_path, "rs", "s3-conditional", "s3://lake/t")
    out = run_cli("conf", "check", str(ddb), cond)
    assert out.returncode == 1
    assert (
        f"{ddb}:1: mixed-commit-protocols: spark.delta.logStore.s3a.impl: bucket lake" in out.stdout
    )
