"""Short soaks (`make soak` runs the 15-minute one): mixed Spark, Python and delta-rs writers
with seeded faults, SIGKILLs and orphan cleanup while they write, checked by readers that did
not write.

On LocalStack (about 3 minutes) and on versitygw, the second real S3 server (shorter, one Spark
driver). A violation fails with the soak's own account; its work directory keeps the logs, the
ledgers and a copy of the tables.
"""

from __future__ import annotations

import re

import pytest

from deltaguard.localstack.soak import SoakConfig, SoakResult, run_soak

pytestmark = pytest.mark.spark
SUMMARY = re.compile(
    r"^soak: (\d+) commits, (\d+) faults injected, (\d+) kills, (\d+) files deleted while "
    r"writing, 0 lost, 0 duplicated, 0 missing files, audit healthy$"
)


def _assert_clean(result: SoakResult, workdir, deletes_while_writing: bool) -> None:
    line = result.summary_line()
    print(line, result.details)
    detail = "\n".join([line, *result.verdict.violations[:20], *result.problems[:20], str(workdir)])
    assert result.ok, detail
    assert SUMMARY.match(line), detail
    assert result.commits >= 30 and result.faults >= 5 and result.kills >= 1, detail
    if deletes_while_writing:
        assert result.deleted_while_writing > 0, f"cleanup deleted nothing while writing: {detail}"
    engines = {key.split()[0] for key, n in result.details["outcomes"].items() if "ok" in key}
    assert engines == {"spark", "python", "deltars"}, f"every engine committed: {detail}"


def test_soak_three_minutes_on_localstack(localstack, tmp_path):
    """Cleanup passes every 35 s (each takes some 40 s on the loaded 2-core machine) with an
    80 s retention delete files writers abandoned while the writers go on; nothing live is
    lost."""
    config = SoakConfig(
        duration_s=140, seed=17, kill_every_s=40, orphans_every_s=35, cleanup_retention_s=80
    )
    _assert_clean(run_soak(localstack.endpoint, config, tmp_path), tmp_path, True)


def test_short_soak_on_versitygw(versitygw, tmp_path):
    config = SoakConfig(
        duration_s=60,
        seed=23,
        tables=2,
        spark_writers=1,
        kill_every_s=25,
        orphans_every_s=25,
        cleanup_retention_s=100,
    )
    _assert_clean(run_soak(versitygw.endpoint, config, tmp_path), tmp_path, False)
