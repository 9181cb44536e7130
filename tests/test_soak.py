"""Short soaks (`make soak` runs the 15-minute one and the long variants here): mixed Spark,
Python and delta-rs writers with seeded faults, SIGKILLs and orphan cleanup while they write,
checked by readers that did not write.

On LocalStack (a 90-second smoke run in `make test`, 3 minutes in `make soak`), on versitygw,
the second real S3 server (Python and delta-rs writers for 40 s in `make test`, cleanup with a
15 s retention deleting while they write; with a Spark driver for 60 s in `make soak`), and on MinIO, the third (with a Spark driver for 60 s, in
`make soak` only). A violation fails with the soak's own account; its work directory keeps the
logs, the ledgers and a copy of the tables.
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
    config: SoakConfig,
    deletes_while_writing: bool,
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
    writing = {
        engine
        for engine, writers in (
            ("spark", config.spark_writers),
            ("python", config.python_writers),
            ("deltars", config.deltars_writers),
        )
        if writers
    }
    assert engines == writing, f"every engine committed: {detail}"


@pytest.mark.parametrize(
    "config",
    [
        # Shortened: two tables, one Spark driver, cleanup passes every 20 s with a 60 s
        # retention deleting what killed writers abandoned while the others go on.
        pytest.param(
            SoakConfig(
                duration_s=90,
                seed=17,
                tables=2,
                spark_writers=1,
                kill_every_s=30,
                orphans_every_s=20,
                cleanup_retention_s=60,
            ),
            id="90-second-smoke",
            marks=pytest.mark.long,  # suite budget: make soak (with the soak itself)
        ),
        # Cleanup passes every 35 s (each takes some 40 s on the loaded 2-core machine) with
        # an 80 s retention.
        pytest.param(
            SoakConfig(
                duration_s=140, seed=17, kill_every_s=40, orphans_every_s=35, cleanup_retention_s=80
            ),
            id="3-minutes",
            marks=pytest.mark.long,
        ),
    ],
)
def test_soak_on_localstack(config, localstack, tmp_path):
    """Cleanup deletes files writers abandoned while the writers go on; nothing live is lost."""
    _assert_clean(run_soak(localstack.endpoint, config, tmp_path), tmp_path, config, True)


@pytest.mark.parametrize(
    ("config", "min_commits", "deletes"),
    [
        # The Python and delta-rs writers only (Spark's commits on versitygw: the staged race
        # of test_go_s3_servers.py and the long variant). Retention 15 s (the write deadline
        # 5 s): the passes delete what killed or abandoning writers left while the others go
        # on, which is asserted, and checked against delta-rs's reading of every version.
        pytest.param(
            SoakConfig(
                duration_s=40,
                seed=23,
                tables=2,
                spark_writers=0,
                kill_every_s=10,
                orphans_every_s=10,
                cleanup_retention_s=15,
            ),
            15,
            True,
            id="40-second-smoke-without-spark",
        ),
        # Retention 100 s: its passes delete nothing while writing (not asserted).
        pytest.param(
            SoakConfig(
                duration_s=60,
                seed=23,
                tables=2,
                spark_writers=1,
                kill_every_s=25,
                orphans_every_s=25,
                cleanup_retention_s=100,
            ),
            30,
            False,
            id="60-seconds-with-spark",
            marks=pytest.mark.long,
        ),
    ],
)
# proves: docs/guides/cleanup.md "By default only `orphan` and `log-temp` files go, and no
# retained log entry names those" and "a writer's files are safe as long as it commits within
# the retention", next to writers that are killed and restarted
def test_soak_on_versitygw(config, min_commits, deletes, versitygw, tmp_path):
    """Cleanup passes next to killed writers: what they deleted (their manifests) is gone from
    the bucket and named by no version of the table as delta-rs reads it, every version
    loaded (none skipped)."""
    result = run_soak(versitygw.endpoint, config, tmp_path)
    _assert_clean(result, tmp_path, config, deletes, min_commits)
    _assert_deleted_only_unreferenced(versitygw.endpoint, tmp_path / "manifests")


def _assert_deleted_only_unreferenced(endpoint, manifests) -> None:
    """Every file a cleanup pass recorded as deleted is absent from the raw S3 listing and
    named by no version of its table: delta-rs loads each version from 0 to the latest and its
    ``add`` actions (raw log paths, decoded here) are the references. These tables have no
    deletion vectors and no absolute paths (Python and delta-rs writers)."""
    from urllib.parse import unquote

    import pyarrow as pa
    from deltalake import DeltaTable

    from deltaguard.logstore.s3_location import S3Location
    from deltaguard.tools.orphans import read_manifest

    deleted: dict[str, set[str]] = {}
    for directory in sorted(manifests.glob("*/manifest.json")):
        manifest = read_manifest(directory.parent)
        table = manifest.summary["table"]
        deleted.setdefault(table, set()).update(manifest.paths("deleted"))
    s3 = endpoint.s3_client()
    for table, paths in deleted.items():
        options = endpoint.delta_rs_options()
        latest = DeltaTable(table, storage_options=options).version()
        referenced: set[str] = set()
        for version in range(latest + 1):
            adds = DeltaTable(table, version=version, storage_options=options).get_add_actions()
            referenced |= {unquote(p) for p in pa.table(adds).column("path").to_pylist()}
        assert not paths & referenced, f"{table}: deleted files a version names"
        loc = S3Location.parse(f"{table}/")
        listed = {
            o["Key"].removeprefix(loc.key)
            for page in s3.get_paginator("list_objects_v2").paginate(
                Bucket=loc.bucket, Prefix=loc.key
            )
            for o in page.get("Contents", [])
        }
        assert not paths & listed, f"{table}: files recorded deleted are still there"


@pytest.mark.long
def test_soak_on_minio(minio, tmp_path):
    """``make soak`` only: Spark, Python and delta-rs writers on MinIO for 60 s with faults,
    kills and cleanup passes (retention 100 s: they delete nothing while writing, not
    asserted). The short MinIO runs in ``make test`` are test_go_s3_servers.py's races."""
    config = SoakConfig(
        duration_s=60,
        seed=29,
        tables=2,
        spark_writers=1,
        kill_every_s=25,
        orphans_every_s=25,
        cleanup_retention_s=100,
    )
    _assert_clean(run_soak(minio.endpoint, config, tmp_path), tmp_path, config, False, 30)
