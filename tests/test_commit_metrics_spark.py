"""Issue 50 part 4, JVM side: two Spark drivers race on one table, one through deltaguard's
``s3-conditional`` LogStore, one through its ``s3-dynamodb-transition`` LogStore (a migration's
phase 2: both create N.json only with If-None-Match). One commit PUT is held by the fault proxy
until the other driver's PUT of the same version is answered, so one commit is lost to the
other writer, every time. Each driver's own Prometheus servlet (turned on by the presets'
settings, the UI serving it) shows the commit metrics of the source ``deltaguard``: the
conflicts the race caused, and commits that add up to exactly the versions the drivers wrote
(the raw S3 listing). Spark's JMX and CSV sinks, on in the same drivers, report the same counts
under the names docs/guides/commit-path.md gives (each driver reads its MBeans in process and
its CSV files after a forced report), and the timer's mean in the units it gives. Each data version's provenance mark (raw HeadObject) names the store that
counted it: the transition store marks its commits too (issue 50 part 1)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_spark_lines_e2e import line_python as line_python

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
#: The Prometheus line of the timer's mean (nanoseconds), and the app id part of every line.
PROMETHEUS_MEAN = re.compile(
    r'^metrics_(\w+)_driver_deltaguard_commit_latency_Mean\{type="timers"\} (\S+)$'
)
#: Spark's JmxSink: ``metrics:name=<app id>.driver.deltaguard.<name>,type=counters|timers``.
JMX_NAME = re.compile(r"^metrics:name=(.+)\.driver\.deltaguard\.(\w+),type=(counters|timers)$")
#: Spark's CsvSink: ``<directory>/<app id>.driver.deltaguard.<name>.csv``.
CSV_NAME = re.compile(r"^(.+)\.driver\.deltaguard\.(\w+)\.csv$")
NAMES = {
    "commits",
    "conflicts",
    "outcomes_unknown",
    "failures",
    "attempts",
    "settles",
    "commit_latency",
}


def _counts(lines: list[str]) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in map(COUNT.match, lines) if m}


def _sink_counts(scrape: dict) -> dict[str, int]:
    """One driver's counts, read through the three sinks: the Prometheus servlet, JMX and CSV
    each show every metric of the source under the names the guide gives (the driver's app
    id in them), with the same counts; the timer's mean is in nanoseconds in Prometheus, in
    milliseconds in JMX and CSV."""
    app_id = scrape["app_id"]
    prometheus = _counts(scrape["lines"])
    assert set(prometheus) == NAMES, scrape
    jmx = [(JMX_NAME.match(name), attrs) for name, attrs in scrape["jmx"].items()]
    assert all(m and m[1] == app_id for m, _ in jmx), scrape["jmx"]
    assert {m[2]: a["Count"] for m, a in jmx} == prometheus, scrape
    kinds = {m[2]: m[3] for m, _ in jmx}
    assert kinds == {n: "timers" if n == "commit_latency" else "counters" for n in NAMES}
    csv = [(CSV_NAME.match(name), row) for name, row in scrape["csv"].items()]
    assert all(m and m[1] == app_id for m, _ in csv), scrape["csv"]
    assert {m[2]: int(row["count"]) for m, row in csv} == prometheus, scrape
    # the timer's mean through each sink, in the unit the guide gives
    [prom] = [m for m in map(PROMETHEUS_MEAN.match, scrape["lines"]) if m]
    assert prom[1] == re.sub(r"[^A-Za-z0-9]", "_", app_id), (prom[0], app_id)
    [jmx_timer] = [a for m, a in jmx if m[3] == "timers"]
    [csv_timer] = [row for m, row in csv if m[2] == "commit_latency"]
    assert jmx_timer["DurationUnit"] == csv_timer["duration_unit"] == "milliseconds"
    assert jmx_timer["Mean"] * 1e6 == pytest.approx(float(prom[2]), rel=1e-9), prom[0]
    assert float(csv_timer["mean"]) == pytest.approx(jmx_timer["Mean"], abs=1e-6), csv_timer
    return prometheus


def _race(
    localstack, proxy, bucket: str, commit_table: str, tmp_path: Path, stores, python=None
) -> tuple[list[int], list[dict[str, int]], list[dict[str, str]]]:
    """Version 0 by the Python store, then one driver per store of ``stores`` (on ``python``,
    a Spark line's interpreter; default this one) appending ``APPENDS`` times under the staged
    hold. Returns the versions in the raw listing, each driver's counts (the same through the
    three sinks: :func:`_sink_counts`), and the provenance mark of each data version (raw
    HeadObject)."""
    table = f"{bucket}/metrics"
    create_table(
        python_log_store(localstack.endpoint.url, PresetName.S3_CONDITIONAL, "unused"),
        f"s3://{table}",
        arrow_schema(),
    )
    proxy.set_rules([hold_one_commit_put()])
    procs = []
    for writer, store in enumerate(stores):
        log = (tmp_path / f"driver-{writer}.log").open("w")
        args = ["--table", f"s3a://{table}", "--endpoint", proxy.endpoint.url]
        args += ["--writer", str(writer), "--appends", str(APPENDS)]
        args += ["--local-dir", str(tmp_path / f"spark-{writer}")]
        args += ["--logstore", store.value, "--dynamodb-table", commit_table]
        procs.append(
            subprocess.Popen(
                [python or sys.executable, str(DRIVER), *args],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=driver_env(localstack.endpoint, python=python),
            )
        )
    scrapes = []
    for writer, proc in enumerate(procs):
        out, _ = proc.communicate(timeout=600)
        results = [line for line in out.splitlines() if line.startswith(RESULT_PREFIX)]
        assert proc.returncode == 0 and results, (tmp_path / f"driver-{writer}.log").read_text()
        scrapes.append(json.loads(results[-1][len(RESULT_PREFIX) :]))
    assert proxy.fired() == [1], "the race was staged"
    s3 = localstack.endpoint.s3_client()
    keys = s3.list_objects_v2(Bucket=bucket, Prefix="metrics/_delta_log/")["Contents"]
    versions = sorted(
        v for k in keys if (v := commit_version(k["Key"].rsplit("/", 1)[1])) is not None
    )
    marks = [
        s3.head_object(Bucket=bucket, Key=f"metrics/_delta_log/{v:020d}.json")["Metadata"]
        for v in versions[1:]
    ]
    return versions, [_sink_counts(scrape) for scrape in scrapes], marks


def _assert_counted(stores, versions, counts, marks) -> None:
    """Every driver's scrape against the raw log: commits add up to the versions written,
    the race cost at least one conflict, and each store's commits carry its mark."""
    assert versions == list(range(len(stores) * APPENDS + 1)), "version 0 + every append"
    assert all(c["commits"] == APPENDS for c in counts), counts
    assert sum(c["commits"] for c in counts) == len(versions) - 1
    assert sum(c["conflicts"] for c in counts) >= 1, counts
    for store, c in zip(stores, counts, strict=True):
        assert c["outcomes_unknown"] == 0 and c["failures"] == 0, counts
        assert c["commit_latency"] == c["commits"] + c["conflicts"], counts
        # no fault but the hold, whose 412 the held PUT settles as a conflict
        assert c["settles"] == 0, counts
        if store is PresetName.S3_CONDITIONAL:  # one conditional PUT per commit
            assert c["attempts"] == c["commits"] + c["conflicts"], counts
        else:  # a PutItem and a PUT per commit; a conflict found at the start sends neither
            assert 2 * c["commits"] <= c["attempts"] <= 2 * (c["commits"] + c["conflicts"])
    for store in set(stores):
        mark = {"deltaguard-commit": f"{store.value}/jvm/{VERSION}"}
        committed = sum(c["commits"] for s, c in zip(stores, counts, strict=True) if s is store)
        assert marks.count(mark) == committed, marks


def test_two_driver_race_shows_conflicts_and_commits_in_prometheus(
    localstack, ls_proxy, ls_bucket, ls_commit_table, tmp_path
):
    stores = [PresetName.S3_CONDITIONAL, PresetName.S3_DYNAMODB_TRANSITION]
    _assert_counted(
        stores, *_race(localstack, ls_proxy, ls_bucket, ls_commit_table, tmp_path, stores)
    )


@pytest.mark.long
def test_spark35_sdk1_jar_reports_the_same_metrics(
    line_python, localstack, ls_proxy, ls_bucket, ls_commit_table, tmp_path
):
    """The oldest line (Spark 3.5, Scala 2.12, the AWS SDK v1 jar): the same source, names and
    counts (two conditional drivers; the transition store needs the SDK v2)."""
    stores = [PresetName.S3_CONDITIONAL, PresetName.S3_CONDITIONAL]
    python = line_python("3.5")
    _assert_counted(
        stores, *_race(localstack, ls_proxy, ls_bucket, ls_commit_table, tmp_path, stores, python)
    )
