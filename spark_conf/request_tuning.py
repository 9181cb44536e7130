"""Fewer S3 requests and Spark jobs per Spark append: the settings the ``s3-conditional`` preset
adds on top of how Hadoop reaches S3 (:mod:`.storage`), each with the reason it is safe for Delta
tables.

Where the requests of one append go, before and after, is measured in ``docs/design/logstore.md``
("Requests per append"); the Spark jobs of a checkpoint append, job by job, in its section
"Spark jobs per append". The commit protocol itself (one conditional PUT per commit, the
read-back, the fail-closed verifier) does not depend on any of these settings: its safety
argument is the javadoc of ``S3ConditionalLogStore``, which also explains why that store reads
and overwrites log files with a single request each.

Each setting names the Hadoop versions that know it (:attr:`FewerRequestsSetting.min_hadoop`,
``max_hadoop``) and, where it differs by Spark version, the Spark versions (``min_spark``,
``max_spark``): a line renders only the settings its hadoop-aws and Spark read. Hadoop ignores keys it
does not know, so a setting rendered for a newer line and copied to an older cluster is inert,
not an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from deltaguard.spark_conf.spark_lines import SparkLine


def _version(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:3])


@dataclass(frozen=True)
class FewerRequestsSetting:
    """One Spark setting that removes S3 requests or Spark jobs, and why Delta does not need them."""

    key: str
    value: str
    #: What Hadoop/Delta does without the setting (for a baseline, e.g. the benchmark's).
    default: str
    #: One line: which requests (or jobs) go away, and why a Delta table never needs them.
    why: str
    #: The oldest hadoop-aws that reads the key (inclusive), or None.
    min_hadoop: str | None = None
    #: The first hadoop-aws that no longer needs it (exclusive), or None.
    max_hadoop: str | None = None
    #: The Spark versions it is for, like the Hadoop bounds (inclusive / exclusive), or None.
    min_spark: str | None = None
    max_spark: str | None = None

    def applies_to(self, line: SparkLine) -> bool:
        return _within(line.hadoop, self.min_hadoop, self.max_hadoop) and _within(
            line.spark, self.min_spark, self.max_spark
        )


def _within(version: str, low: str | None, high: str | None) -> bool:
    parsed = _version(version)
    if low is not None and parsed < _version(low):
        return False
    return high is None or parsed < _version(high)


#: The Spark setting (read from the Hadoop configuration) that picks the file manager through
#: which Delta writes ``N.crc`` and Structured Streaming writes its checkpoints.
MANAGER_CLASS_KEY = "spark.sql.streaming.checkpointFileManagerClass"
CHECKSUM_KEY = "spark.databricks.delta.writeChecksumFile.enabled"
#: Delta's setting that lists every file of a small table in each ``N.crc``.
ALL_FILES_IN_CRC_KEY = "spark.databricks.delta.allFilesInCrc.enabled"

_ALL_FILES_WHY = (
    "No Spark job at each checkpoint to check a file list no reader uses: on (Delta's "
    "default), each N.crc of a table with at most 50 files also lists all its files, which "
    "Delta Spark 3.3 to 4.4 and Delta Kernel read back only to derive the next N.crc's list, "
    "and each checkpoint (on a driver outside UTC, each commit) collects the table's files in "
    "one more Spark job to compare them with it (validateFileListAgainstCRC). Off, N.crc keeps "
    "every other field, as for a table over 50 files or one written by deltaguard's Python "
    "committer, and the checkpoint still checks its file count and N.crc's counts, sizes, "
    "protocol and metadata against the state it writes. A Spark writer without this setting "
    "pays a state reconstruction on its next commit to such a small table after ours: give "
    "every Spark writer of the bucket this preset. Evidence, job by job: docs/design/logstore.md."
)

_MANAGER_WHY = (
    "Delta's N.crc checksums stay on (Delta's default) at 1 PUT instead of about 22 requests: "
    "Delta writes N.crc, and Structured Streaming its checkpoint files, through this file "
    "manager, and Spark's default writes a temp file and renames it (on S3A: HEAD/LIST probes, "
    "PUT, COPY, DELETE). deltaguard's manager keeps the file in memory and stores it with one "
    "PUT at close: S3 shows a PUT's whole body or nothing, so it is as atomic as the rename, and "
    "a create without overwrite is the LogStore's conditional PUT (If-None-Match, read-back, "
    "verifier), which never replaces an existing file. Files over 16 MiB, and paths not on S3A, "
    "use Spark's default. Without another writer's N.crc a Spark append rebuilds the table "
    "state (about 6 Spark jobs instead of 1), so the checksum is what keeps contended appends "
    "cheap. Contract and the streaming behaviour: CheckpointPut's javadoc, docs/design/logstore.md."
)

FEWER_REQUESTS: tuple[FewerRequestsSetting, ...] = (
    FewerRequestsSetting(
        key="spark.hadoop.fs.s3a.performance.flags",
        value="create,mkdir",
        default="",
        why=(
            "create: no HEAD+LIST before each file S3A creates (data files, checkpoints): Delta "
            "names them freshly (UUIDs) or by version and never creates one where a directory "
            "stands, and commits do not go through S3A's create at all (the LogStore's "
            "conditional PUT does); on hadoop-aws 3.5 an overwrite=false create becomes a "
            "conditional PUT, which every store this preset is for honours (deltaguard probe). "
            "mkdir: no parent probes when Delta creates _delta_log or _staged_commits, which "
            "live under the table root it has just resolved. Hadoop 3.4.1+ (HADOOP-19161)."
        ),
        min_hadoop="3.4.1",
    ),
    FewerRequestsSetting(
        key="spark.hadoop.fs.s3a.directory.marker.retention",
        value="keep",
        default="delete",
        why=(
            "no DeleteObjects of the parent directory markers after every file write: "
            "hadoop-aws 3.4+ keeps markers by default and every S3A since 3.3.1 reads such "
            "tables; Delta lists the log with its LogStore (which skips markers) and never "
            "relies on a directory looking empty. Only hadoop-aws 3.3.x deletes by default."
        ),
        min_hadoop="3.3.1",
        max_hadoop="3.4.0",
    ),
    *(
        FewerRequestsSetting(
            key=MANAGER_CLASS_KEY,
            value=f"io.deltaguard.logstore.{ours}",
            default=f"org.apache.spark.sql.execution.streaming.{spark_package}"
            "FileContextBasedCheckpointFileManager",
            why=_MANAGER_WHY,
            min_spark=min_spark,
            max_spark=max_spark,
        )
        # Spark 4.2 moved CheckpointFileManager to ...streaming.checkpointing: one class each.
        for ours, spark_package, min_spark, max_spark in (
            ("S3PutCheckpointFileManagerSpark35", "", None, "4.1"),
            ("S3PutCheckpointFileManager", "checkpointing.", "4.1", None),
        )
    ),
    # Every line's Delta (3.3.2, 4.0.0, 4.4.0) has the key, default true, and the same check.
    FewerRequestsSetting(
        key=ALL_FILES_IN_CRC_KEY, value="false", default="true", why=_ALL_FILES_WHY
    ),
)


def fewer_requests_conf(line: SparkLine) -> dict[str, str]:
    """The settings of :data:`FEWER_REQUESTS` that ``line``'s Hadoop reads."""
    return {s.key: s.value for s in FEWER_REQUESTS if s.applies_to(line)}


def untuned_conf(line: SparkLine) -> dict[str, str]:
    """The same keys at Hadoop's and Delta's defaults: applied after a preset, it measures the
    preset as it was before these settings (the benchmark's baseline)."""
    return {s.key: s.default for s in FEWER_REQUESTS if s.applies_to(line)}


def checksums_off_conf(line: SparkLine) -> dict[str, str]:
    """Applied after the ``s3-conditional`` preset: the preset as shipped before issue 23
    (checksums off, Spark's rename-based file manager, Delta's default file list in ``N.crc``),
    the baseline of the benchmarks that measure the checksum path (``bench/throughput.py``,
    ``bench/snapshot_jobs.py``)."""
    manager = next(s for s in FEWER_REQUESTS if s.key == MANAGER_CLASS_KEY and s.applies_to(line))
    return {CHECKSUM_KEY: "false", MANAGER_CLASS_KEY: manager.default, ALL_FILES_IN_CRC_KEY: "true"}


def setting_notes() -> dict[str, str]:
    """Why each setting is there, by key (comments in rendered properties files)."""
    return {s.key: s.why for s in FEWER_REQUESTS}


#: deltaguard's checkpoint file managers' switch for ``exists`` with one LIST (``CheckpointExists``
#: in the plugin jar; a jar default, not a preset setting). Spark copies SQL settings into the
#: Hadoop configuration, where the managers read it with the ``spark.`` prefix.
LIST_EXISTS_KEY = "spark.deltaguard.logstore.checkpoint.listExists"


def s3a_exists_conf() -> dict[str, str]:
    """Applied after the ``s3-conditional`` preset: the preset as shipped before issue 44
    (deltaguard's checkpoint file manager answering ``exists`` through S3A, a HEAD plus a LIST
    for an absent file), the baseline of the streaming benchmark (``bench/streaming.py``)."""
    return {LIST_EXISTS_KEY: "false"}
