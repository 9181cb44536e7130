"""The test bed's class data sharing archive (deltaguard.localstack.class_archive): a driver
uses it, and a damaged archive is never put in place."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deltaguard.localstack.class_archive import (
    archive_options,
    archive_path,
    class_path_file,
    usable,
)
from deltaguard.spark_conf.session import class_path, default_jars

pytestmark = pytest.mark.spark

CLASS_PATH = class_path(default_jars())

#: A test-bed driver that only starts and stops.
_DRIVER = """
import sys
from pathlib import Path
from deltaguard.localstack.spark_driver import build_test_session
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.storage import LocalStorage
spark = build_test_session(LocalStorage(), PresetName.LOCAL, local_dir=Path(sys.argv[1]))
spark.stop()
"""


def test_a_test_bed_driver_starts_on_the_archive(tmp_path: Path) -> None:
    options = archive_options(CLASS_PATH)  # created now if this machine has none yet
    assert options.startswith(f"-XX:SharedArchiveFile={archive_path(CLASS_PATH)} ")
    # Every JVM of the driver (spark-submit's launcher too) logs where each class came from.
    log = f"-Xlog:class+load=info:file={tmp_path}/classes-%p.log"
    out = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env={**os.environ, "JAVA_TOOL_OPTIONS": log},
    )
    loads = "".join(p.read_text() for p in tmp_path.glob("classes-*.log"))
    # "top": the archive named by SharedArchiveFile (the JDK's own base archive is "shared
    # objects file" alone), so Spark's classes came from this archive, not from their jars.
    assert "org.apache.spark.SparkContext source: shared objects file (top)" in loads, out.stderr[
        -2000:
    ]


def test_a_truncated_archive_is_not_usable(tmp_path: Path) -> None:
    archive = archive_path(CLASS_PATH)
    archive_options(CLASS_PATH)
    dumped_on = class_path_file(archive).read_text()
    good = tmp_path / "good.jsa"
    shutil.copyfile(archive, good)
    truncated = tmp_path / "truncated.jsa"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    # A JVM that maps a truncated archive crashes (SIGBUS): the check runs in its own process
    # and says no, so _create never moves such a file into place.
    assert not usable(truncated, dumped_on)
    assert not usable(tmp_path / "missing.jsa", dumped_on)
    assert usable(good, dumped_on)
