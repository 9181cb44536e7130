"""The benchmark's writer orchestration without a Spark JVM: deltaguard's Python writer and
delta-rs writers behind the start barrier, in rounds on fresh tables, through the fault proxy,
verified by delta-rs. (The Spark drivers run the same barrier in ``make bench``.)"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from deltaguard.localstack.fault_proxy import FaultProxy
from deltaguard.localstack.multi_driver import run_multi_driver_rounds
from deltaguard.logstore.preset_name import PresetName

pytestmark = pytest.mark.servers


@pytest.mark.slow
def test_python_and_deltars_writers_start_together_in_rounds(
    localstack, ls_proxy: FaultProxy, ls_bucket: str, tmp_path: Path
):
    marks: list[dict[str, Any]] = []
    released_at: list[float] = []  # per round: every writer ready, its "go" not yet written

    def on_all_ready() -> None:
        marks.append(ls_proxy.stats())
        released_at.append(time.time())

    results = run_multi_driver_rounds(
        f"s3a://{ls_bucket}/rounds",
        writer_endpoint_url=ls_proxy.endpoint.url,
        reader_endpoint_url=localstack.endpoint.url,
        logstore=PresetName.S3_CONDITIONAL,
        writers=0,
        python_writers=2,
        deltars_writers=1,
        appends=3,
        workdir=tmp_path,
        start_together=True,
        on_all_ready=on_all_ready,
        rounds=2,
        verify_with_deltars=True,
    )
    assert len(marks) == 2, "one release per round"
    assert len(results) == 2
    for round_no, result in enumerate(results):
        assert not result.lost_tags and not result.duplicated_tags and not result.failed_appends
        assert len(result.found_tags) == 9, result.summary()
        assert result.found_rows == 9 * result.rows_per_append
        assert result.versions_contiguous
        assert len(result.commit_call_s) == 9 and min(result.commit_call_s) > 0
        assert {r["engine"] for r in result.reports} == {"python", "delta-rs"}
        # Every writer was released by the same "go": each was ready before it (its ready file
        # was written before the release), none began appending before it. (Order of events,
        # one clock: no bound on how long anything took.)
        barrier = tmp_path / f"{result.run_id}-barrier"
        ready = [p.stat().st_mtime for p in barrier.glob(f"ready-r{round_no}-w*")]
        assert len(ready) == 3 and max(ready) <= released_at[round_no], (ready, released_at)
        starts = [r["first_append_at"] for r in result.reports]
        assert min(starts) >= released_at[round_no], (starts, released_at)
        assert result.commits_per_second > 0
    first, second = results
    assert min(r["first_append_at"] for r in second.reports) >= max(
        r["last_append_at"] for r in first.reports
    ), "round 2 starts once every writer finished round 1"
    assert marks[1]["by_kind"]["s3 PutObject"] > marks[0]["by_kind"].get("s3 PutObject", 0)
