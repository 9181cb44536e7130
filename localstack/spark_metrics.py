"""What a Spark driver's own metrics system holds of deltaguard's commit metrics (the source
``deltaguard`` the JVM LogStores register, docs/guides/commit-path.md "Metrics"), read in the
driver's process through py4j, for the test drivers:

* :func:`registered_counts`: the source as registered with the driver's ``MetricsSystem`` (what
  every sink reports), no sink needed;
* :func:`jmx_metrics`: what Spark's ``JmxSink`` (:data:`JMX_SINK_CONF`) exposes in the JVM's
  platform MBean server, by object name;
* :func:`csv_report`: what Spark's ``CsvSink`` (:func:`csv_sink_conf`) writes, after a report
  forced through the metrics system, by file name.

Works on every Spark line (3.5's Scala 2.12 collections too).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

#: The Spark metrics source of deltaguard's JVM LogStores.
SOURCE = "deltaguard"
#: What a failing test driver writes on stderr before its counts (JSON): see :func:`logged_counts`.
METRICS_PREFIX = "DELTAGUARD-METRICS "
#: Spark's JMX sink: Dropwizard's JmxReporter, domain ``metrics``, in the platform MBean server.
JMX_SINK_CONF = {"spark.metrics.conf.*.sink.jmx.class": "org.apache.spark.metrics.sink.JmxSink"}
#: The attributes read of each of the source's MBeans: a counter has ``Count``; a timer also
#: ``Mean`` in its ``DurationUnit``.
_TIMER_ATTRIBUTES = ("Count", "Mean", "DurationUnit")


def csv_sink_conf(directory: Path) -> dict[str, str]:
    """Spark's CSV sink writing into ``directory``, on its own only once an hour: the rows a
    test reads are the reports it forces (:func:`csv_report`)."""
    prefix = "spark.metrics.conf.*.sink.csv."
    return {
        prefix + "class": "org.apache.spark.metrics.sink.CsvSink",
        prefix + "period": "1",
        prefix + "unit": "hours",
        prefix + "directory": str(directory),
    }


def _metrics_system(spark: Any) -> Any:
    return spark.sparkContext._jvm.org.apache.spark.SparkEnv.get().metricsSystem()


def registered_counts(spark: Any) -> dict[str, int] | None:
    """The counts of the source :data:`SOURCE` registered with ``spark``'s driver metrics
    system, by metric name (the timer ``commit_latency`` by its count); None when no such
    source is registered (no commit through deltaguard's JVM stores yet). Raises
    AssertionError if it is registered more than once."""
    sources = _metrics_system(spark).getSourcesByName(SOURCE)
    if sources.isEmpty():
        return None
    assert sources.size() == 1, f"the source {SOURCE} is registered {sources.size()} times"
    registry = sources.head().metricRegistry()
    counts = {str(k): int(v.getCount()) for k, v in registry.getCounters().items()}
    counts.update({str(k): int(v.getCount()) for k, v in registry.getTimers().items()})
    return counts


def _mbean_server_call(spark: Any, method: str, types: tuple[str, ...], *args: Any) -> Any:
    """Calls ``method`` (its parameter types: class names) of the JVM's platform MBean server
    with ``args``, through the public interface ``javax.management.MBeanServer``: py4j cannot
    call the methods of the server's class, which is in a package the JDK does not export."""
    gateway = spark.sparkContext._gateway
    jvm = gateway.jvm
    server = jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer()
    classes = gateway.new_array(jvm.java.lang.Class, len(types))
    for i, name in enumerate(types):
        classes[i] = jvm.java.lang.Class.forName(name)
    values = gateway.new_array(jvm.java.lang.Object, len(args))
    for i, value in enumerate(args):
        if value is not None:  # a new array holds nulls
            values[i] = value
    interface = jvm.java.lang.Class.forName("javax.management.MBeanServer")
    return interface.getMethod(method, classes).invoke(server, values)


def jmx_metrics(spark: Any) -> dict[str, dict[str, Any]]:
    """Every MBean of the source in the JVM's platform MBean server under Spark's JmxSink domain
    ``metrics`` (``metrics:name=<app id>.driver.deltaguard.<metric>,type=counters|timers``),
    by its object name as JMX prints it: its ``Count`` and, for a timer, ``Mean`` and
    ``DurationUnit``."""
    jvm = spark.sparkContext._jvm
    object_name = "javax.management.ObjectName"
    pattern = jvm.javax.management.ObjectName("metrics:*")
    names = _mbean_server_call(
        spark, "queryNames", (object_name, "javax.management.QueryExp"), pattern, None
    )
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        if f".driver.{SOURCE}." not in str(name.getKeyProperty("name")):
            continue
        attributes = _TIMER_ATTRIBUTES if name.getKeyProperty("type") == "timers" else ("Count",)
        values = {
            a: _mbean_server_call(spark, "getAttribute", (object_name, "java.lang.String"), name, a)
            for a in attributes
        }
        out[str(name.toString())] = {
            a: (v if isinstance(v, int | float) else str(v)) for a, v in values.items()
        }
    return out


def csv_report(spark: Any, directory: Path) -> dict[str, dict[str, str]]:
    """Forces a report of every sink of ``spark``'s driver metrics system, then reads the CSV
    sink's files of the source in ``directory`` (``<app id>.driver.deltaguard.<metric>.csv``):
    each file's last row, by column (``t``, ``count``; a timer's ``mean``, ... in
    ``duration_unit``), by file name."""
    _metrics_system(spark).report()
    out: dict[str, dict[str, str]] = {}
    for path in sorted(directory.glob(f"*.driver.{SOURCE}.*.csv")):
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        if rows:
            out[path.name] = rows[-1]
    return out


def logged_counts(log: str) -> dict[str, int] | None:
    """The counts of :func:`registered_counts` a failing driver wrote into its ``log``
    (the last ``DELTAGUARD-METRICS {json}`` line; deltaguard.localstack.append_job). Raises
    AssertionError if the log has none."""
    lines = [line for line in log.splitlines() if line.startswith(METRICS_PREFIX)]
    assert lines, "the driver's log has no DELTAGUARD-METRICS line"
    counts: dict[str, int] | None = json.loads(lines[-1][len(METRICS_PREFIX) :])
    return counts
