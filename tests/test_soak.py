"""Short soaks (`make soak` runs the 15-minute one and the long variants here): mixed Spark,
Python and delta-rs writers with seeded faults, SIGKILLs and orphan cleanup while they write,
checked by readers that did not write.

On LocalStack (a 90-second smoke run in `make test`, 3 minutes in `make soak`) and on versitygw,
the second real S3 server (Python and delta-rs writers for 30 s in `make test`; with a Spark
driver for 60 s in `make soak`). A violation fails with the soak's own account; its work
directory keeps the logs, the ledgers and a copy of the tables.
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


def _assert_clean(
    result: SoakResult,
    workdir,
    deletes_while_writing: bool,
    engines_committing: frozenset[str] = frozenset({"spark", "python", "deltars"}),
    min_commits: int = 30,
) -> None:
    line = result.summary_line()
    print(line, result.details)
    detail = "\n".join([line, *result.verdict.violations[:20], *result.problems[:20], str(workdir)])
    assert result.ok, detail
    assert SUMMARY.match(line), detail
    assert result.commits >= min_commits and result.faults >= 5 and result.kills >= 1, detail
    if deletes_while_writing:
        assert result.deleted_while_writing > 0, f"cleanup deleted nothing while writing: {detail}"
    engines = {key.split()[0] for key, n in result.details["outcomes"].items() if "ok" in key}
    assert engines == engines_committing, f"every engine committed: {detail}"


def test_soak_smoke_on_localstack(localstack, tmp_path):
    """The 3-minute soak below, shortened: two tables, one Spark driver, cleanup passes every
    20 s with a 60 s retention deleting what killed writers abandoned while the others go on."""
    config = SoakConfig(
        duration_s=90,
        seed=17,
        tables=2,
        spark_writers=1,
        kill_every_s=30,
        orphans_every_s=20,
        cleanup_retention_s=60,
    )
    _assert_clean(run_soak(localstack.endpoint, config, tmp_path), tmp_path, True)


@pytest.mark.long
def test_soak_three_minutes_on_localstack(localstack, tmp_path):
    """Cleanup passes every 35 s (each takes some 40 s on the loaded 2-core machine) with an
    80 s retention delete files writers abandoned while the writers go on; nothing live is
    lost."""
    config = SoakConfig(
        duration_s=140, seed=17, kill_every_s=40, orphans_every_s=35, cleanup_retention_s=80
    )
    _assert_clean(run_soak(localstack.endpoint, config, tmp_path), tmp_path, True)


def test_soak_smoke_on_versitygw_without_spark(versitygw, tmp_path):
    """The Python and delta-rs writers only (Spark's commits on versitygw: the staged race of
    test_versitygw.py and the long variant below)."""
    config = SoakConfig(
        duration_s=30,
        seed=23,
        tables=2,
        spark_writers=0,
        kill_every_s=10,
        orphans_every_s=10,
        cleanup_retention_s=100,
    )
    _assert_clean(
        run_soak(versitygw.endpoint, config, tmp_path),
        tmp_path,
        False,
        engines_committing=frozenset({"python", "deltars"}),
        min_commits=15,
    )


@pytest.mark.long
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
