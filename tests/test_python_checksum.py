"""deltaguard's Python committer leaves a complete ``N.crc`` (tools.deltalog.checksum), and Delta
on Spark accepts it: on every line a Spark driver with ``checksum.mismatch.fatal=true``
validates the checksum of the Python commits against its own full state reconstruction, and
its next append rebuilds no state and runs one Spark job (localstack.checksum_check)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from deltaguard.localstack.spark_driver import SNAPSHOT_JOB
from deltaguard.localstack.spark_line_venvs import ensure
from deltaguard.spark_conf.spark_lines import by_name
from deltaguard.tools.deltalog.checksum import (
    ChecksumError,
    checksum_after_append,
    parse_checksum,
)

PREVIOUS = {
    "txnId": "t0",
    "tableSizeBytes": 100,
    "numFiles": 2,
    "numMetadata": 1,
    "numProtocol": 1,
    "setTransactions": [{"appId": "a", "version": 3}],
    "metadata": {"id": "m"},
    "protocol": {"minReaderVersion": 1, "minWriterVersion": 2},
    "histogramOpt": {
        "sortedBinBoundaries": [0, 8192, 16384],
        "fileCounts": [2, 0, 0],
        "totalBytes": [100, 0, 0],
    },
    "deletedRecordCountsHistogramOpt": {"deletedRecordCounts": [2, 0, 0]},
    "allFiles": [{"path": "a"}, {"path": "b"}],
    "inCommitTimestampOpt": 5,
}


def test_checksum_after_append_adds_the_files_and_carries_the_rest():
    after = checksum_after_append(parse_checksum(json.dumps(PREVIOUS).encode()), [10000], "t1")
    assert after is not None
    fields = after.fields
    assert (fields["numFiles"], fields["tableSizeBytes"], fields["txnId"]) == (3, 10100, "t1")
    assert fields["histogramOpt"]["fileCounts"] == [2, 1, 0]
    assert fields["histogramOpt"]["totalBytes"] == [100, 10000, 0]
    assert fields["deletedRecordCountsHistogramOpt"]["deletedRecordCounts"] == [3, 0, 0]
    for key in ("setTransactions", "metadata", "protocol", "numMetadata", "numProtocol"):
        assert fields[key] == PREVIOUS[key]
    # What an append cannot carry exactly is left out, never guessed.
    assert "allFiles" not in fields and "inCommitTimestampOpt" not in fields


CASES = Path(__file__).parent.parent / "logstore/src/test/resources/blind-append-checksums.json"


def test_the_shared_cases_give_what_the_stores_java_rule_gives():
    """The derivable cases of the file BlindAppendChecksumTest runs the store's rule on: the
    Python rule gives the same checksum exactly, and refuses the previous checksums the store
    refuses (which commits are blind appends is the committer's own decision: it writes only
    those)."""
    cases = orjson.loads(CASES.read_bytes())["cases"]
    derivable = [c for c in cases if c["expected"]]
    assert len(derivable) == 2
    for case in derivable:
        actions = [orjson.loads(line) for line in case["actions"]]
        sizes = [a["add"]["size"] for a in actions if "add" in a]
        txn = next(a["commitInfo"]["txnId"] for a in actions if "commitInfo" in a)
        previous = parse_checksum(orjson.dumps(case["previous"]))
        after = checksum_after_append(previous, sizes, txn)
        assert after is not None and after.fields == case["expected"], case["name"]
    refused = [c for c in cases if c.get("previous_refused")]
    assert len(refused) == 2
    for case in refused:
        previous = parse_checksum(orjson.dumps(case["previous"]))
        assert checksum_after_append(previous, [1], "t") is None, case["name"]


def test_parse_checksum_names_what_is_wrong():
    with pytest.raises(ChecksumError, match="not valid JSON"):
        parse_checksum(b"{")
    with pytest.raises(ChecksumError, match="numFiles"):
        parse_checksum(json.dumps({k: v for k, v in PREVIOUS.items() if k != "numFiles"}).encode())


@pytest.mark.spark
@pytest.mark.parametrize(
    # The two jars (SDK v2 on 4.2, SDK v1 on 3.5) in `make test`; 4.0 in `make soak`.
    "line",
    ["4.2", "3.5", pytest.param("4.0", marks=pytest.mark.long)],
)
def test_spark_validates_the_python_committers_checksums(line, localstack, ls_bucket, tmp_path):
    python = sys.executable if line == "4.2" else str(ensure(by_name(line)))
    done = subprocess.run(
        [
            python,
            "-m",
            "deltaguard.localstack.checksum_check",
            f"s3a://{ls_bucket}/t",
            localstack.endpoint.url,
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["spark_version"].startswith(by_name(line).spark + "."), report
    assert report["python_checksums"] == report["python_versions"] == [2, 3], report
    assert report["rows"] == 24, report
    assert report["snapshot_version"] == 3 and report["snapshot_has_checksum"], report
    assert report["checksum_valid"], report
    assert report["last_version"] == 4 and report["last_has_checksum"], report
    assert report["last_checksum_valid"], report
    assert SNAPSHOT_JOB not in report["next_append_jobs"], report
    # One job, the write: the Python committer's N.crc lists no files, and the preset's
    # allFilesInCrc.enabled=false keeps Delta from collecting the table's files to derive the
    # list for its own N.crc (with Delta's default: a second job, that collect).
    assert len(report["next_append_jobs"]) == 1, report
