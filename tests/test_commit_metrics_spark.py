"""Issue 50 part 4, JVM side: two Spark drivers race on one table, one through deltaguard's
``s3-conditional`` LogStore, one through its ``s3-dynamodb-transition`` LogStore (a migration's
phase 2: both create N.json only with If-None-Match). One commit PUT is held by the fault proxy
until the other driver's PUT of the same version is answered, so one commit is lost to the
other writer, every time. Each driver's own Prometheus servlet (turned on by the presets'
settings, the UI serving it) shows the commit metrics of the source ``deltaguard``: the
conflicts the race caused, and commits that add up to exactly the versions the drivers wrote
(the raw S3 listing). Each data version's provenance mark (raw HeadObject) names the store that
counted it: the transition store marks its commits too (issue 50 part 1)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from deltaguard.localstack.append_job import arrow_schema, python_log_store
from deltaguard.localstack.delta_append import create_table
from deltaguard.localstack.multi_driver import RESULT_PREFIX, driver_env
from deltaguard.localstack.race import hold_one_commit_put
from deltaguard.logstore.commit_names import commit_version
from deltaguard.logstore.jars import VERSION
from deltaguard.logstore.preset_name import PresetName

pytestmark = pytest.mark.spark
DRIVER = Path(__file__).with_name("commit_metrics_driver.py")
APPENDS = 2
#: ``metrics_<app id>_driver_deltaguard_<name>_Count{type="counters"} <value>`` (Spark's
#: PrometheusServlet); a timer's count has ``type="timers"``.
COUNT = re.compile(
    r'^metrics_\w+_driver_deltaguard_(\w+)_Count\{type="(?:counters|timers)"\} (\d+)$'
)


def _counts(lines: list[str]) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in map(COUNT.match, lines) if m}


def test_two_driver_race_shows_conflicts_and_commits_in_prometheus(
    localstack, ls_proxy, ls_bucket, ls_commit_table, tmp_path
):
    table = f"{ls_bucket}/metrics"
    create_table(
        python_log_store(localstack.endpoint.url, PresetName.S3_CONDITIONAL, "unused"),
        f"s3://{table}",
        arrow_schema(),
    )
    ls_proxy.set_rules([hold_one_commit_put()])
    stores = [PresetName.S3_CONDITIONAL, PresetName.S3_DYNAMODB_TRANSITION]
    procs = []
    for writer, store in enumerate(stores):
        log = (tmp_path / f"driver-{writer}.log").open("w")
        args = ["--table", f"s3a://{table}", "--endpoint", ls_proxy.endpoint.url]
        args += ["--writer", str(writer), "--appends", str(APPENDS)]
        args += ["--local-dir", str(tmp_path / f"spark-{writer}")]
        args += ["--logstore", store.value, "--dynamodb-table", ls_commit_table]
        procs.append(
            subprocess.Popen(
                [sys.executable, str(DRIVER), *args],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=driver_env(localstack.endpoint),
            )
        )
    scrapes = []
    for writer, proc in enumerate(procs):
        out, _ = proc.communicate(timeout=600)
        results = [line for line in out.splitlines() if line.startswith(RESULT_PREFIX)]
        assert proc.returncode == 0 and results, (tmp_path / f"driver-{writer}.log").read_text()
        scrapes.append(json.loads(results[-1][len(RESULT_PREFIX) :]))
    assert ls_proxy.fired() == [1], "the race was staged"
    keys = localstack.endpoint.s3_client().list_objects_v2(
        Bucket=ls_bucket, Prefix="metrics/_delta_log/"
    )["Contents"]
    versions = sorted(
        v for k in keys if (v := commit_version(k["Key"].rsplit("/", 1)[1])) is not None
    )
    assert versions == list(range(2 * APPENDS + 1)), "version 0 (Python) + every append"
    counts = dict(zip(stores, (_counts(scrape["lines"]) for scrape in scrapes), strict=True))
    assert all(c["commits"] == APPENDS for c in counts.values()), scrapes
    assert sum(c["commits"] for c in counts.values()) == len(versions) - 1
    assert sum(c["conflicts"] for c in counts.values()) >= 1, scrapes
    for c in counts.values():
        assert c["outcomes_unknown"] == 0 and c["failures"] == 0, scrapes
        assert c["commit_latency"] == c["commits"] + c["conflicts"], scrapes
        # no fault but the hold, whose 412 the held PUT settles as a conflict
        assert c["settles"] == 0, scrapes
    # one conditional PUT per commit
    conditional = counts[PresetName.S3_CONDITIONAL]
    assert conditional["attempts"] == conditional["commits"] + conditional["conflicts"], scrapes
    # a PutItem and a PUT per commit; a conflict found at the start sends neither
    transition = counts[PresetName.S3_DYNAMODB_TRANSITION]
    assert 2 * transition["commits"] <= transition["attempts"], scrapes
    assert transition["attempts"] <= 2 * (transition["commits"] + transition["conflicts"]), scrapes
    s3 = localstack.endpoint.s3_client()
    marks = [
        s3.head_object(Bucket=ls_bucket, Key=f"metrics/_delta_log/{v:020d}.json")["Metadata"]
        for v in versions[1:]
    ]
    for store in stores:
        mark = {"deltaguard-commit": f"{store.value}/jvm/{VERSION}"}
        assert marks.count(mark) == counts[store]["commits"], marks
