"""``deltaguard audit``: read a table's whole log, replay a snapshot, and report what is wrong.

:func:`audit_table` never raises for damage in the log: every problem it can attribute to a
file becomes a :class:`~deltaguard.tools.deltalog.findings.Finding`. It raises
:class:`DeltaLogError` only when the table cannot be read at all: no ``_delta_log``, storage
errors (credentials, endpoint), a catalog-managed table or an unknown reader feature
(``UnsupportedTableError``), or a requested version/timestamp the log never had. The audit only
reads; it writes and deletes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from deltaguard.logstore.commit_names import commit_file_name
from deltaguard.tools.deltalog.actions import AddFile, RemoveFile, parse_json_actions
from deltaguard.tools.deltalog.checkpoint import LOG_DIR, CheckpointRef, sidecar_rel_path
from deltaguard.tools.deltalog.checksum import ChecksumError, parse_checksum
from deltaguard.tools.deltalog.errors import UnsupportedTableError, VersionNotFoundError
from deltaguard.tools.deltalog.external import Presence, check_external
from deltaguard.tools.deltalog.features import unknown_writer_features
from deltaguard.tools.deltalog.findings import Finding, Severity
from deltaguard.tools.deltalog.gaps import check_versions
from deltaguard.tools.deltalog.listing import (
    LastCheckpointError,
    LogListing,
    list_log,
    read_last_checkpoint,
)
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.deltalog.protocol_mix import gather_evidence
from deltaguard.tools.deltalog.snapshot import Snapshot, load_snapshot
from deltaguard.tools.deltalog.temp_commits import (
    DynamoDBCheck,
    EntryState,
    judge_temp,
    read_entries,
)
from deltaguard.tools.progress import phase
from deltaguard.tools.storage import (
    S3Options,
    TableStore,
    open_table,
    read_each,
    table_not_found,
)
from deltaguard.tools.storage.errors import DeltaLogError, StorageError

#: At most this many findings per code are listed; the rest are counted in one more finding.
MAX_FINDINGS_PER_CODE = 50


#: Findings that mean the audit could not read what it needed (not merely findings).
UNREADABLE_CODES = frozenset({"snapshot-unreadable", "commit-unreadable"})


@dataclass
class AuditReport:
    """The result of an audit: :attr:`healthy` (no error or warning) and :attr:`unreadable`
    (the snapshot could not be rebuilt or a commit could not be read, :data:`UNREADABLE_CODES`;
    the other findings say why). The command layer maps these to an exit code
    (:func:`deltaguard.tools.exit_codes.audit_exit_code`); this library knows none."""

    table: str
    version: int | None
    latest_version: int | None
    findings: list[Finding] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def healthy(self) -> bool:
        return not any(f.severity is not Severity.INFO for f in self.findings)

    @property
    def unreadable(self) -> bool:
        """Whether the audit could not read what it needed (a finding in
        :data:`UNREADABLE_CODES`)."""
        return any(f.code in UNREADABLE_CODES for f in self.findings)

    def unreadable_line(self) -> str | None:
        """When :attr:`unreadable`: one line saying what could not be read and the first error
        finding that names a file (the cause); else None."""
        unreadable = next((f for f in self.findings if f.code in UNREADABLE_CODES), None)
        if unreadable is None:
            return None
        cause = next(
            (
                f
                for f in self.findings
                if f.severity is Severity.ERROR and f.file and f.code not in UNREADABLE_CODES
            ),
            None,
        )
        if cause is None or (cause.file and cause.file in unreadable.message):
            return unreadable.message
        where = f"{cause.file}:{cause.line}" if cause.line else cause.file
        return f"{unreadable.message} ({cause.code}: {where}: {cause.message})"

    def counts(self) -> dict[str, int]:
        c = Counter(str(f.severity) for f in self.findings)
        return {s.value: c.get(s.value, 0) for s in Severity}

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "deltaguard.audit/1",
            "table": self.table,
            "version": self.version,
            "latest_version": self.latest_version,
            "healthy": self.healthy,
            "counts": self.counts(),
            "summary": self.summary,
            "findings": [f.to_json() for f in self.findings],
        }


class _Collector:
    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.per_code: Counter[str] = Counter()

    def add(
        self, code: str, message: str, file: str | None = None, line: int | None = None
    ) -> None:
        self.per_code[code] += 1
        if self.per_code[code] <= MAX_FINDINGS_PER_CODE:
            self.findings.append(Finding.of(code, message, file, line))

    def finish(self) -> list[Finding]:
        for code, n in self.per_code.items():
            if n > MAX_FINDINGS_PER_CODE:
                self.findings.append(
                    Finding.of(code, f"... and {n - MAX_FINDINGS_PER_CODE} more {code} findings")
                )
        order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
        return sorted(self.findings, key=lambda f: order[f.severity])


def _log(name: str) -> str:
    return f"{LOG_DIR}/{name}"


def _check_last_checkpoint(store: TableStore, listing: LogListing, out: _Collector) -> None:
    try:
        hint = read_last_checkpoint(store)
    except LastCheckpointError as exc:
        out.add("last-checkpoint-corrupt", f"_last_checkpoint: {exc}", _log("_last_checkpoint"))
        return
    if hint is None:
        return
    at_version = [c for c in listing.checkpoints if c.version == hint.version]
    if not at_version:
        partial = [c for c in listing.incomplete_checkpoints if c.version == hint.version]
        what = "only an incomplete multi-part checkpoint" if partial else "no checkpoint"
        out.add(
            "last-checkpoint-missing",
            f"_last_checkpoint names version {hint.version}, but {what} exists there",
            _log("_last_checkpoint"),
        )
    newest = max((c.version for c in listing.checkpoints), default=None)
    if newest is not None and newest > hint.version:
        out.add(
            "last-checkpoint-stale",
            f"_last_checkpoint names version {hint.version}; checkpoint {newest} is newer",
            _log("_last_checkpoint"),
        )


def _check_names(
    listing: LogListing, entries: dict[str, EntryState] | None, out: _Collector
) -> None:
    for name in listing.temp_files:
        verdict = judge_temp(name, listing, entries)
        detail = f": {verdict.reason}" if verdict is not None else ""
        out.add("temp-file", f"leftover temp file {name}{detail}", _log(name))
    for name in listing.stray_files:
        out.add("stray-log-file", f"unrecognized file {name} in _delta_log", _log(name))
    for ref in listing.incomplete_checkpoints:
        parts = ref.files[0].split(".")[-2]
        out.add(
            "checkpoint-parts-missing",
            f"multi-part checkpoint {ref.version} has {len(ref.files)} of {int(parts)} parts",
            _log(ref.files[0]),
        )


def _check_commits(store: TableStore, listing: LogListing, out: _Collector) -> None:
    names = [listing.commits[v] for v in sorted(listing.commits)]
    with phase(f"audit: reading {len(names):,} commits", total=len(names)) as shown:
        read = read_each(store, [_log(n) for n in names], on_read=shown.advance)
        shown.update(description=f"audit: checking {len(names):,} commits", completed=0)
        for name, data in zip(names, read, strict=True):
            _check_commit(name, data, out)
            shown.advance()


def _check_commit(name: str, data: bytes | StorageError, out: _Collector) -> None:
    """One commit's findings: unreadable, damaged lines, duplicate file actions."""
    if isinstance(data, StorageError):
        out.add("commit-unreadable", str(data), _log(name))
        return
    parsed = parse_json_actions(data)
    for err in parsed.errors:
        code = "incomplete-action" if err.incomplete else "corrupt-json-line"
        out.add(code, f"{name} line {err.line}: {err.message}", _log(name), err.line)
    seen: Counter[tuple[str, str, str | None]] = Counter(
        (type(a).__name__, *a.key) for a in parsed.actions if isinstance(a, AddFile | RemoveFile)
    )
    for (kind, path, _dv), n in seen.items():
        if n > 1:
            out.add(
                "duplicate-file-action",
                f"{name}: {n} {kind} actions for {path}",
                _log(name),
            )


def _check_versions(listing: LogListing, target: int | None, out: _Collector) -> None:
    for finding in check_versions(listing, target).findings:
        out.add(finding.code, finding.message, finding.file)


def _footer_ok(store: TableStore, rel: str) -> str | None:
    try:
        data = store.read(rel)
        if rel.endswith(".json"):
            parsed = parse_json_actions(data)
            return (
                f"line {parsed.errors[0].line}: {parsed.errors[0].message}"
                if parsed.errors
                else None
            )
        pq.ParquetFile(pa.BufferReader(data)).metadata  # noqa: B018
    except StorageError as exc:
        return str(exc)
    except (pa.ArrowException, OSError, ValueError) as exc:
        return f"unreadable parquet ({exc})"
    return None


def _check_checkpoints(
    store: TableStore,
    listing: LogListing,
    used: CheckpointRef | None,
    skipped: dict[CheckpointRef, str],
    out: _Collector,
) -> None:
    for ref in listing.checkpoints:
        if ref == used:
            continue
        if ref in skipped:
            out.add("checkpoint-unreadable", skipped[ref], _log(ref.files[0]))
            continue
        for name in ref.files:
            problem = _footer_ok(store, _log(name))
            if problem:
                out.add("checkpoint-unreadable", f"{name}: {problem}", _log(name))
                break
        else:
            if ref.kind.value == "v2-checkpoint" or ref.files[0].endswith(".checkpoint.parquet"):
                _check_sidecars(store, ref, out)


def _check_sidecars(store: TableStore, ref: CheckpointRef, out: _Collector) -> None:
    """V2 checkpoints list sidecars; each must exist and be readable."""
    from deltaguard.tools.deltalog.actions import Sidecar

    name = ref.files[0]
    sidecars: list[Sidecar] = []
    try:
        data = store.read(_log(name))
        if name.endswith(".json"):
            sidecars = [a for a in parse_json_actions(data).actions if isinstance(a, Sidecar)]
        else:
            pf = pq.ParquetFile(pa.BufferReader(data), page_checksum_verification=True)
            if "sidecar" in pf.schema_arrow.names:
                col = pf.read(columns=["sidecar"])["sidecar"]
                for row in col.filter(col.is_valid()).to_pylist():
                    if isinstance(row, dict) and isinstance(row.get("path"), str):
                        sidecars.append(Sidecar(row["path"], row.get("sizeInBytes"), None))
    except (StorageError, pa.ArrowException, OSError, ValueError) as exc:
        out.add("checkpoint-unreadable", f"{name}: {exc}", _log(name))
        return
    for sidecar in sidecars:
        rel = sidecar_rel_path(sidecar)
        problem = _footer_ok(store, rel)
        if problem:
            out.add("checkpoint-unreadable", f"sidecar of {name}: {problem}", rel)


def _check_crc(store: TableStore, snap: Snapshot, out: _Collector) -> None:
    name = snap.listing.checksums.get(snap.version)
    if name is None:
        return
    try:
        crc = parse_checksum(store.read(_log(name)))
    except (StorageError, ChecksumError) as exc:
        out.add("crc-unreadable", f"{name}: {exc}", _log(name))
        return
    actual = {
        "numFiles": len(snap.adds),
        "tableSizeBytes": snap.adds.total_size(),
        "numMetadata": 1,
        "numProtocol": 1,
    }
    for key, value in actual.items():
        if crc.fields[key] != value:
            out.add(
                "crc-mismatch",
                f"{name}: {key} is {crc.fields[key]}, the replayed state has {value}",
                _log(name),
            )
    if crc.metadata_id not in (None, snap.metadata.id):
        out.add(
            "crc-mismatch",
            f"{name}: metadata id {crc.metadata_id} != {snap.metadata.id}",
            _log(name),
        )
    if crc.min_reader_version not in (None, snap.protocol.min_reader_version):
        out.add("crc-mismatch", f"{name}: protocol differs from the replayed protocol", _log(name))


@dataclass
class FileFindings:
    """What a file check found, from either engine (local: :func:`_check_files`; Spark:
    :mod:`deltaguard.tools.spark_engine.audit_files`): the missing live files inside the
    root (``missing_data``: the first :data:`MAX_FINDINGS_PER_CODE` by path, of
    ``missing_data_total``), the missing deletion vector files as (DV file, its data file)
    (``missing_dv``, sorted, of ``missing_dv_total``), and every file outside the root as
    (location, the data file of a DV or None), sorted."""

    missing_data: list[str]
    missing_data_total: int
    missing_dv: list[tuple[str, str]]
    missing_dv_total: int
    external: list[tuple[str, str | None]]


def record_file_findings(store: TableStore, found: FileFindings, out: _Collector) -> dict[str, int]:
    """Adds the findings of a file check (the files outside the root checked here, one by one:
    :mod:`.external`) and returns the summary's counts. One definition of the file findings'
    codes and messages for both engines."""
    for rel in found.missing_data:
        out.add("missing-data-file", f"live file {rel} does not exist", rel)
    out.per_code["missing-data-file"] += found.missing_data_total - len(found.missing_data)
    for rel, data_file in found.missing_dv:
        out.add("missing-dv-file", f"deletion vector {rel} of {data_file} does not exist", rel)
    out.per_code["missing-dv-file"] += found.missing_dv_total - len(found.missing_dv)
    missing, missing_dv = found.missing_data_total, found.missing_dv_total
    results = check_external(store, [location for location, _ in found.external])
    for (location, owner), (presence, why) in zip(found.external, results, strict=True):
        what = f"deletion vector {location} of {owner}" if owner else f"live file {location}"
        if presence is Presence.MISSING:
            if owner:
                missing_dv += 1
                out.add("missing-dv-file", f"{what} (outside the table root) does not exist")
            else:
                missing += 1
                out.add("missing-data-file", f"{what} (outside the table root) does not exist")
            continue
        checked = "exists" if presence is Presence.PRESENT else f"not checked: {why}"
        out.add("external-file", f"{what} is outside the table root ({checked})")
    return {
        "missing_data_files": missing,
        "missing_dv_files": missing_dv,
        "external_files": sum(1 for _, owner in found.external if owner is None),
        "external_dv_files": sum(1 for _, owner in found.external if owner is not None),
    }


#: A file check: the snapshot's live files and DV files against a listing of the table.
FileCheck = Callable[[TableStore, Snapshot], FileFindings]


def _check_files(store: TableStore, snap: Snapshot) -> FileFindings:
    """Every live file and deletion vector file must exist: those inside the root against one
    listing (held in this process), those outside it (absolute paths elsewhere:
    ``external-file``) are returned for :func:`record_file_findings`."""
    present: set[str] = set()
    with phase("audit: listing the table's files") as shown:
        for info in store.walk(""):
            shown.advance()
            if not info.path.startswith(f"{LOG_DIR}/"):
                present.add(info.path)
    missing: list[str] = []
    missing_dv: list[tuple[str, str]] = []
    external: list[tuple[str, str | None]] = []  # (location, data file of a DV, or None)
    for path in snap.adds.paths():
        rel = relative_to_root(path, store)
        if rel is None:
            external.append((path, None))
        elif rel not in present:
            missing.append(rel)
    for path, dv in snap.adds.deletion_vectors():
        dv_path = dv.file_path()
        if dv_path is None:
            continue  # inline
        rel = relative_to_root(dv_path, store)
        if rel is None:
            external.append((dv_path, path))
        elif rel not in present:
            missing_dv.append((rel, path))
    return FileFindings(
        sorted(missing)[:MAX_FINDINGS_PER_CODE],
        len(missing),
        sorted(missing_dv)[:MAX_FINDINGS_PER_CODE],
        len(missing_dv),
        sorted(external, key=lambda e: (e[0], e[1] or "")),
    )


def _check_dynamodb(
    store: TableStore, listing: LogListing, check: DynamoDBCheck, out: _Collector
) -> None:
    from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore

    ddb = S3DynamoDBLogStore(None, check.client, check.table_name)
    entries = [e for table_path in check.table_paths for e in ddb.entries(table_path)]
    mix = gather_evidence(listing, entries).unsafe_mix()
    if mix is not None:
        conditional, plain = mix
        out.add(
            "mixed-commit-protocols",
            f"version {conditional.version} has no entry in {check.table_name} (a conditional "
            f"writer), yet version {plain.version} has an entry without the transition marker "
            "(a plain DynamoDB writer) written after it",
            _log(commit_file_name(plain.version)),
        )
    for table_path in check.table_paths:
        for entry in ddb.entries(table_path):
            if entry["complete"]:
                continue
            temp = entry["tempPath"]
            out.add(
                "dynamodb-incomplete-entry",
                f"{check.table_name}: {entry['fileName']} of {table_path} is incomplete (temp {temp})",
                _log(entry["fileName"]),
            )
            if temp not in listing.temp_files and store.stat(_log(temp)) is None:
                out.add(
                    "dynamodb-missing-temp-file",
                    f"{check.table_name}: temp file {temp} of {entry['fileName']} does not exist",
                    _log(temp),
                )


def audit_table(
    table: str | TableStore,
    version: int | None = None,
    timestamp_ms: int | None = None,
    *,
    s3: S3Options | None = None,
    dynamodb: DynamoDBCheck | None = None,
    check_files: bool = True,
    file_check: FileCheck | None = None,
) -> AuditReport:
    """Audits the whole log and the snapshot at ``version`` / ``timestamp_ms`` / latest.
    ``file_check`` lists the table and finds the missing files (default: this process lists
    it; the Spark engine's: :func:`deltaguard.tools.spark_engine.audit_files.spark_file_check`).
    See the module docstring for what raises (a ``file_check`` raises its own errors)."""
    store = open_table(table, s3) if isinstance(table, str) else table
    with phase("audit: listing the log"):
        listing = list_log(store)
    if listing.latest_version is None and not listing.files:
        raise table_not_found(store, f"{LOG_DIR}/ is empty or missing")
    if version is not None and (listing.latest_version is None or version > listing.latest_version):
        raise VersionNotFoundError(
            f"{store.uri} has no version {version} (latest: {listing.latest_version})"
        )
    out = _Collector()
    _check_names(listing, read_entries(dynamodb) if dynamodb is not None else None, out)
    _check_last_checkpoint(store, listing, out)
    _check_commits(store, listing, out)
    report = AuditReport(store.uri, None, listing.latest_version)
    snap: Snapshot | None = None
    if listing.latest_version is not None:
        try:
            with phase("audit: replaying the snapshot"):
                snap = load_snapshot(store, version, timestamp_ms, listing=listing)
        except (UnsupportedTableError, VersionNotFoundError) as exc:
            if isinstance(exc, UnsupportedTableError) or timestamp_ms is not None:
                raise
            out.add("snapshot-unreadable", str(exc), exc.path)
        except DeltaLogError as exc:
            out.add("snapshot-unreadable", str(exc), exc.path, exc.line)
    target = snap.version if snap else version
    _check_versions(listing, target, out)
    skipped = dict(snap.segment.skipped) if snap else {}
    with phase(f"audit: checking {len(listing.checkpoints):,} checkpoints"):
        _check_checkpoints(store, listing, snap.segment.checkpoint if snap else None, skipped, out)
    if snap is not None:
        report.version = snap.version
        for feature in unknown_writer_features(snap.protocol):
            out.add("unknown-writer-feature", f"writer feature {feature}")
        _check_crc(store, snap, out)
        file_counts = {}
        if check_files:
            with phase(f"audit: checking that {len(snap.adds):,} live files exist"):
                found = (file_check or _check_files)(store, snap)
            file_counts = record_file_findings(store, found, out)
        report.summary = {
            "version": snap.version,
            "timestamp_ms": snap.timestamp_ms,
            "live_files": len(snap.adds),
            "live_bytes": snap.adds.total_size(),
            "tombstones": len(snap.removes),
            "protocol": {
                "min_reader_version": snap.protocol.min_reader_version,
                "min_writer_version": snap.protocol.min_writer_version,
                "reader_features": sorted(snap.protocol.reader_features),
                "writer_features": sorted(snap.protocol.writer_features),
            },
            "checkpoint": snap.segment.checkpoint.files[0] if snap.segment.checkpoint else None,
            "commits_replayed": len(snap.segment.pieces),
            **file_counts,
        }
    report.summary.update(
        {
            "commits": len(listing.commits),
            "oldest_commit": min(listing.commits, default=None),
            "checkpoints": len(listing.checkpoints),
            "staged_commits": len(listing.staged_commits),
        }
    )
    if dynamodb is not None:
        _check_dynamodb(store, listing, dynamodb, out)
    report.findings = out.finish()
    return report
