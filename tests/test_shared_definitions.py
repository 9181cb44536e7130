"""The definitions the rest of the code shares (one home each): commit file names, backoff,
the "create gets 412" check, preset names, the package version."""

from __future__ import annotations

import random
import re
from pathlib import Path

from botocore.exceptions import ClientError

from deltaguard.logstore.aws_errors import is_precondition_failed
from deltaguard.logstore.backoff import full_jitter_delay
from deltaguard.logstore.commit_names import (
    COMMIT_FILE,
    COMMIT_FILE_PATTERN,
    commit_file_name,
    commit_version,
)
from deltaguard.logstore.jars import JAR_NAME, VERSION
from deltaguard.logstore.preset_name import PresetName
from deltaguard.logstore.probe import Check, ProbeReport
from deltaguard.spark_conf.presets import PRESET_DIR
from deltaguard.spark_conf.session import LOGSTORE_CLASSES
from deltaguard.tools.deltalog.names import LogFileKind, parse_log_name

REPO = Path(__file__).resolve().parents[1]


def _error(status: int, code: str) -> ClientError:
    return ClientError(
        {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject"
    )


def test_commit_file_names_round_trip_and_agree_with_the_log_reader():
    assert commit_file_name(42) == "00000000000000000042.json"
    assert commit_version(commit_file_name(42)) == 42
    assert commit_version("00000000000000000042.checkpoint.parquet") is None
    assert commit_version("42.json") is None
    assert re.fullmatch(COMMIT_FILE_PATTERN, commit_file_name(7))
    parsed = parse_log_name(commit_file_name(7))
    assert parsed is not None and parsed.kind is LogFileKind.COMMIT and parsed.version == 7
    assert COMMIT_FILE.match(commit_file_name(0))


def test_full_jitter_stays_within_the_exponential_ceiling_and_uses_it():
    rng = random.Random(7)
    for retry, ceiling in ((1, 0.1), (2, 0.2), (3, 0.4), (10, 1.0)):
        delays = [full_jitter_delay(retry, 0.1, 1.0, rng) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling * 0.8, "full jitter spans the whole window"
        assert min(delays) < ceiling * 0.2


def test_precondition_failed_is_412_or_its_code():
    assert is_precondition_failed(_error(412, "PreconditionFailed"))
    assert is_precondition_failed(_error(412, ""))
    assert is_precondition_failed(_error(0, "PreconditionFailed"))
    assert not is_precondition_failed(_error(409, "ConditionalRequestConflict"))
    assert not is_precondition_failed(ValueError("412"))


def test_every_preset_has_a_shipped_file_and_a_logstore_entry():
    assert {p.value for p in PresetName} == {f.stem for f in PRESET_DIR.glob("*.properties")}
    assert set(LOGSTORE_CLASSES) == set(PresetName)


def test_probe_recommends_a_preset_value():
    safe = ProbeReport("s3://b/p", "http://e")
    safe.checks = [Check("if-none-match", "pass", ""), Check("atomicity", "pass", "")]
    assert safe.recommended_preset is PresetName.S3_CONDITIONAL
    unsafe = ProbeReport("s3://b/p", "http://e")
    unsafe.checks = [Check("if-none-match", "fail", "")]
    assert unsafe.recommended_preset is None


def test_the_version_has_one_source():
    version = (REPO / "VERSION").read_text().strip()
    assert version == VERSION
    assert JAR_NAME == f"deltaguard-logstore-{version}.jar"
    pom = (REPO / "logstore" / "pom.xml").read_text()
    assert "<version>${revision}</version>" in pom
    assert 'dynamic = ["version"]' in (REPO / "pyproject.toml").read_text()
    makefile = (REPO / "Makefile").read_text()
    assert "VERSION := $(shell cat VERSION)" in makefile
