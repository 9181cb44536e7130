"""The README's commit-path example, run as a user runs it: `deltaguard conf render ... >
lake.properties`, then `spark-submit --properties-file lake.properties my_job.py` (the venv's
pyspark), then `deltaguard audit`, against LocalStack.

The machine is the one the README's setup leaves: a home whose `~/.m2` the project's own Maven
resolve has used, so it holds POM-only entries (versions Maven read while mediating and never
fetched the jar of). Spark's default Ivy chain takes such a POM from `~/.m2` and then fails
with "download failed: ...jar" before the job starts. The home is a private copy (hard links)
of this user's `~/.m2`, never the user's own; deltaguard's jar cache is reused
(`DELTAGUARD_CACHE`), so nothing is downloaded.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deltaguard.localstack.localstack_server import LocalStackServer
from deltaguard.spark_conf.jvm_deps import cache_dir

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
JOB = """\
from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("readme-job").getOrCreate()
spark.range(10).write.format("delta").mode("append").save("{table}")
spark.stop()
"""


def readme_commit_path_commands() -> list[str]:
    """The shell lines of the README's commit-path block (render, then spark-submit): the bash
    block of its "Quick start" section that runs spark-submit."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = [
        b for b in re.findall(r"```bash\n(.*?)```", section, re.DOTALL) if "spark-submit" in b
    ]
    assert len(blocks) == 1, "README's Quick start has no (or several) spark-submit blocks"
    return [line for line in blocks[0].splitlines() if line.strip()]


def pom_only_modules(repository: Path) -> list[Path]:
    """Version directories of jar modules holding a POM but no jar."""
    found = []
    for pom in repository.rglob("*.pom"):
        if any(pom.parent.glob("*.jar")):
            continue
        if "<packaging>pom</packaging>" in pom.read_text(errors="replace"):
            continue  # a parent or BOM: it has no jar anyway
        found.append(pom.parent)
    return found


def test_readme_spark_submit_example_commits(localstack: LocalStackServer, tmp_path: Path):
    render, submit = readme_commit_path_commands()
    assert render.startswith("deltaguard conf render s3-conditional "), render
    assert submit == "spark-submit --properties-file lake.properties my_job.py", submit

    home = tmp_path / "home"
    home.mkdir()
    user_m2 = Path.home() / ".m2"
    subprocess.run(["cp", "-al", str(user_m2), str(home / ".m2")], check=True)
    stale = pom_only_modules(home / ".m2" / "repository")
    assert stale, f"{user_m2} holds no POM-only entries: run `make jar jars` first"

    endpoint = localstack.endpoint
    bucket = "readme-" + os.urandom(4).hex()
    endpoint.s3_client().create_bucket(Bucket=bucket)
    command, redirect, target = render.partition(" > ")
    render = f"{command} --endpoint {endpoint.url} --path-style{redirect}{target}"
    script = "\n".join(["set -e", render, submit]).replace("s3://lake/", f"s3://{bucket}/")
    work = tmp_path / "job"
    work.mkdir()
    (work / "my_job.py").write_text(JOB.format(table=f"s3a://{bucket}/events"))
    env = {
        **os.environ,
        **endpoint.credentials_env(),
        "HOME": str(home),
        "DELTAGUARD_CACHE": str(cache_dir()),  # the jar cache the machine already holds
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        # the test bed's JIT and GC for a short job on a small machine, outside the command
        "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }
    env.pop("SPARK_HOME", None)
    assert shutil.which("spark-submit", path=env["PATH"]) == str(VENV_BIN / "spark-submit")
    out = subprocess.run(
        ["bash", "-c", script],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    log = f"{script}\n{out.stdout[-3000:]}\n{out.stderr[-6000:]}"
    assert out.returncode == 0, log
    assert "download failed" not in out.stderr, log

    audit = subprocess.run(
        [
            str(VENV_BIN / "deltaguard"),
            "audit",
            f"s3://{bucket}/events",
            "--endpoint",
            endpoint.url,
            "--path-style",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert audit.returncode == 0, f"{audit.stdout}\n{audit.stderr}"
    first = endpoint.s3_client().get_object(
        Bucket=bucket, Key="events/_delta_log/00000000000000000000.json"
    )
    assert b'"numOutputRows":"10"' in first["Body"].read()
