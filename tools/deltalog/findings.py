"""Audit findings: what is wrong, where, how bad, and what to do about it.

Every finding has a stable ``code`` (see :data:`CODES`, also the table in docs/guides/audit.md), a severity
(``error``: the table or some version cannot be read correctly, or data is missing;
``warning``: something needs attention but readers cope; ``info``: normal state worth knowing),
the file (relative to the table root) and line when there is one, and a hint.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


#: code -> (severity, hint)
CODES: dict[str, tuple[Severity, str]] = {
    "version-gap": (
        Severity.ERROR,
        "A commit the latest state needs is missing. Restore it from a backup or bucket "
        "versioning; without it the table cannot be read past the gap.",
    ),
    "version-gap-covered": (
        Severity.WARNING,
        "Commits are missing in the middle of the log, but a later checkpoint (or a log "
        "compaction) covers them: "
        "the latest state is readable, time travel to these versions is not. Find out who "
        "deleted them (log cleanup only removes the oldest commits).",
    ),
    "log-cleaned-up": (
        Severity.INFO,
        "Normal log cleanup (delta.logRetentionDuration): older versions are no longer "
        "available for time travel.",
    ),
    "history-truncated": (
        Severity.ERROR,
        "The oldest retained commits are not covered by any readable checkpoint: the table "
        "cannot be reconstructed. Restore the missing commits or checkpoint.",
    ),
    "corrupt-json-line": (
        Severity.ERROR,
        "A log line is not a valid action. Restore the file from a backup or bucket "
        "versioning; never edit a commit in place while writers are active.",
    ),
    "incomplete-action": (
        Severity.ERROR,
        "The line is valid JSON and the file is not damaged: the action lacks a field the Delta "
        "protocol requires (old writers wrote, e.g., metaData without schemaString). A backup "
        "holds the same line. Readers that require the field (delta-kernel, deltaguard) cannot "
        "replay versions that still depend on it; a newer complete action of the same kind "
        "(any schema or property change writes a full metaData) followed by a checkpoint makes "
        "the latest version readable again.",
    ),
    "duplicate-file-action": (
        Severity.WARNING,
        "One commit has several actions for the same (path, deletion vector): the protocol "
        "allows one. The writer that made it is broken; the newest action wins.",
    ),
    "commit-unreadable": (
        Severity.ERROR,
        "A commit file could not be read (permissions, or a storage error that outlasted the "
        "read retries): not damage to the table, but the audit is incomplete (exit code 2). "
        "Check access to it and run the audit again.",
    ),
    "checkpoint-unreadable": (
        Severity.ERROR,
        "A checkpoint (or one of its parts or sidecars) is missing, truncated or damaged. "
        "delta-rs (delta-kernel) fails on the newest one rather than fall back to an older "
        "checkpoint or the commits. Write a new checkpoint from a reader that still can read "
        "the table (Spark falls back), and never delete it while log cleanup depends on it.",
    ),
    "checkpoint-mismatch": (
        Severity.ERROR,
        "The checkpoint readers use does not hold the state of its version: its live files "
        "(or protocol, metaData) differ from the replay of the commits up to it (e.g. another "
        "checkpoint's bytes copied over it). Readers read it without error and return the wrong "
        "rows. Delete it (and point _last_checkpoint at an older checkpoint, or remove it) "
        "while the commits are retained, then write a new checkpoint. Compared only for the "
        "newest checkpoint and only while its commits are retained (summary.checkpoint_compared).",
    ),
    "checkpoint-parts-missing": (
        Severity.WARNING,
        "A multi-part checkpoint lacks parts (an interrupted checkpoint). Readers ignore it; "
        "the parts present can be removed once a newer checkpoint exists.",
    ),
    "last-checkpoint-missing": (
        Severity.ERROR,
        "_last_checkpoint names a checkpoint that does not exist (or lacks parts): delta-rs "
        "(delta-kernel) fails to open the table (\"Had a _last_checkpoint hint but didn't find "
        'any checkpoints"); Spark lists the log instead. Write a new checkpoint (it rewrites '
        "_last_checkpoint), or restore the one it names.",
    ),
    "last-checkpoint-mismatch": (
        Severity.WARNING,
        "_last_checkpoint disagrees with the checkpoint it names (parts, sizeInBytes or size): "
        "it was not written for that checkpoint. Readers tested (delta-rs) still read the "
        "table; the next checkpoint rewrites it.",
    ),
    "last-checkpoint-corrupt": (
        Severity.WARNING,
        "_last_checkpoint is not valid; readers list the log instead. Write a new checkpoint.",
    ),
    "last-checkpoint-stale": (
        Severity.INFO,
        "A newer checkpoint than the one _last_checkpoint names exists (a writer crashed "
        "between writing the checkpoint and the hint). Harmless; the next checkpoint fixes it.",
    ),
    "crc-mismatch": (
        Severity.ERROR,
        "The version checksum file disagrees with the replayed state: the log may have been "
        "modified after the commit. Compare with a backup before trusting this version.",
    ),
    "crc-ahead-of-log": (
        Severity.ERROR,
        "A version checksum file (N.crc) for a version newer than the latest commit: delta-rs "
        '(delta-kernel) fails to open the table ("CRC file version N is newer than log segment '
        'version"). No commit can own it: it was left by a commit that was removed, or copied '
        "in. Move it out of _delta_log (keep a copy); the commit of that version rewrites it.",
    ),
    "crc-unreadable": (
        Severity.WARNING,
        "A .crc file is not valid JSON; it is optional, so readers ignore it.",
    ),
    "missing-data-file": (
        Severity.ERROR,
        "A live add entry points at a data file that does not exist (a dangling reference): "
        "reads fail. Restore the file, or remove the entry (FSCK REPAIR TABLE in Databricks).",
    ),
    "missing-dv-file": (
        Severity.ERROR,
        "A deletion vector file of a live entry does not exist: reads of that data file fail, "
        "and deleted rows would come back if it were ignored. Restore it from a backup.",
    ),
    "size-mismatch": (
        Severity.ERROR,
        "A live data file's size differs from the size its add action records (truncated, "
        "grown, emptied or overwritten after the commit). A shorter file fails every read. A "
        "longer one fails Spark, which looks for the Parquet footer at the file's end; delta-rs "
        "reads it at the logged size if the bytes up to it are the committed file. Restore the "
        "file from a backup or bucket versioning, or remove the entry (`deltaguard repair`; it "
        "keeps a longer file whose footer at the logged size reads: truncate that one to the "
        "logged size, see docs/guides/repair.md).",
    ),
    "unreadable-data-file": (
        Severity.ERROR,
        "At --check footers (the default): a live data file of the logged size whose Parquet footer "
        "cannot be read (wrong magic bytes, footer length or footer): reads fail. Restore the "
        "file, or remove the entry (`deltaguard repair`).",
    ),
    "unreadable-dv-file": (
        Severity.ERROR,
        "At --check footers (the default): a deletion vector whose size field, CRC-32 or magic number "
        "does not match its descriptor: reads of its data file fail. Restore the file from a "
        "backup, or remove the entry (`deltaguard repair`).",
    ),
    "short-dv-file": (
        Severity.ERROR,
        "A deletion vector file is shorter than the descriptor of a live entry needs (offset + "
        "4-byte size + sizeInBytes + 4-byte checksum): reads of that data file fail. Restore "
        "it from a backup, or remove the entry (`deltaguard repair`).",
    ),
    "external-file": (
        Severity.INFO,
        "A live file or deletion vector has an absolute path outside the table root (a shallow "
        "clone, a `p`-type deletion vector). Its existence was checked where the table's own "
        "access reaches (S3, local disk); VACUUM and `deltaguard orphans` never delete it.",
    ),
    "temp-file": (
        Severity.WARNING,
        "A leftover temp file in _delta_log from an interrupted write. Under _delta_log/.tmp/ "
        "it is the DynamoDB LogStore's temp commit: for a version newer than the latest it may "
        "be the only copy of that commit (the next reader or writer copies it to N.json), and "
        "for a retained version whose N.json is missing it may hold the missing commit: never "
        "delete those. Once N.json exists it is garbage when its DynamoDB entry is complete or "
        "expired (`deltaguard orphans --dynamodb-table` checks; docs/guides/cleanup.md). Other temp "
        "files are safe to delete once no writer is active.",
    ),
    "stray-log-file": (
        Severity.WARNING,
        "A file in _delta_log with a log-like name that no Delta reader recognizes. Readers "
        "ignore it; find out what wrote it before deleting.",
    ),
    "dynamodb-incomplete-entry": (
        Severity.WARNING,
        "A DynamoDB commit entry is incomplete (a writer died after its commit point). The "
        "next writer or a reader's listing repairs it; `deltaguard audit` does not write.",
    ),
    "dynamodb-missing-temp-file": (
        Severity.ERROR,
        "An incomplete DynamoDB entry names a temp file that does not exist: the commit cannot "
        "be repaired, and writers will fail on the next version.",
    ),
    "mixed-commit-protocols": (
        Severity.ERROR,
        "A plain DynamoDB LogStore client (Delta's S3DynamoDBLogStore, or a job still on the "
        "s3-dynamodb preset) committed after a conditional-only writer (s3-conditional, "
        "delta-rs >= 1.6.1, Trino) started on this table: the plain store's copy to N.json is "
        "not atomic against a conditional PUT, so one can overwrite the other's commit. Stop "
        "the conditional writers, move every DynamoDB job (readers too) to "
        "s3-dynamodb-transition, check `deltaguard migrate status`, and read docs/guides/migration.md; "
        "compare each job's commits with `deltaguard history` to find overwritten ones.",
    ),
    "unsafe-commit-path": (
        Severity.ERROR,
        "Retained commits show more than one writer, and this one committed without a "
        "put-if-absent after the other had started: Delta's single-driver store overwrites a "
        "concurrent writer's commit, "
        "and a plain DynamoDB-protocol writer's copy is not atomic against a conditional "
        "PUT, so commits can be lost silently. Move the writer named to the preset named "
        "(docs/guides/commit-path.md; from DynamoDB, docs/guides/migration.md), and check the "
        "versions named with `deltaguard history`.",
    ),
    "single-driver-commit-path": (
        Severity.INFO,
        "Commits through Delta's single-driver store, of one writer alone or all older than "
        "any other writer's: safe only while no two writers overlap. Before another writer "
        "(a second Spark driver, delta-rs, Trino) starts, move every job to the "
        "s3-conditional preset (docs/guides/commit-path.md).",
    ),
    "lost-commit": (
        Severity.ERROR,
        "A commit a concurrent writer overwrote (Delta's single-driver store, or a plain "
        "DynamoDB-protocol copy): bucket versioning kept its bytes as a noncurrent version of "
        "N.json, and the files it added are in the table but no version names them, so its rows "
        "are missing. `deltaguard orphans` keeps those files; `deltaguard repair --restore-lost` "
        "re-commits a lost blind append as a new version (docs/guides/repair.md). Move the "
        "writers to a safe preset first (unsafe-commit-path).",
    ),
    "lost-commit-restored": (
        Severity.INFO,
        "A lost commit that a later version restores (its commitInfo names it: "
        "`deltaguard repair --restore-lost`). Nothing to do.",
    ),
    "unknown-writer-feature": (
        Severity.WARNING,
        "The protocol lists a writer feature deltaguard does not know. Reading is unaffected; "
        "do not write to the table with tools that do not support it.",
    ),
    "snapshot-unreadable": (
        Severity.ERROR,
        "The requested version cannot be replayed, so the audit is incomplete (exit code 2); "
        "see the other findings for the cause.",
    ),
}


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    hint: str = ""

    @classmethod
    def of(
        cls, code: str, message: str, file: str | None = None, line: int | None = None
    ) -> Finding:
        severity, hint = CODES[code]
        return cls(code, severity, message, file, line, hint)

    def to_json(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Severity) else v) for k, v in asdict(self).items()}
