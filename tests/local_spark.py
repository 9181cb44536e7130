"""The local Spark session the orphans engine tests share (one per module): ``local[2]`` on
local disk with the ``local`` preset, its Python workers on this venv."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from deltaguard.localstack.spark_driver import build_test_session
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.storage import LocalStorage


@contextmanager
def local_spark_session(
    tmp_path_factory: pytest.TempPathFactory,
    app_name: str,
    *,
    env: dict[str, str] | None = None,
    extra_conf: dict[str, str] | None = None,
) -> Iterator[Any]:
    """A session named ``app_name``, stopped on exit. ``PYSPARK_PYTHON`` (this interpreter)
    and ``env`` are set in this process while the session lives and passed to the executors
    (``spark.executorEnv.*``: a JVM that an earlier module's session launched, and pyspark
    keeps one per process, does not have this environment); the old values come back after."""
    env = {"PYSPARK_PYTHON": sys.executable, **(env or {})}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        session = build_test_session(
            LocalStorage(),
            PresetName.LOCAL,
            app_name=app_name,
            master="local[2]",
            local_dir=tmp_path_factory.mktemp(app_name),
            extra_conf={
                **{f"spark.executorEnv.{k}": v for k, v in env.items()},
                **(extra_conf or {}),
            },
        )
        try:
            yield session
        finally:
            session.stop()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
