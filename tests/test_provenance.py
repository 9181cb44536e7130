"""The provenance classification (tools/deltalog/provenance.py) and the mark's format
(logstore/python/commit_mark.py): pure functions, no server."""

from __future__ import annotations

import pytest

from deltaguard.logstore.commit_mark import COMMIT_MARK_KEY, commit_mark, parse_commit_mark
from deltaguard.logstore.preset_name import PresetName
from deltaguard.tools.deltalog.provenance import (
    CommitPath,
    Provenance,
    SingleDriverHistory,
    Writer,
    classify,
    single_driver_history,
    temp_commit_versions,
    unsafe_writers,
    version_ranges,
    writer_of,
)

SPARK = "Apache-Spark/4.2.0 Delta-Lake/4.4.0"
RS = "delta-rs:py-1.6.6"


def _mark(preset: str, runtime: str = "jvm") -> dict[str, str]:
    return {COMMIT_MARK_KEY: f"{preset}/{runtime}/0.1.0"}


def test_the_mark_round_trips_and_odd_marks_are_ignored() -> None:
    for preset in (PresetName.S3_CONDITIONAL, PresetName.S3_DYNAMODB_TRANSITION):
        parsed = parse_commit_mark(commit_mark(preset))
        assert parsed is not None and parsed.preset is preset and parsed.runtime == "python"
    assert parse_commit_mark({"Deltaguard-Commit": "s3-dynamodb/jvm/1"}) is not None
    for odd in ("s3-conditional", "nope/jvm/1", "local/jvm/1", "s3-conditional/go/1", ""):
        assert parse_commit_mark({COMMIT_MARK_KEY: odd}) is None, odd
    assert parse_commit_mark({}) is None and parse_commit_mark(None) is None


@pytest.mark.parametrize(
    ("engine", "writer"),
    [
        (SPARK, Writer.SPARK),
        ("Apache-Spark/3.5.3 Delta-Lake/3.3.2", Writer.SPARK),
        (RS, Writer.DELTA_RS),
        ("Trino/476", Writer.TRINO),
        ("deltaguard-repair/0.1.0", Writer.OTHER),
        (None, Writer.UNKNOWN),
    ],
)
def test_writer_of_engine_info(engine: str | None, writer: Writer) -> None:
    assert writer_of(engine) is writer


@pytest.mark.parametrize(
    ("engine", "metadata", "temp", "entry", "path"),
    [
        (SPARK, _mark("s3-conditional"), False, False, CommitPath.DELTAGUARD_CONDITIONAL),
        (SPARK, _mark("s3-dynamodb"), True, True, CommitPath.DELTAGUARD_DYNAMODB),
        (SPARK, _mark("s3-dynamodb-transition"), True, True, CommitPath.DELTAGUARD_TRANSITION),
        (None, _mark("s3-conditional", "python"), False, False, CommitPath.DELTAGUARD_CONDITIONAL),
        (RS, {}, False, False, CommitPath.CONDITIONAL_PUT),
        ("Trino/476", {}, False, True, CommitPath.CONDITIONAL_PUT),
        (SPARK, {}, True, False, CommitPath.DELTA_DYNAMODB),
        (SPARK, {}, False, True, CommitPath.DELTA_DYNAMODB),
        (SPARK, {}, False, False, CommitPath.SINGLE_DRIVER),
        (SPARK, None, False, False, CommitPath.UNKNOWN),  # local disk: no metadata
        (RS, None, False, False, CommitPath.CONDITIONAL_PUT),
        ("other/1", {}, False, False, CommitPath.UNKNOWN),
    ],
)
def test_classify(
    engine: str | None, metadata: dict[str, str] | None, temp: bool, entry: bool, path: CommitPath
) -> None:
    assert classify(engine, metadata, temp_commit=temp, dynamodb_entry=entry).path is path


def test_temp_commit_versions() -> None:
    names = [".tmp/00000000000000000003.json.ab-cd", ".tmp/x", ".tmp/00000000000000000004.json"]
    assert temp_commit_versions(names) == {3}


def _p(writer: Writer, path: CommitPath) -> Provenance:
    return Provenance(writer, path)


COND = _p(Writer.SPARK, CommitPath.DELTAGUARD_CONDITIONAL)
SINGLE = _p(Writer.SPARK, CommitPath.SINGLE_DRIVER)
RUST = _p(Writer.DELTA_RS, CommitPath.CONDITIONAL_PUT)
PLAIN = _p(Writer.SPARK, CommitPath.DELTA_DYNAMODB)
TRANS = _p(Writer.SPARK, CommitPath.DELTAGUARD_TRANSITION)
LOCAL = _p(Writer.SPARK, CommitPath.UNKNOWN)


def test_single_driver_next_to_another_writer_is_unsafe() -> None:
    found = unsafe_writers({0: RUST, 1: RUST, 2: COND, 3: SINGLE, 5: SINGLE})
    assert [(u.path, u.versions, u.preset) for u in found] == [
        (CommitPath.SINGLE_DRIVER, (3, 5), PresetName.S3_CONDITIONAL)
    ]
    assert set(found[0].others) == {
        "delta-rs via conditional-put",
        "spark via deltaguard-conditional",
    }
    assert unsafe_writers({0: RUST, 1: COND}) == []
    # single-driver commits while another writer had started: those versions only
    found = unsafe_writers({0: SINGLE, 1: COND, 2: SINGLE, 3: COND})
    assert [u.versions for u in found] == [(2,)]
    assert single_driver_history({0: SINGLE, 1: COND, 2: SINGLE}) is None


def test_single_driver_alone_or_before_every_other_writer_is_info_only() -> None:
    alone = {0: SINGLE, 1: SINGLE, 2: LOCAL}
    assert unsafe_writers(alone) == []
    assert single_driver_history(alone) == SingleDriverHistory((0, 1), alone=True)
    moved = {0: SINGLE, 1: SINGLE, 2: COND, 3: RUST}
    assert unsafe_writers(moved) == []
    assert single_driver_history(moved) == SingleDriverHistory((0, 1), alone=False)
    assert single_driver_history({0: COND, 1: RUST}) is None
    assert single_driver_history({0: LOCAL}) is None


def test_dynamodb_writers_next_to_conditional_ones_outside_the_migration() -> None:
    # phase 1 (plain + transition), phase 2 (transition + conditional), a finished phase 1
    assert unsafe_writers({0: PLAIN, 1: TRANS, 2: PLAIN}) == []
    assert unsafe_writers({0: PLAIN, 1: TRANS, 2: COND, 3: TRANS}) == []
    # a plain DynamoDB commit after the first conditional one: unsafe
    found = unsafe_writers({0: PLAIN, 1: COND, 2: PLAIN, 3: RUST})
    assert [(u.path, u.versions, u.preset) for u in found] == [
        (CommitPath.DELTA_DYNAMODB, (2,), PresetName.S3_DYNAMODB_TRANSITION)
    ]


def test_version_ranges() -> None:
    assert version_ranges([9, 3, 5, 6, 7]) == "3, 5-7, 9"
    assert version_ranges([]) == ""


def test_migrate_status_labels_by_the_same_classification() -> None:
    """A commit marked by deltaguard's conditional store whose version also has a plain
    DynamoDB entry (a DynamoDB writer that lost the race) is a conditional commit."""
    from deltaguard.tools.deltalog.protocol_mix import CommitEvidence, WriterKind, label_by_content

    entry = CommitEvidence(4, WriterKind.PLAIN, 4, True)
    marked = label_by_content(entry, SPARK, CommitPath.DELTAGUARD_CONDITIONAL)
    assert (marked.kind, marked.entry_kind) == (WriterKind.CONDITIONAL, WriterKind.PLAIN)
    dynamo = label_by_content(entry, SPARK, CommitPath.DELTAGUARD_DYNAMODB)
    assert (dynamo.kind, dynamo.entry_kind) == (WriterKind.PLAIN, None)
