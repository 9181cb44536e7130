"""Fewer S3 requests per Spark append: the settings the ``s3-conditional`` preset adds on top of
how Hadoop reaches S3 (:mod:`.storage`), each with the reason it is safe for Delta tables.

Where the requests of one append go, before and after, is measured in ``docs/logstore.md``
("Requests per append"). The commit protocol itself (one conditional PUT per commit, the
read-back, the fail-closed verifier) does not depend on any of these settings: its safety
argument is the javadoc of ``S3ConditionalLogStore``, which also explains why that store reads
and overwrites log files with a single request each.

Each setting names the Hadoop versions that know it (:attr:`FewerRequestsSetting.min_hadoop`,
``max_hadoop``): a line renders only the settings its hadoop-aws reads. Hadoop ignores keys it
does not know, so a setting rendered for a newer line and copied to an older cluster is inert,
not an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from deltaguard.spark_conf.spark_lines import SparkLine


def _hadoop(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:3])


@dataclass(frozen=True)
class FewerRequestsSetting:
    """One Spark setting that removes S3 requests, and why Delta does not need them."""

    key: str
    value: str
    #: What Hadoop/Delta does without the setting (for a baseline, e.g. the benchmark's).
    default: str
    #: One line: which requests go away, and why a Delta table never needs them.
    why: str
    #: The oldest hadoop-aws that reads the key (inclusive), or None.
    min_hadoop: str | None = None
    #: The first hadoop-aws that no longer needs it (exclusive), or None.
    max_hadoop: str | None = None

    def applies_to(self, line: SparkLine) -> bool:
        version = _hadoop(line.hadoop)
        if self.min_hadoop is not None and version < _hadoop(self.min_hadoop):
            return False
        return self.max_hadoop is None or version < _hadoop(self.max_hadoop)


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
    FewerRequestsSetting(
        key="spark.databricks.delta.writeChecksumFile.enabled",
        value="false",
        default="true",
        why=(
            "no N.crc after each commit: Delta writes it through Spark's CheckpointFileManager "
            "as a temp file plus rename, about 23 S3 requests (HEAD/LIST probes, PUT, COPY, "
            "DELETE) per append, most of the total. It is not part of the commit: the protocol "
            "makes version checksums optional, readers (Delta, delta-rs, deltaguard audit) fall "
            "back to the log when one is missing, and with several writers it is already "
            "best-effort (written after the commit, skipped on failure). Readers lose only the "
            "checksum fast path and its cross-check of the replayed state."
        ),
    ),
)


def fewer_requests_conf(line: SparkLine) -> dict[str, str]:
    """The settings of :data:`FEWER_REQUESTS` that ``line``'s Hadoop reads."""
    return {s.key: s.value for s in FEWER_REQUESTS if s.applies_to(line)}


def untuned_conf(line: SparkLine) -> dict[str, str]:
    """The same keys at Hadoop's and Delta's defaults: applied after a preset, it measures the
    preset as it was before these settings (the benchmark's baseline)."""
    return {s.key: s.default for s in FEWER_REQUESTS if s.applies_to(line)}


def setting_notes() -> dict[str, str]:
    """Why each setting is there, by key (comments in rendered properties files)."""
    return {s.key: s.why for s in FEWER_REQUESTS}
