"""Shared fixtures: the test bed servers, started and stopped by these fixtures (by PID), and
``run_cli``.

A server that cannot start (LocalStack or the jars not installed, a port problem) makes the
tests that need it ERROR with the reason; nothing is skipped.

Tiers (markers, see pyproject): ``spark`` tests start Spark driver JVMs (marked by hand, and
every test using ``spark_tables``); ``servers`` tests talk to LocalStack or moto (every test
using a server fixture, and test_localstack.py). ``make test-fast`` runs ``not spark``. Both
``make test`` and ``make test-fast`` run on two pytest-xdist workers (groups: below).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from s3_buckets import new_bucket, new_bucket_with_credentials

from deltaguard.localstack.fault_proxy import FaultProxy
from deltaguard.localstack.localstack_server import LocalStackServer
from deltaguard.localstack.minio_server import MinIOServer
from deltaguard.localstack.moto_server import MotoServer
from deltaguard.localstack.versitygw_server import VersityGWServer
from deltaguard.logstore.s3_conditional import forget_verifications

#: Fixtures that start (or need) a test server / Spark drivers: their tests get the marker.
SERVER_FIXTURES = frozenset(
    {
        "localstack",
        "moto",
        "versitygw",
        "minio",
        "ls_bucket",
        "moto_bucket",
        "ls_proxy",
        "ls_commit_table",
    }
)
SPARK_FIXTURES = frozenset({"spark_tables", "failed_jobs"})

#: The Spark modules of the second Spark group. With one Spark group, one worker ran every
#: Spark test (36 of the suite's 37 minutes) while the other finished the rest in half that
#: time and idled. None of these uses :data:`SPARK_FIXTURES` (the session's Spark tables would
#: otherwise be built on both workers); most start spark-submit drivers that wait on the test
#: servers more than they compute, so two groups at once share the cores well.
SPARK_B_MODULES = frozenset(
    {
        "test_spark_commits",
        "test_spark_lines_e2e",
        "test_streaming",
        "test_fanout",
        "test_go_s3_servers",
        "test_commit_metrics_spark",
        "test_lost_commits",
        "test_log_cleanup_live",
    }
)
#: Groups sorted first: with ``--no-loadscope-reorder`` pytest-xdist queues the groups in the
#: order of the collection and gives each worker the first one it has not given yet, so
#: ``spark`` starts on one worker and ``spark-b`` on the other.
FIRST_GROUPS = ("spark", "spark-b")


def pytest_itemcollected(item: pytest.Item) -> None:
    """Adds, as each test is collected, the tier markers by the fixtures it uses (``servers``,
    ``spark``), and the group it runs in under ``pytest -n 2 --dist loadgroup`` (``make test``,
    ``make test-fast``): the ``spark`` tests in two groups, ``spark`` and ``spark-b``
    (:data:`SPARK_B_MODULES`), each run one test after another on its own worker (see
    :func:`pytest_collection_modifyitems`), and every other test in its module's group, so a
    module's fixtures are set up once, on the worker beside them. At collection, not later:
    pytest-xdist reads the groups in its own ``pytest_collection_modifyitems``, before this
    file's."""
    used = set(getattr(item, "fixturenames", ()))
    if used & SERVER_FIXTURES:
        item.add_marker(pytest.mark.servers)
    if used & SPARK_FIXTURES:
        item.add_marker(pytest.mark.spark)
    module = getattr(item, "module", None)
    if item.get_closest_marker("spark") is not None:
        name = module.__name__ if module is not None else ""
        group = "spark-b" if name in SPARK_B_MODULES else "spark"
    else:
        group = module.__name__ if module is not None else item.nodeid
    item.add_marker(pytest.mark.xdist_group(group))


def _group(item: pytest.Item) -> str:
    marker = item.get_closest_marker("xdist_group")
    return str(marker.args[0]) if marker is not None and marker.args else ""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Puts the tests of :data:`FIRST_GROUPS` first, in that order (stable: each group keeps
    its tests' order)."""
    rank = {group: at for at, group in enumerate(FIRST_GROUPS)}
    items.sort(key=lambda item: rank.get(_group(item), len(rank)))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Refuses a pytest-xdist worker's ``--dist loadgroup`` collection whose tests lost their
    groups (pytest-xdist suffixes each nodeid with ``@<group>``; a pytest that ignores the
    suffix would let two Spark tests run at once, on both workers, each building the
    session's Spark tables)."""
    if getattr(session.config.option, "loadgroup", False):  # set on the workers only
        lost = [item.nodeid for item in session.items if "@" not in item.nodeid]
        if lost:
            raise pytest.UsageError(
                f"--dist loadgroup: {len(lost)} tests without a group, e.g. {lost[0]}"
            )


#: The installed console script: the CLI is tested as a user runs it, in its own process.
DELTAGUARD = str(Path(sys.executable).with_name("deltaguard"))

RunCli = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture(scope="session")
def run_cli() -> RunCli:
    """``run_cli(*args, env=None, cwd=None, timeout=600)``: runs ``deltaguard ARGS`` in a
    subprocess and returns the CompletedProcess (text; a non-zero exit is returned, not raised).
    ``env`` is added to the environment; ``cwd`` is the working directory."""

    def run(
        *args: str,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = 600,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [DELTAGUARD, *args],
            capture_output=True,
            text=True,
            check=False,
            cwd=cwd,
            env={**os.environ, **(env or {})},
            timeout=timeout,
        )

    return run


@pytest.fixture(scope="session")
def localstack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStackServer]:
    with LocalStackServer(tmp_path_factory.mktemp("localstack")) as server:
        yield server


@pytest.fixture(scope="session")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with MotoServer(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture(scope="session")
def versitygw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VersityGWServer]:
    """versitygw, the second real S3 server (S3 only); not installed = an error, not a skip."""
    with VersityGWServer(tmp_path_factory.mktemp("versitygw")) as server:
        yield server


@pytest.fixture(scope="session")
def minio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MinIOServer]:
    """MinIO, the third real S3 server (S3 only); not installed = an error, not a skip."""
    with MinIOServer(tmp_path_factory.mktemp("minio")) as server:
        yield server


@pytest.fixture
def ls_bucket(localstack: LocalStackServer) -> str:
    """A fresh bucket on LocalStack."""
    return new_bucket(localstack.endpoint)


@pytest.fixture
def minio_bucket(minio: MinIOServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket on MinIO, with MinIO's credentials in the environment (boto3's and
    delta-rs' default chains read them)."""
    return new_bucket_with_credentials(minio.endpoint, monkeypatch)


@pytest.fixture
def moto_bucket(moto: MotoServer) -> str:
    """A fresh bucket on moto."""
    return new_bucket(moto.endpoint)


@pytest.fixture
def ls_proxy(localstack: LocalStackServer, tmp_path: Path) -> Iterator[FaultProxy]:
    """A fault proxy in front of LocalStack, with no rules yet."""
    with FaultProxy(localstack.endpoint, tmp_path, seed=7) as proxy:
        yield proxy


@pytest.fixture(autouse=True)
def _fresh_verifications() -> Iterator[None]:
    """Each test probes its endpoints afresh (the proxy's port differs per test anyway)."""
    forget_verifications()
    yield
    forget_verifications()


@pytest.fixture(autouse=True)
def _fresh_default_session() -> Iterator[None]:
    """Each test's boto3 clients resolve credentials from its own environment: boto3's default
    session caches the credentials it first resolved, so a test that ran the CLI in this
    process with LocalStack's keys would hand them to the next test's MinIO client."""
    import boto3

    boto3.DEFAULT_SESSION = None
    yield
    boto3.DEFAULT_SESSION = None


@pytest.fixture
def ls_commit_table(localstack: LocalStackServer) -> str:
    """A fresh DynamoDB commit table on LocalStack (Delta's schema, TTL on expireTime)."""
    from deltaguard.logstore.dynamodb_table import create_table

    name = f"delta_log_{uuid.uuid4().hex[:10]}"
    create_table(localstack.endpoint.dynamodb_client(), name)
    return name


@pytest.fixture(scope="session")
def spark_tables(tmp_path_factory: pytest.TempPathFactory):
    """Delta tables written by real Spark Delta, once per session, with Spark's own live file
    list per version (see deltaguard.localstack.delta_tables). Treat them as read-only: copy a
    table (``copy_table``) before damaging it. ``DELTAGUARD_SPARK_TABLES=DIR`` reuses tables a
    previous ``python -m deltaguard.localstack.delta_tables DIR`` wrote (local iteration only)."""
    import os

    from deltaguard.localstack.delta_tables import build_tables, load_tables

    prebuilt = os.environ.get("DELTAGUARD_SPARK_TABLES")
    if prebuilt:
        return load_tables(Path(prebuilt))
    return build_tables(tmp_path_factory.mktemp("spark-tables"))


@pytest.fixture(scope="session")
def failed_jobs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A Spark-written table with failed jobs and a killed driver, and what Spark's VACUUM
    DRY RUN says about it (deltaguard.localstack.failed_job ``fixture``), once per session.
    Read-only: copy it before cleaning it."""
    from deltaguard.localstack.failed_job import build_fixture

    out = tmp_path_factory.mktemp("failed-jobs")
    return out / "events", build_fixture(out)
