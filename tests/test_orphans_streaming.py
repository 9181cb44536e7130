"""Streaming leftovers inside a table root (deltaguard.tools.orphans.streaming): a Structured
Streaming checkpoint directory with a visible name is never a candidate, never deleted, and
reported in ``kept_dirs`` with its own reason; so is a file sink's ``_spark_metadata``. The
local engine here; the Spark engine against it in the ``spark`` test at the end."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_orphans import _table as orphans_table
from test_orphans_spark_engine import spark  # noqa: F401  (the module's local Spark session)

from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.tools.cli import main
from deltaguard.tools.orphans import FileClass, scan
from deltaguard.tools.orphans.streaming import (
    CHECKPOINT_REASON,
    SPARK_METADATA_REASON,
    checkpoint_dirs,
    in_checkpoint,
)
from deltaguard.tools.spark_engine.orphans_scan import scan_spark
from deltaguard.tools.spark_engine.store_spec import StoreSpec
from deltaguard.tools.storage import open_table

DAY = 86_400_000
NOW = int(time.time() * 1000)
CHECKPOINT_FILES = (
    "checkpoints/q1/metadata",
    "checkpoints/q1/offsets/0",
    "checkpoints/q1/offsets/1",
    "checkpoints/q1/commits/0",
    "checkpoints/q1/sources/0/0",
    "checkpoints/q1/state/0/0/1.delta",
)
#: Looks like part of a checkpoint, but there is no metadata next to offsets/: an orphan.
NOT_A_CHECKPOINT = "stray/offsets/0"


def add_streaming_leftovers(t: SyntheticTable, mtime_ms: int) -> None:
    """A checkpoint directory with a visible name, a file sink's _spark_metadata, and a
    directory that only looks like a checkpoint."""
    for rel in CHECKPOINT_FILES:
        t.write_file(rel, mtime_ms)
    t.write_file("sink/_spark_metadata/0", mtime_ms)
    t.write_file(NOT_A_CHECKPOINT, mtime_ms)


def test_checkpoint_rule() -> None:
    paths = [*CHECKPOINT_FILES, NOT_A_CHECKPOINT, "metadata", "p=1/part-0.parquet"]
    assert checkpoint_dirs(paths) == {"checkpoints/q1"}
    # commits/ alone next to metadata is enough; offsets/ alone too; metadata alone is not.
    assert checkpoint_dirs(["a/metadata", "a/commits/3", "b/metadata", "c/offsets/0"]) == {"a"}
    assert checkpoint_dirs(["metadata", "offsets/0"]) == {""}
    assert in_checkpoint("checkpoints/q1/state/0/0/1.delta", {"checkpoints/q1"})
    assert not in_checkpoint("checkpoints/q10/metadata", {"checkpoints/q1"})
    assert not in_checkpoint("checkpoints/q1", {"checkpoints/q1"})  # the directory itself


def test_checkpoint_in_table_root_is_kept_and_reported(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = orphans_table(root)
    add_streaming_leftovers(t, NOW - 9 * DAY)
    result = scan(open_table(str(root)), retention_ms=0, now_ms=NOW)
    classes = {c.path: c.file_class for c in result.candidates}
    assert not [p for p in classes if p.startswith("checkpoints/")], classes
    assert classes[NOT_A_CHECKPOINT] is FileClass.ORPHAN
    assert classes["p=b/part-orphan.parquet"] is FileClass.ORPHAN  # the rest is unchanged
    assert [(k.path, k.reason) for k in result.kept_dirs] == [
        ("checkpoints/q1", CHECKPOINT_REASON),
        ("sink/_spark_metadata", SPARK_METADATA_REASON),
    ]


# proves: docs/guides/cleanup.md "hidden names and streaming leftovers are never touched"
def test_cli_delete_never_touches_streaming_leftovers(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = orphans_table(root)
    add_streaming_leftovers(t, NOW - 9 * DAY)
    runner = CliRunner()
    args = ["orphans", str(root), "--retention", "0", "--unsafe-retention"]
    dry = runner.invoke(main, [*args, "--json"])
    assert dry.exit_code == 1, dry.output
    report = json.loads(dry.output)
    assert {k["path"]: k["reason"] for k in report["kept_dirs"]} == {
        "checkpoints/q1": CHECKPOINT_REASON,
        "sink/_spark_metadata": SPARK_METADATA_REASON,
    }
    text = runner.invoke(main, args)
    assert f"kept: checkpoints/q1/: {CHECKPOINT_REASON}" in " ".join(text.output.split())
    done = runner.invoke(main, [*args, "--delete", "--yes", "--json"])
    assert done.exit_code == 0, done.output
    for rel in (*CHECKPOINT_FILES, "sink/_spark_metadata/0"):
        assert (root / rel).is_file(), rel
    assert not (root / NOT_A_CHECKPOINT).exists()


@pytest.mark.spark
def test_spark_engine_keeps_streaming_leftovers_like_the_local_engine(
    spark,  # noqa: F811
    tmp_path: Path,
) -> None:
    root = tmp_path / "t"
    t = orphans_table(root)
    add_streaming_leftovers(t, NOW - 9 * DAY)
    ours = scan_spark(spark, StoreSpec(str(root)), str(tmp_path / "r"), retention_ms=0)
    local = scan(open_table(str(root)), retention_ms=0, now_ms=ours.result.now_ms)
    assert ours.complete
    as_set = lambda cs: {(c.path, c.file_class, c.reason) for c in cs}  # noqa: E731
    assert as_set(ours.result.candidates) == as_set(local.candidates)
    assert NOT_A_CHECKPOINT in {c.path for c in ours.result.candidates}
    assert ours.result.kept_dirs == local.kept_dirs
    assert [k.path for k in local.kept_dirs] == ["checkpoints/q1", "sink/_spark_metadata"]
