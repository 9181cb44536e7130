"""``deltaguard audit``: read a table's whole log, replay a snapshot, and report what is wrong.

:func:`audit_table` never raises for damage in the log: every problem it can attribute to a
file becomes a :class:`~deltaguard.tools.deltalog.findings.Finding`. It raises
:class:`DeltaLogError` only when the table cannot be read at all: no ``_delta_log``, storage
errors (credentials, endpoint), a catalog-managed table or an unknown reader feature
(``UnsupportedTableError``), or a requested version/timestamp the log never had. The audit only
reads; it writes and deletes nothing.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from deltaguard.logstore.commit_names import commit_file_name, commit_version
from deltaguard.tools.deltalog.actions import AddFile, CommitInfo, RemoveFile, parse_json_actions
from deltaguard.tools.deltalog.checkpoint import (
    LOG_DIR,
    CheckpointRef,
    checkpoint_names,
    missing_parts,
    sidecar_rel_path,
)
from deltaguard.tools.deltalog.checkpoint_content import compare_checkpoint
from deltaguard.tools.deltalog.checksum import ChecksumError, parse_checksum
from deltaguard.tools.deltalog.errors import UnsupportedTableError, VersionNotFoundError
from deltaguard.tools.deltalog.features import unknown_writer_features
from deltaguard.tools.deltalog.findings import Finding, Severity
from deltaguard.tools.deltalog.listing import (
    LastCheckpoint,
    LastCheckpointError,
    LogListing,
    check_versions,
    list_log,
    read_last_checkpoint,
    unreadable_in_place,
)
from deltaguard.tools.deltalog.live_files import (
    FILE_CODES,
    MISSING_DATA,
    MISSING_DV,
    SHORT_DV,
    SIZE_MISMATCH,
    UNREADABLE_DATA,
    UNREADABLE_DV,
    External,
    FileProblem,
    check_footers,
    check_listed,
    check_outside,
    parquet_footer_problem,
    read_parquet_footer,
)
from deltaguard.tools.deltalog.log_expiry import (
    day_cutoff_ms,
    log_cost,
    plan_expiry,
)
from deltaguard.tools.deltalog.lost_commits import restored_marks, scan_lost_commits
from deltaguard.tools.deltalog.names import SIDECARS_DIR, LogFileKind
from deltaguard.tools.deltalog.protocol_mix import gather_evidence
from deltaguard.tools.deltalog.provenance import (
    Provenance,
    classify,
    single_driver_history,
    temp_commit_versions,
    unsafe_writers,
    version_ranges,
)
from deltaguard.tools.deltalog.retention import LOG_RETENTION
from deltaguard.tools.deltalog.snapshot import Snapshot, load_snapshot
from deltaguard.tools.deltalog.temp_commits import (
    DynamoDBCheck,
    EntryState,
    judge_temp,
    read_entries,
)
from deltaguard.tools.progress import phase
from deltaguard.tools.storage import (
    FileInfo,
    S3Options,
    TableStore,
    open_table,
    read_each,
    read_each_with_metadata,
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
    (:func:`deltaguard.tools.commands.audit.audit_exit_code`); this library knows none."""

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
        if cause is None:
            return unreadable.message
        where = f"{cause.file}:{cause.line}" if cause.line else cause.file
        if where and where in unreadable.message:  # a pointer to the cause: add what it says
            return f"{unreadable.message}: {cause.message}"
        if cause.file and cause.file in unreadable.message:
            return unreadable.message
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
        #: the versions ``unsafe-commit-path`` names (one cause gets one finding)
        self.unsafe_versions: set[int] = set()

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


def _check_last_checkpoint(
    store: TableStore, listing: LogListing, out: _Collector
) -> LastCheckpoint | None:
    """Checks ``_last_checkpoint`` against the listing; returns it (None: absent or damaged)."""
    try:
        hint = read_last_checkpoint(store)
    except LastCheckpointError as exc:
        out.add("last-checkpoint-corrupt", f"_last_checkpoint: {exc}", _log("_last_checkpoint"))
        return None
    if hint is None:
        return None
    at_version = [c for c in listing.checkpoints if c.version == hint.version]
    if not at_version:
        partial = [c for c in listing.incomplete_checkpoints if c.version == hint.version]
        if partial:
            missing = missing_parts(partial[-1])
            what = f"only an incomplete multi-part checkpoint (missing {', '.join(missing)})"
        else:
            missing = [checkpoint_names(hint.version, hint.parts)[0]]
            what = f"no checkpoint ({missing[0]} does not exist)"
        out.add(
            "last-checkpoint-missing",
            f"_last_checkpoint names version {hint.version}, but {what} exists there",
            _log(missing[0]),
        )
    else:
        ref = at_version[-1]
        for problem in last_checkpoint_mismatches(store, listing, hint, ref):
            out.add(
                "last-checkpoint-mismatch",
                f"_last_checkpoint (version {hint.version}) and {ref.files[0]}: {problem}",
                _log(ref.files[0]),
            )
    newest = max((c.version for c in listing.checkpoints), default=None)
    if newest is not None and newest > hint.version:
        out.add(
            "last-checkpoint-stale",
            f"_last_checkpoint names version {hint.version}; checkpoint {newest} is newer",
            _log("_last_checkpoint"),
        )
    return hint


def last_checkpoint_mismatches(
    store: TableStore, listing: LogListing, hint: LastCheckpoint, ref: CheckpointRef
) -> list[str]:
    """Where ``_last_checkpoint`` disagrees with the checkpoint it names (``ref``, the one
    readers pick at that version; the ``last-checkpoint-mismatch`` rule, which ``repair``'s
    log step applies too): ``parts`` with its number of parts, and for a classic or
    multi-part checkpoint ``sizeInBytes`` with the listed sizes and ``size`` with its actions
    (the rows of its parts, from their footers). A V2 checkpoint's counts include its
    sidecars and are not compared."""
    problems: list[str] = []
    multipart = ref.kind is LogFileKind.MULTIPART_CHECKPOINT
    parts = len(ref.files) if multipart else None
    if hint.parts != parts and not (parts is None and hint.parts == 1):
        problems.append(f"parts is {hint.parts}, the checkpoint has {len(ref.files)} part(s)")
    if ref.kind is LogFileKind.V2_CHECKPOINT:
        return problems
    listed = sum(listing.files[name].size for name in ref.files)
    size_in_bytes = hint.raw.get("sizeInBytes")
    if isinstance(size_in_bytes, int) and size_in_bytes != listed:
        problems.append(f"sizeInBytes is {size_in_bytes}, the checkpoint is {listed} bytes")
    if hint.size is not None and not any(name.endswith(".json") for name in ref.files):
        try:
            rows = sum(
                read_parquet_footer(store, _log(name), listing.files[name].size).num_rows
                for name in ref.files
            )
        except (StorageError, pa.ArrowException, OSError, ValueError):
            return problems  # an unreadable part is checkpoint-unreadable's finding
        if rows != hint.size:
            problems.append(f"size is {hint.size} actions, the checkpoint holds {rows}")
    return problems


def _check_names(
    listing: LogListing, entries: dict[str, EntryState] | None, now_ms: int, out: _Collector
) -> None:
    for name in listing.temp_files:
        verdict = judge_temp(name, listing, entries, now_ms)
        detail = f": {verdict.reason}" if verdict is not None else ""
        out.add("temp-file", f"leftover temp file {name}{detail}", _log(name))
    for name in listing.stray_files:
        out.add("stray-log-file", f"unrecognized file {name} in _delta_log", _log(name))
    latest = listing.latest_version
    for version, name in sorted(listing.checksums.items()):
        if latest is not None and version > latest:
            out.add(
                "crc-ahead-of-log",
                f"checksum file {name} is for version {version}, but the latest commit is "
                f"{latest}: {commit_file_name(version)} is not there (removed, or the checksum "
                "file was copied in)",
                _log(name),
            )
    for ref in listing.incomplete_checkpoints:
        missing = missing_parts(ref)
        out.add(
            "checkpoint-parts-missing",
            f"multi-part checkpoint {ref.version} has {len(ref.files)} parts; missing: "
            + ", ".join(missing),
            _log(missing[0]),
        )


def _check_commits(
    store: TableStore,
    listing: LogListing,
    entries: dict[str, EntryState] | None,
    out: _Collector,
) -> set[tuple[int, str]]:
    """The commits' findings; returns the lost commits they restore
    (:func:`.lost_commits.restored_marks`)."""
    newest = max((c.version for c in listing.checkpoints), default=-1)
    names = [listing.commits[v] for v in sorted(listing.commits)]
    # log compactions readers may use instead of the commits they cover: parsed the same way
    names += sorted(c.name for c in listing.compactions if c.version > newest)
    temp_versions = temp_commit_versions(listing.temp_files)
    entry_versions = {commit_version(n) for n in entries or {}}
    origins: dict[int, Provenance] = {}
    with phase(f"audit: reading {len(names):,} commits", total=len(names)) as shown:
        read = read_each_with_metadata(store, [_log(n) for n in names], on_read=shown.advance)
        shown.update(description=f"audit: checking {len(names):,} commits", completed=0)
        for name, data in zip(names, read, strict=True):
            engine = _check_commit(name, data if isinstance(data, StorageError) else data[0], out)
            version = commit_version(name)
            if version is not None and not isinstance(data, StorageError):
                origins[version] = classify(
                    engine,
                    data[1],
                    temp_commit=version in temp_versions,
                    dynamodb_entry=version in entry_versions,
                )
            shown.advance()
    _check_commit_paths(origins, out)
    return restored_marks(d[0] for d in read if not isinstance(d, StorageError))


def _check_lost_commits(
    store: TableStore, restored: set[tuple[int, str]], out: _Collector
) -> dict[str, Any]:
    """``lost-commit`` per overwritten commit (``lost-commit-restored`` once a later version
    restores it); returns the summary's ``lost_commits``."""
    with phase("audit: looking for lost commits"):
        scan = scan_lost_commits(store)
    for lost in scan.lost:
        done = (lost.version, lost.etag) in restored
        out.add(
            "lost-commit-restored" if done else "lost-commit",
            lost.describe(),
            _log(commit_file_name(lost.version)),
        )
    return {
        "versioning": scan.versioning,
        "note": scan.note,
        "found": len(scan.lost),
        "restored": sum((c.version, c.etag) in restored for c in scan.lost),
    }


def _check_commit_paths(origins: dict[int, Provenance], out: _Collector) -> None:
    """``unsafe-commit-path`` per writer :func:`.provenance.unsafe_writers` names; the info
    ``single-driver-commit-path`` for single-driver commits it does not name."""
    for unsafe in unsafe_writers(origins):
        n = len(unsafe.versions)
        out.unsafe_versions.update(unsafe.versions)
        out.add(
            "unsafe-commit-path",
            f"{n} commit{'s' if n > 1 else ''} (version{'s' if n > 1 else ''} "
            f"{version_ranges(unsafe.versions)}) written by {unsafe.label} without a "
            f"put-if-absent, next to {', '.join(unsafe.others)}: move that writer to the "
            f"{unsafe.preset} preset (deltaguard conf render {unsafe.preset})",
            _log(commit_file_name(unsafe.versions[-1])),
        )
    single = single_driver_history(origins)
    if single is not None:
        who = (
            "by one writer, the only one"
            if single.alone
            else "all before any other writer's first commit (a finished move)"
        )
        out.add(
            "single-driver-commit-path",
            f"versions {version_ranges(single.versions)} were written through Delta's "
            f"single-driver store, {who}",
            _log(commit_file_name(single.versions[-1])),
        )


def _check_commit(name: str, data: bytes | StorageError, out: _Collector) -> str | None:
    """One commit's findings: unreadable, damaged lines, duplicate file actions. Returns its
    ``commitInfo.engineInfo`` (None without one)."""
    if isinstance(data, StorageError):
        out.add("commit-unreadable", str(data), _log(name))
        return None
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
    info = next((a for a in parsed.actions if isinstance(a, CommitInfo)), None)
    engine = None if info is None else info.get("engineInfo")
    return engine if isinstance(engine, str) else None


def _check_versions(
    store: TableStore, listing: LogListing, target: int | None, out: _Collector
) -> None:
    """The version findings (:func:`.gaps.check_versions`); a missing version whose ``N.json``
    is there but cannot be read (read once more: :func:`.gaps.unreadable_in_place`, what
    history says too) is ``commit-unreadable`` instead of part of a gap."""
    check = check_versions(listing, target)
    gaps = sorted(check.missing)
    read = read_each(store, [_log(commit_file_name(v)) for v in gaps]) if gaps else []
    unreadable: dict[int, StorageError] = {}
    for v, data in zip(gaps, read, strict=True):
        error = unreadable_in_place(data)
        if error is not None:
            unreadable[v] = error
            out.add("commit-unreadable", str(error), _log(commit_file_name(v)))
    for finding in check.findings:
        versions = {v for v, f in check.missing.items() if f is finding}
        if versions and versions <= unreadable.keys():
            continue  # every version of this gap is there, only unreadable: said above
        out.add(finding.code, finding.message, finding.file)


def _footer_ok(
    store: TableStore, rel: str, size: int | None, logged: int | None = None
) -> str | None:
    """Why a checkpoint part or sidecar ``rel`` cannot be read, or None: a JSON one is parsed,
    a Parquet one has its footer read (:func:`.live_files.parquet_footer_problem`, the one
    footer check). ``size`` is its listed size (None: asked for here); ``logged`` the size
    the checkpoint records for a sidecar, which must match."""
    try:
        if rel.endswith(".json"):
            parsed = parse_json_actions(store.read(rel))
            return (
                f"line {parsed.errors[0].line}: {parsed.errors[0].message}"
                if parsed.errors
                else None
            )
        if size is None:
            info = store.stat(rel)
            if info is None:
                return f"{rel} does not exist"
            size = info.size
        if logged is not None and logged != size:
            return f"{rel} is {size} bytes, the checkpoint says {logged}"
        return parquet_footer_problem(store, rel, size)
    except StorageError as exc:
        return str(exc)


def _check_checkpoints(
    store: TableStore,
    listing: LogListing,
    used: CheckpointRef | None,
    skipped: dict[CheckpointRef, str],
    out: _Collector,
) -> None:
    for ref in listing.checkpoints:
        if ref == used:
            _read_whole(store, ref, out)
            continue
        if ref in skipped:
            out.add("checkpoint-unreadable", skipped[ref], _log(ref.files[0]))
            continue
        for name in ref.files:
            problem = _footer_ok(store, _log(name), listing.files[name].size)
            if problem:
                out.add("checkpoint-unreadable", f"{name}: {problem}", _log(name))
                break
        else:
            if ref.kind.value == "v2-checkpoint" or ref.files[0].endswith(".checkpoint.parquet"):
                _check_sidecars(store, ref, out)


def _read_whole(store: TableStore, ref: CheckpointRef, out: _Collector) -> None:
    """The checkpoint readers use, every Parquet part read whole (every column and page,
    page checksums verified, strings validated as UTF-8): the replay reads only the columns
    it needs, and a reader that reads the rest fails on a damaged page
    (``checkpoint-unreadable``)."""
    for name in ref.files:
        if name.endswith(".json"):
            continue
        try:
            data = store.read(_log(name))
            table = pq.read_table(pa.BufferReader(data), page_checksum_verification=True)
            table.validate(full=True)
        except StorageError:
            return  # not readable at all: the replay said so
        except (pa.ArrowException, OSError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            out.add("checkpoint-unreadable", f"{name}: {first}", _log(name))
            return


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
        problem = _footer_ok(store, rel, None, sidecar.size_in_bytes)
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


def _check_checkpoint_content(
    store: TableStore, listing: LogListing, snap: Snapshot, out: _Collector
) -> str:
    """The checkpoint the snapshot was replayed from (the one readers use) against the
    commits up to its version (:func:`.checkpoint_content.compare_checkpoint`): a
    ``checkpoint-mismatch`` when they differ. Returns what it was compared with (or why
    not): ``summary.checkpoint_compared``."""
    ref = snap.segment.checkpoint
    if ref is None:
        return "no checkpoint used"
    with phase(f"audit: comparing checkpoint {ref.version} with the commits"):
        result = compare_checkpoint(store, listing, ref)
    if result.differences:
        out.add(
            "checkpoint-mismatch",
            f"{ref.files[0]} does not hold the state of version {ref.version}: "
            + "; ".join(result.differences),
            _log(ref.files[0]),
        )
    verdict = ("differs" if result.differences else "same state") if result.done else ""
    return f"{ref.files[0]} {result.compared}" + (f": {verdict}" if verdict else "")


@dataclass
class FileFindings:
    """What a file check found, from either engine (local: :func:`check_live_files`; Spark:
    :mod:`deltaguard.tools.spark_engine.audit_files`): the problems inside the root
    (:mod:`.live_files`), at most :data:`MAX_FINDINGS_PER_CODE` per code (the first by path),
    ``totals`` per code, and every file outside the root (sorted by location), checked here
    by :func:`record_file_findings`. ``footers``: whether each data file's Parquet footer was read."""

    problems: list[FileProblem]
    totals: dict[str, int]
    external: list[External]
    footers: bool = False


def _problem_order(p: FileProblem) -> tuple[int, str, str]:
    """Findings of a file check are listed by code (:data:`.live_files.FILE_CODES`), then by
    the file at fault and the entry: the same order from both engines."""
    return FILE_CODES.index(p.code), p.file, p.path


def first_per_code(problems: list[FileProblem]) -> tuple[list[FileProblem], dict[str, int]]:
    """The first :data:`MAX_FINDINGS_PER_CODE` problems of each code (by file at fault, then
    entry: what the Spark engine keeps too), and the totals per code."""
    totals: Counter[str] = Counter()
    kept: list[FileProblem] = []
    for p in sorted(problems, key=_problem_order):
        totals[p.code] += 1
        if totals[p.code] <= MAX_FINDINGS_PER_CODE:
            kept.append(p)
    return kept, dict(totals)


#: ``summary`` key per file-check code (counts of live entries)
_SUMMARY_KEYS = {
    MISSING_DATA: "missing_data_files",
    MISSING_DV: "missing_dv_files",
    SIZE_MISMATCH: "size_mismatches",
    SHORT_DV: "short_dv_files",
    UNREADABLE_DATA: "unreadable_data_files",
    UNREADABLE_DV: "unreadable_dv_files",
}


def record_file_findings(store: TableStore, found: FileFindings, out: _Collector) -> dict[str, Any]:
    """Adds the findings of a file check (the files outside the root checked here, one by one:
    :func:`.live_files.check_outside`) and returns the summary's counts. One definition of the
    file findings for both engines (codes and messages: :mod:`.live_files`)."""
    for p in sorted(found.problems, key=_problem_order):
        out.add(p.code, p.message, None if p.outside else p.file)
    counts = Counter(found.totals)
    for code, total in found.totals.items():
        shown = sum(1 for p in found.problems if p.code == code)
        out.per_code[code] += total - shown
    missing, seen = check_outside(store, found.external)
    for p in missing:
        counts[p.code] += 1
        out.add(p.code, p.message)
    for e, checked in seen:
        what = (
            f"deletion vector {e.location} of {e.owner}" if e.owner else f"live file {e.location}"
        )
        out.add("external-file", f"{what} is outside the table root ({checked})")
    return {
        **{key: counts.get(code, 0) for code, key in _SUMMARY_KEYS.items()},
        "external_files": sum(1 for e in found.external if e.owner is None),
        "external_dv_files": sum(1 for e in found.external if e.owner is not None),
        "data_files_checked": _CHECKED[found.footers],
    }


#: ``summary.data_files_checked``: how far the data files were checked (the text report says it)
_CHECKED = {
    False: "existence and sizes, from the listing; contents not read (--check footers reads them)",
    True: "existence and sizes, from the listing, each Parquet footer and deletion vector",
}
#: ... when the file check was skipped (``--no-check-files``)
NOT_CHECKED = "not checked (--no-check-files)"


#: A file check: the snapshot's live files and DV files against a listing of the table.
FileCheck = Callable[[TableStore, Snapshot], FileFindings]


def check_live_files(footers: bool = False) -> FileCheck:
    """The local engine's file check: one listing held in this process
    (:func:`.live_files.check_listed`), and with ``footers`` each remaining data
    file's footer (:func:`.live_files.check_footers`)."""

    def check(store: TableStore, snap: Snapshot) -> FileFindings:
        with phase("audit: listing the table's files") as shown:
            sizes: dict[str, int] = {}
            for info in store.walk(""):
                shown.advance()
                if not info.path.startswith(f"{LOG_DIR}/"):
                    sizes[info.path] = info.size
        problems, external = check_listed(store, snap, sizes)
        if footers:
            broken = {p.key for p in problems if p.code in (MISSING_DATA, SIZE_MISMATCH)}
            with phase("audit: reading Parquet footers and deletion vectors"):
                problems += check_footers(store, snap, sizes, broken)
            problems.sort(key=lambda p: (p.path, p.key, FILE_CODES.index(p.code)))
        kept, totals = first_per_code(problems)
        return FileFindings(kept, totals, external, footers)

    return check


def _check_dynamodb(
    store: TableStore, listing: LogListing, check: DynamoDBCheck, out: _Collector
) -> None:
    from deltaguard.logstore.s3_dynamodb import S3DynamoDBLogStore

    ddb = S3DynamoDBLogStore(None, check.client, check.table_name)
    entries = [e for table_path in check.table_paths for e in ddb.entries(table_path)]
    mix = gather_evidence(listing, entries).unsafe_mix()
    # a plain writer whose commits already are ``unsafe-commit-path`` is not reported twice
    if mix is not None and mix[1].version not in out.unsafe_versions:
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


def log_cost_summary(
    listing: LogListing,
    snap: Snapshot | None,
    entries: dict[str, EntryState] | None,
    hint: LastCheckpoint | None,
    now_ms: int | None = None,
    sidecars: list[FileInfo] | None = None,
) -> dict[str, Any]:
    """What the log costs, from the audit's own listings (no request of its own: ``sidecars``
    is the listing of ``_delta_log/_sidecars/``, None if not listed): objects and
    bytes by kind (:func:`~.log_expiry.log_cost`), versions since the newest checkpoint, and
    how many objects ``log-cleanup`` would remove (:func:`~.log_expiry.plan_expiry`, with the
    table's retention; null when the snapshot could not be read). The estimate reads no
    checkpoint (each is taken as reliable) and leaves out sidecars and Hadoop ``.crc`` files;
    ``log-cleanup`` itself checks and counts them."""
    by_kind = log_cost(listing, sidecars)
    counted = [b for b in by_kind.values() if b is not None]
    newest = max((c.version for c in listing.checkpoints), default=None)
    latest = listing.latest_version
    since = None if latest is None else latest - (newest if newest is not None else -1)
    removable: int | None = None
    removable_bytes: int | None = None
    if snap is not None:
        try:
            retention = LOG_RETENTION.ms(snap.configuration)
        except ValueError:
            retention = None
        if retention is not None:
            now = int(time.time() * 1000) if now_ms is None else now_ms
            expiry = plan_expiry(
                listing,
                snap.configuration,
                snap.protocol.writer_features,
                day_cutoff_ms(now, retention),
                entries,
                last_checkpoint_version=None if hint is None else hint.version,
            )
            removable = len(expiry.files)
            removable_bytes = sum(f.size for f in expiry.files)
    return {
        "objects": sum(b["objects"] for b in counted),
        "bytes": sum(b["bytes"] for b in counted),
        "by_kind": by_kind,
        "newest_checkpoint": newest,
        "versions_since_checkpoint": since,
        "log_cleanup_would_remove": removable,
        "log_cleanup_would_remove_bytes": removable_bytes,
    }


def _list_sidecars(store: TableStore) -> list[FileInfo] | None:
    """The listing of ``_delta_log/_sidecars/`` (one request), or None if it fails."""
    try:
        return store.list_dir(f"{LOG_DIR}/{SIDECARS_DIR}")
    except StorageError:
        return None


def _unreplayable(version: int | None, exc: DeltaLogError, out: _Collector) -> str:
    """The ``snapshot-unreadable`` message: when another finding names the file and line at
    fault, a pointer to it (its message is not repeated: one error, said once), else the
    error itself."""
    named = next(
        (
            f
            for f in out.findings
            if exc.path
            and f.file == exc.path
            and f.line == exc.line
            and f.severity is Severity.ERROR
        ),
        None,
    )
    if named is None:
        return str(exc)
    where = f"{named.file}:{named.line}" if named.line else named.file
    return f"version {version} cannot be replayed: {named.code.replace('-', ' ')} at {where}"


def _replay(
    store: TableStore,
    listing: LogListing,
    version: int | None,
    timestamp_ms: int | None,
    out: _Collector,
) -> Snapshot | None:
    """The snapshot the audit checks, or None (a ``snapshot-unreadable`` finding says why).
    Raises for a table this reader refuses, and for a timestamp no version matches."""
    if listing.latest_version is None:
        return None
    try:
        with phase("audit: replaying the snapshot"):
            return load_snapshot(store, version, timestamp_ms, listing=listing)
    except (UnsupportedTableError, VersionNotFoundError) as exc:
        if isinstance(exc, UnsupportedTableError) or timestamp_ms is not None:
            raise
        out.add("snapshot-unreadable", str(exc), exc.path)
    except DeltaLogError as exc:
        wanted = version if version is not None else listing.latest_version
        out.add("snapshot-unreadable", _unreplayable(wanted, exc, out), exc.path, exc.line)
    return None


def _snapshot_summary(snap: Snapshot, compared: Any) -> dict[str, Any]:
    """The report summary's fields read off the replayed snapshot."""
    return {
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
        "checkpoint_compared": compared,
    }


def audit_table(
    table: str | TableStore,
    version: int | None = None,
    timestamp_ms: int | None = None,
    *,
    s3: S3Options | None = None,
    dynamodb: DynamoDBCheck | None = None,
    check_files: bool = True,
    file_check: FileCheck | None = None,
    footers: bool = True,
) -> AuditReport:
    """Audits the whole log and the snapshot at ``version`` / ``timestamp_ms`` / latest.
    ``file_check`` lists the table and finds the live files no reader can read (default:
    :func:`check_live_files` (reading each Parquet footer with ``footers``), in this process; the Spark engine's:
    :func:`deltaguard.tools.spark_engine.audit_files.spark_file_check`, listing only).
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
    entries = read_entries(dynamodb) if dynamodb is not None else None
    _check_names(listing, entries, int(time.time() * 1000), out)
    hint = _check_last_checkpoint(store, listing, out)
    restored = _check_commits(store, listing, entries, out)
    lost_commits = _check_lost_commits(store, restored, out)
    report = AuditReport(store.uri, None, listing.latest_version)
    snap = _replay(store, listing, version, timestamp_ms, out)
    target = snap.version if snap else version
    _check_versions(store, listing, target, out)
    skipped = dict(snap.segment.skipped) if snap else {}
    with phase(f"audit: checking {len(listing.checkpoints):,} checkpoints"):
        _check_checkpoints(store, listing, snap.segment.checkpoint if snap else None, skipped, out)
    if snap is not None:
        report.version = snap.version
        for feature in unknown_writer_features(snap.protocol):
            out.add("unknown-writer-feature", f"writer feature {feature}")
        _check_crc(store, snap, out)
        compared = _check_checkpoint_content(store, listing, snap, out)
        file_counts: dict[str, Any] = {"data_files_checked": NOT_CHECKED}
        if check_files:
            with phase(f"audit: checking {len(snap.adds):,} live files"):
                found = (file_check or check_live_files(footers))(store, snap)
            file_counts = record_file_findings(store, found, out)
        report.summary = {**_snapshot_summary(snap, compared), **file_counts}
    report.summary.update(
        {
            "commits": len(listing.commits),
            "oldest_commit": min(listing.commits, default=None),
            "checkpoints": len(listing.checkpoints),
            "staged_commits": len(listing.staged_commits),
            "log": log_cost_summary(listing, snap, entries, hint, sidecars=_list_sidecars(store)),
            "lost_commits": lost_commits,
        }
    )
    if dynamodb is not None:
        _check_dynamodb(store, listing, dynamodb, out)
    report.findings = out.finish()
    return report
