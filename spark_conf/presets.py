"""spark-submit presets: one named choice of commit path per bucket, rendered as Spark settings.

Presets (:class:`PresetName`):

- ``s3-conditional``: deltaguard's conditional-write LogStore. Safe for many drivers on any
  store that honours ``If-None-Match`` (run ``deltaguard probe`` first). It also carries the
  settings that cut S3 requests per append (:mod:`.request_tuning`, each commented with why it
  is safe in rendered properties files).
- ``s3-dynamodb``: deltaguard's DynamoDB LogStore (Delta's S3DynamoDBLogStore protocol and
  item schema, SDK v2, endpoint override). For stores without working conditional writes, or
  teams already on Delta's DynamoDB store. Needs a DynamoDB table
  (``deltaguard dynamodb create-table``) and an AWS SDK v2 line (not Spark 3.5 on hadoop-aws
  3.3.x: rendering it there is refused).
- ``s3-dynamodb-transition``: deltaguard's transition LogStore, the DynamoDB protocol whose
  commit files are created only with ``If-None-Match``: the way from ``s3-dynamodb`` to
  ``s3-conditional`` without stopping a writer (docs/guides/migration.md). Same options and needs as
  ``s3-dynamodb``.
- ``s3-single-driver``: Delta's ``S3SingleDriverLogStore``. Only safe when ONE driver writes a
  table at a time; rendering it needs ``acknowledge_single_driver``.
- ``local``: Delta on the local filesystem.

Jar settings follow the Spark line (:mod:`deltaguard.spark_conf.spark_lines`):
``PresetOptions.spark_version`` / ``hadoop_version``, by default the installed pyspark's.
``PresetOptions.jars`` (:data:`JAR_MODES`) says where they come from:

- ``cache``: ``spark.jars`` lists the plugin jar and the line's jars from deltaguard's jar
  cache (:func:`~deltaguard.spark_conf.jvm_deps.submit_jars`, filled by ``make jars`` or
  ``python -m deltaguard.spark_conf.jvm_deps``): no resolution, no download, offline;
- ``packages``: ``spark.jars.packages`` (the line's Maven coordinates), resolved by
  spark-submit's Ivy from Maven Central only (``spark.jars.ivySettings`` =
  :data:`IVY_SETTINGS`): Spark's default chain also reads ``~/.m2``, where Maven builds leave
  POM-only entries that make Ivy fail with "download failed: ...jar";
- ``auto`` (the default): ``cache`` when the cache holds the line's jars, else ``packages``;
- ``none``: no jar settings (the cluster provides them).

:func:`render` returns the settings as a dict; :func:`apply` puts them on a
``SparkSession.Builder``; :func:`to_properties`, :func:`to_json` and :func:`to_env` format
them for ``spark-submit --properties-file``, tools, and ``PYSPARK_SUBMIT_ARGS``. The shipped
files ``presets/<name>.properties`` are ``render(name)`` with default options (a test keeps
them identical).

Every preset records the buckets it makes multi-writer safe in
``spark.deltaguard.multiWriterBuckets``, so ``deltaguard conf check`` can flag a later switch
of those buckets to the single-driver store.
"""

from __future__ import annotations

import json
import shlex
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deltaguard.logstore.jars import plugin_jar
from deltaguard.logstore.preset_name import PresetName as PresetName  # presets' public API
from deltaguard.logstore.s3_location import S3Location
from deltaguard.spark_conf.jvm_deps import JarsNotResolvedError, submit_jars
from deltaguard.spark_conf.request_tuning import setting_notes
from deltaguard.spark_conf.session import DynamoDBCommitTableSpec, delta_conf
from deltaguard.spark_conf.spark_lines import SPARK_VERSIONS, SparkLine, installed_line, line_for
from deltaguard.spark_conf.storage import LocalStorage, S3Storage

MULTI_WRITER_BUCKETS_KEY = "spark.deltaguard.multiWriterBuckets"
#: The declaration of the ``s3-single-driver`` preset (``--acknowledge-single-driver``): exactly
#: one driver writes each table. Spark carries it and ignores it; ``conf check`` reads it (a
#: single-driver store without it is a ``single-driver-store`` finding).
SINGLE_DRIVER_KEY = "spark.deltaguard.singleDriverPerTable"
#: Below this, a completed DynamoDB entry may expire while its commit is still being discovered.
MIN_SAFE_TTL_SECONDS = 3600
PRESET_DIR = Path(__file__).with_name("presets")
#: Ivy settings for ``spark.jars.packages``: Maven Central only, never ``~/.m2``.
IVY_SETTINGS = Path(__file__).with_name("ivysettings.xml")
#: Where the jar settings come from (module docstring); ``auto`` is the default.
JAR_MODES = ("auto", "cache", "packages", "none")
#: The presets of deltaguard's own stores turn Spark's Prometheus servlet sink on, so the
#: stores' commit metrics (the Spark metrics source ``deltaguard``) are scraped from the driver's
#: UI at ``/metrics/prometheus`` with no other setting: Spark's defaults serve only the JSON
#: servlet (``/metrics/json``). docs/guides/commit-path.md ("Metrics").
PROMETHEUS_SERVLET_CONF = {
    "spark.metrics.conf.*.sink.prometheusServlet.class": (
        "org.apache.spark.metrics.sink.PrometheusServlet"
    ),
    "spark.metrics.conf.*.sink.prometheusServlet.path": "/metrics/prometheus",
}
_PROMETHEUS_NOTE = (
    "Spark's Prometheus servlet on the driver UI (/metrics/prometheus), where a scrape finds the "
    "LogStore's commit metrics (source deltaguard: commits, conflicts, attempts, settles, "
    "outcomes_unknown, failures, commit_latency; docs/guides/commit-path.md). Spark serves only "
    "/metrics/json by default. It replaces a prometheusServlet sink set in metrics.properties; "
    "JMX and CSV sinks set there report the source as well."
)


class PresetError(ValueError):
    """The options do not make a safe preset; the message says which option and why."""


@dataclass(frozen=True)
class PresetOptions:
    """Parameters of a preset. All optional: the defaults reach AWS S3 in us-east-1 with the
    default credential chain."""

    table_root: str | None = None
    region: str = "us-east-1"
    endpoint: str | None = None
    path_style: bool = False
    credentials_provider: str | None = None
    acknowledge_single_driver: bool = False
    dynamodb_table: str = "delta_log"
    dynamodb_region: str | None = None
    dynamodb_endpoint: str | None = None
    ttl_seconds: int = 86400
    #: Where the jars come from, one of :data:`JAR_MODES` (module docstring): ``cache``,
    #: ``packages``, ``auto`` (cache if resolved, else packages) or ``none``.
    jars: str = "auto"
    plugin_jar_path: str | None = None
    #: The Spark line (``3.5``, ``4.0``, ``4.1``, ``4.2``; default: the installed pyspark's, else the
    #: newest) and the cluster's Hadoop (default: the one pyspark ships for that Spark).
    spark_version: str | None = None
    hadoop_version: str | None = None

    def line(self) -> SparkLine:
        """The Spark line these options select (UnknownSparkLineError, a ValueError, if none)."""
        if self.spark_version is None:
            if self.hadoop_version is not None:
                return line_for(installed_line().spark, self.hadoop_version)
            return installed_line()
        return line_for(self.spark_version, self.hadoop_version)


def _storage(options: PresetOptions) -> S3Storage:
    return S3Storage(
        endpoint=options.endpoint,
        region=options.region,
        path_style=options.path_style,
        credentials_provider=options.credentials_provider,
    )


def _jars(options: PresetOptions, with_plugin: bool) -> dict[str, str]:
    """The jar settings of ``options.jars`` (module docstring); the plugin jar comes first."""
    if options.jars == "none":
        return {}
    if options.jars not in JAR_MODES:
        raise PresetError(f"jars must be one of {', '.join(JAR_MODES)}, got {options.jars!r}")
    line = options.line()
    plugin = [options.plugin_jar_path or str(plugin_jar(line.sdk))] if with_plugin else []
    if options.jars in ("auto", "cache"):
        try:
            cached = [str(jar) for jar in submit_jars(line)]
        except JarsNotResolvedError as exc:
            if options.jars == "cache":
                raise PresetError(f"jars=cache: {exc}") from None
        else:
            return {"spark.jars": ",".join([*plugin, *cached])}
    conf = {
        "spark.jars.packages": ",".join(line.coordinates),
        "spark.jars.ivySettings": str(IVY_SETTINGS),
    }
    if plugin:
        conf["spark.jars"] = plugin[0]
    return conf


def render(name: PresetName | str, options: PresetOptions | None = None) -> dict[str, str]:
    """The Spark settings of preset ``name``. Raises PresetError for an unsafe or invalid
    combination (e.g. ``s3-single-driver`` without ``acknowledge_single_driver``)."""
    options = options or PresetOptions()
    try:
        preset = PresetName(name)
    except ValueError:
        raise PresetError(
            f"unknown preset {name!r}; choose one of {', '.join(p.value for p in PresetName)}"
        ) from None
    bucket = S3Location.parse(options.table_root).bucket if options.table_root else None
    if preset is PresetName.LOCAL:
        return {**delta_conf(LocalStorage(), PresetName.LOCAL), **_jars(options, False)}
    if preset is PresetName.S3_SINGLE_DRIVER:
        if not options.acknowledge_single_driver:
            raise PresetError(
                "s3-single-driver uses Delta's S3SingleDriverLogStore, which checks for N.json "
                "and then writes it: two drivers committing to one table at once silently "
                "overwrite each other's commits. Use it only when exactly one driver writes "
                "each table, and say so with --acknowledge-single-driver "
                "(acknowledge_single_driver=True); otherwise use s3-conditional."
            )
        return {
            **delta_conf(_storage(options), PresetName.S3_SINGLE_DRIVER),
            SINGLE_DRIVER_KEY: "true",
            **_jars(options, False),
        }
    if preset.uses_dynamodb:
        line = options.line()
        if not line.has_dynamodb_store:
            raise PresetError(
                f"{preset.value} is not available on Spark line {line.name} (hadoop-aws "
                f"{line.hadoop}, AWS SDK v1): deltaguard's DynamoDB LogStore runs on the AWS SDK "
                "v2, which hadoop-aws 3.4+ brings. Use s3-conditional on this line, or a Spark "
                "3.5 built on Hadoop 3.4 (--hadoop-version 3.4.1)."
            )
        if options.ttl_seconds < MIN_SAFE_TTL_SECONDS:
            raise PresetError(
                f"ttl_seconds={options.ttl_seconds} is below the safe floor of "
                f"{MIN_SAFE_TTL_SECONDS} s: an entry that expires before its commit is visible to "
                "every writer can let a second writer take the same version"
            )
        spec = DynamoDBCommitTableSpec(
            table_name=options.dynamodb_table,
            region=options.dynamodb_region or options.region,
            endpoint=options.dynamodb_endpoint,
            ttl_seconds=options.ttl_seconds,
        )
        conf = {
            **delta_conf(_storage(options), preset, spec),
            **_jars(options, True),
        }
    else:
        conf = {
            **delta_conf(_storage(options), PresetName.S3_CONDITIONAL, line=options.line()),
            **_jars(options, True),
        }
    conf.update(PROMETHEUS_SERVLET_CONF)
    if bucket:
        conf[MULTI_WRITER_BUCKETS_KEY] = bucket
    return conf


def apply(builder: Any, name: PresetName | str, options: PresetOptions | None = None) -> Any:
    """Applies the preset to a ``SparkSession.Builder`` and returns it. LogStore settings are
    static: apply before the first session of the process is created."""
    for key, value in render(name, options).items():
        builder = builder.config(key, value)
    return builder


def to_properties(conf: dict[str, str], header: str = "") -> str:
    """spark-submit ``--properties-file`` format, one ``key=value`` per line, sorted; a setting
    that saves S3 requests is preceded by a comment saying why it is safe
    (:func:`~deltaguard.spark_conf.request_tuning.setting_notes`)."""
    notes = {**setting_notes(), next(iter(PROMETHEUS_SERVLET_CONF)): _PROMETHEUS_NOTE}
    lines = [f"# {line}" for line in header.splitlines()] if header else []
    for key, value in sorted(conf.items()):
        if key in notes:
            lines += [f"# {line}" for line in textwrap.wrap(notes[key], 96)]
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def to_json(conf: dict[str, str]) -> str:
    return json.dumps(dict(sorted(conf.items())), indent=2) + "\n"


def to_env(conf: dict[str, str]) -> str:
    """A ``PYSPARK_SUBMIT_ARGS`` export for plain ``python job.py`` runs."""
    args = " ".join(f"--conf {shlex.quote(f'{k}={v}')}" for k, v in sorted(conf.items()))
    return f"export PYSPARK_SUBMIT_ARGS={shlex.quote(args + ' pyspark-shell')}\n"


def shipped_preset_file(name: PresetName) -> Path:
    return PRESET_DIR / f"{name.value}.properties"


def _versions() -> str:
    """``3.5, 4.0, 4.1 or 4.2``."""
    return f"{', '.join(SPARK_VERSIONS[:-1])} or {SPARK_VERSIONS[-1]}"


def shipped_preset_text(name: PresetName) -> str:
    """What ``presets/<name>.properties`` holds: the preset with default options, portable
    (jar settings are left to ``deltaguard conf render`` or the cluster)."""
    options = PresetOptions(
        jars="none", acknowledge_single_driver=name is PresetName.S3_SINGLE_DRIVER
    )
    header = (
        f"deltaguard preset {name.value} with default options (AWS S3, us-east-1, default "
        "credential chain).\nJars: add `--packages $(deltaguard packages --spark-version V) --jars "
        f"$(deltaguard jar --spark-version V)` (V: {_versions()}), or render it complete: "
        f"deltaguard conf render {name.value} --spark-version V [options]."
    )
    if name is PresetName.S3_CONDITIONAL:
        header += (
            f"\nRendered for Spark {options.line().name}: the checkpoint file manager class "
            "differs by line, so render it for 3.5 or 4.0 (--spark-version V)."
        )
    if name.uses_dynamodb:
        header += "\nNeeds an AWS SDK v2 line (hadoop-aws 3.4+): not Spark 3.5 on hadoop-aws 3.3.4."
    if name is PresetName.S3_SINGLE_DRIVER:
        header += (
            "\nUNSAFE for more than one driver per table: concurrent commits overwrite each other."
        )
    return to_properties(render(name, options), header)
