"""The distribution: one wheel carrying the plugin jar and the whole `deltaguard` namespace."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

from deltaguard.logstore.jars import JAR_NAMES
from deltaguard.spark_conf.jvm_deps import cache_dir

REPO = Path(__file__).resolve().parents[1]


def test_wheel_carries_jar_and_namespace(tmp_path):
    uv = os.environ.get("UV") or str(cache_dir() / "bootstrap" / "bin" / "uv")
    # setuptools writes build/ into the project it builds: build a copy, not the work tree
    source = tmp_path / "src"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "*.egg-info", "target", "__pycache__", ".*_cache"
        ),
    )
    out = subprocess.run(
        [uv, "build", "--wheel", "-q", "-o", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    (wheel,) = tmp_path.glob("deltaguard-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for jar in JAR_NAMES.values():
        assert f"deltaguard/logstore/jars/{jar}" in names
    assert "deltaguard/testbed/install.sh" in names
    assert "deltaguard/tools/deltalog/snapshot.py" in names
    top_level = {n.split("/")[0] for n in names if not n.startswith("deltaguard-")}
    assert top_level == {"deltaguard"}, "no top-level module besides deltaguard"
    assert not [n for n in names if n.startswith("deltaguard/__init__")], (
        "deltaguard is a namespace"
    )
