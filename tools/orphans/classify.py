"""Classifying every file of a table that the current snapshot does not reference.

:func:`scan` lists the table (:mod:`.listing`), lists ``_delta_log``, replays the latest
snapshot and collects its references (:mod:`.references`), then gives each unreferenced file
one class:

``orphan``
    visible to VACUUM, older than the cut-off, and named by **no retained log entry**: the
    output of a failed job or an aborted task (``part-*``, ``cdc-*``, ``deletion_vector_*``).
``expired-tombstone``
    visible, older than the cut-off, not protected by the snapshot, but named by some retained
    log entry: a file removed longer ago than the retention (or a ``_change_data`` file past
    it). VACUUM deletes these; versions older than the retention may still read them.
``recent``
    visible, not protected, but modified at or after the cut-off: it may belong to a writer
    still in flight, so it is always kept.
``log-temp``
    in ``_delta_log``, older than the cut-off: a log store's temp file (a DynamoDB temp commit
    only once the log protocol no longer needs it), a sidecar no retained checkpoint
    references, a part of an incomplete multi-part checkpoint, or a Hadoop ``.<name>.crc``
    checksum whose file is gone or cleaned up (the reason names the file).
``pending-commit``
    a DynamoDB temp commit (``_delta_log/.tmp/N.json.<uuid>``) the log protocol may still
    need, whatever its age: of a version newer than the latest (possibly the only copy of
    commit N), or one whose DynamoDB entry is incomplete or was not checked. Never deleted.
``lost-commit``
    named only by a lost commit (an ``N.json`` a concurrent writer overwrote, kept by bucket
    versioning: :mod:`deltaguard.tools.deltalog.lost_commits`): its rows are missing from the
    table, and ``deltaguard repair --restore-lost`` may put them back. Never deleted; the
    reason names the version (and object version) that lost it.
``stranded-commit``
    damage: a DynamoDB temp commit of a version inside the retained log whose ``N.json`` is
    missing; it may hold the missing commit. Reported, never deleted.

The rules for DynamoDB temp commits, and why, are in
:mod:`deltaguard.tools.deltalog.temp_commits`.

Streaming checkpoints inside the root and ``_spark_metadata`` are never candidates; they are
reported in ``kept_dirs`` (:mod:`.streaming`). Apart from the files of a checkpoint with a
visible name, ``orphan`` plus ``expired-tombstone`` is exactly the set VACUUM (FULL) would
delete with the same cut-off: both take visible files with ``modificationTime < cutoff`` that are not in the
valid set (live files, tombstones deleted at or after the cut-off, and their DV files).
Files the snapshot protects are never classified.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import pyarrow as pa

from deltaguard.tools.deltalog.checkpoint import LOG_DIR, CheckpointRef, read_checkpoint
from deltaguard.tools.deltalog.listing import LogListing, list_log
from deltaguard.tools.deltalog.log_expiry import day_cutoff_ms
from deltaguard.tools.deltalog.lost_commits import VERSIONING_OFF, scan_lost_commits
from deltaguard.tools.deltalog.names import SIDECARS_DIR, LogFileKind, hadoop_checksum_owner
from deltaguard.tools.deltalog.paths import relative_to_root
from deltaguard.tools.deltalog.retention import DELETED_FILE_RETENTION
from deltaguard.tools.deltalog.snapshot import Snapshot, load_snapshot
from deltaguard.tools.deltalog.temp_commits import (
    DynamoDBCheck,
    EntryState,
    TempState,
    judge_temp,
    read_entries,
)
from deltaguard.tools.deltalog.times import iso_utc
from deltaguard.tools.orphans.inventory import (
    InventoryReport,
    InventorySource,
    inventory_date,
    table_root,
)
from deltaguard.tools.orphans.inventory_read import (
    InventoryRows,
    inventory_listing,
    read_table_rows,
)
from deltaguard.tools.orphans.key_ranges import (
    DEFAULT_RANGE_FILES,
    LOCAL_MAX_RANGES,
    reference_cuts,
)
from deltaguard.tools.orphans.listing import ListingProgress, TableListing, list_table
from deltaguard.tools.orphans.memory import use_jemalloc
from deltaguard.tools.orphans.references import References, collect_references
from deltaguard.tools.orphans.rules import (
    CHANGE_DATA_DIR,
    hidden_name_rule,
    is_visible,
    partition_of,
)
from deltaguard.tools.orphans.streaming import KeptDir, checkpoint_dirs, in_checkpoint, kept_dirs
from deltaguard.tools.storage import FileInfo, S3Options, S3TableStore, TableStore
from deltaguard.tools.storage.errors import DeltaLogError


class FileClass(StrEnum):
    ORPHAN = "orphan"
    EXPIRED_TOMBSTONE = "expired-tombstone"
    RECENT = "recent"
    LOG_TEMP = "log-temp"
    PENDING_COMMIT = "pending-commit"
    #: a finished DynamoDB temp commit of a retained version: the evidence of its commit path
    #: (:mod:`deltaguard.tools.deltalog.temp_commits`), kept while its version is retained.
    COMMIT_EVIDENCE = "commit-evidence"
    STRANDED_COMMIT = "stranded-commit"
    LOST_COMMIT = "lost-commit"
    #: ``log-cleanup`` only: a log file below the truncation checkpoint, older than the
    #: log retention (:mod:`deltaguard.tools.deltalog.log_expiry`).
    EXPIRED_LOG = "expired-log"


#: The classes ``orphans`` reports (its totals have one entry each).
ORPHANS_CLASSES = tuple(c for c in FileClass if c is not FileClass.EXPIRED_LOG)


#: The class of each DynamoDB temp commit state (:mod:`deltaguard.tools.deltalog.temp_commits`).
TEMP_CLASS = {
    TempState.PENDING: FileClass.PENDING_COMMIT,
    TempState.IN_USE: FileClass.PENDING_COMMIT,
    TempState.STRANDED: FileClass.STRANDED_COMMIT,
    TempState.EVIDENCE: FileClass.COMMIT_EVIDENCE,
    TempState.GARBAGE: FileClass.LOG_TEMP,
}


@dataclass(frozen=True, slots=True)
class Candidate:
    """One unreferenced file: ``path`` relative to the table root (decoded), its size and
    modification time (epoch ms), its class and a human-readable reason."""

    path: str
    size: int
    mtime_ms: int
    file_class: FileClass
    reason: str

    @property
    def partition(self) -> str:
        return partition_of(self.path)


@dataclass
class ScanResult:
    """What :func:`scan` found. ``cutoff_ms`` = ``now_ms - retention_ms``, or the inventory's
    date if earlier (``inventory``: the scan read an inventory instead of listing, see
    :mod:`.inventory`): only files modified before it can be cleaned up."""

    table: str
    version: int
    now_ms: int
    retention_ms: int
    retention_source: str
    candidates: list[Candidate]
    listed_files: int
    referenced_files: int
    hidden_dirs: list[str]
    log_files: int
    scan_s: float
    notes: list[str] = field(default_factory=list)
    #: directories never cleaned up, with why (:mod:`deltaguard.tools.orphans.streaming`)
    kept_dirs: list[KeptDir] = field(default_factory=list)
    inventory: InventoryReport | None = None
    #: ``log-cleanup``: the cut-off is Delta's log cut-off, truncated to the UTC day
    #: (:func:`deltaguard.tools.deltalog.log_expiry.day_cutoff_ms`).
    day_truncated: bool = False

    @property
    def cutoff_ms(self) -> int:
        retention_cutoff = self.now_ms - self.retention_ms
        if self.day_truncated:
            return day_cutoff_ms(self.now_ms, self.retention_ms)
        if self.inventory is None:
            return retention_cutoff
        return min(retention_cutoff, self.inventory.date_ms)

    def of(self, *classes: FileClass) -> list[Candidate]:
        return [c for c in self.candidates if c.file_class in classes]


#: ``.format(version, object version)``: the reason of a ``lost-commit`` file.
LOST_COMMIT_REASON = (
    "added only by the lost commit of version {} (object version {}): kept; "
    "see deltaguard audit and repair --restore-lost"
)


def lost_commit_files(store: TableStore) -> tuple[dict[str, str], str | None]:
    """The files (relative to the table root) the table's lost commits add, each with its
    :data:`LOST_COMMIT_REASON` (the first lost commit naming it), and a note for the report
    when the look failed (versioning denied, a listing failed; versioning off is no note:
    there is nothing to keep then). Both engines call this on the driver; the files a retained
    entry names are never classed by it (:func:`data_candidate`)."""
    scan = scan_lost_commits(store)
    out: dict[str, str] = {}
    for lost in scan.lost:
        for add in lost.adds:
            rel = relative_to_root(add.path, store)
            if rel is not None:
                out.setdefault(rel, LOST_COMMIT_REASON.format(lost.version, lost.version_id))
            dv = add.deletion_vector.file_path() if add.deletion_vector else None
            dv_rel = relative_to_root(dv, store) if dv is not None else None
            if dv_rel is not None:
                out.setdefault(dv_rel, LOST_COMMIT_REASON.format(lost.version, lost.version_id))
    return out, (scan.note if scan.note != VERSIONING_OFF else None)


def data_candidates(
    files: list[FileInfo],
    refs: References,
    cutoff_ms: int,
    lost: Mapping[str, str] | None = None,
) -> list[Candidate]:
    """:func:`data_candidate` for each listed data file, asking the reference sets about all
    of them at once; ``lost``: :func:`lost_commit_files`."""
    paths = [info.path for info in files]
    protected = refs.protected.contains_all(paths)
    named = refs.named_in_log.contains_all(paths)
    change_data = refs.change_data.contains_all(paths)
    tombstones = refs.tombstones.indexes(paths)
    out: list[Candidate] = []
    for k, info in enumerate(files):
        at = int(tombstones[k])
        c = data_candidate(
            info,
            cutoff_ms,
            protected=bool(protected[k]),
            named_in_log=bool(named[k]),
            tombstone=(at >= 0, refs.tombstone_ms[at].as_py() if at >= 0 else None),
            change_data=bool(change_data[k]),
            lost=(lost or {}).get(info.path),
        )
        if c is not None:
            out.append(c)
    return out


#: The reasons of the data rules (:data:`DATA_RULES`); ``{}``: the rule's :class:`Detail`.
RECENT_REASON = "modified after the cut-off: may belong to a writer still in flight"
ORPHAN_CHANGE_DATA_REASON = "change data no retained commit names"
ORPHAN_REASON = "no retained log entry references it (failed or aborted write)"
#: ``.format(the deletion time as :func:`~deltaguard.tools.deltalog.times.iso_utc` shows it)``
TOMBSTONE_REASON = "removed at {}, before the cut-off"
EXPIRED_CHANGE_DATA_REASON = "change data older than the retention"
EXPIRED_REASON = "named only by removed entries or older versions of the log"


class Fact(StrEnum):
    """What a data rule may ask about one listed data file (each a yes or no)."""

    #: the snapshot protects it (live, a tombstone inside the retention, or their DV files)
    PROTECTED = "protected"
    #: a lost commit adds it (:func:`lost_commit_files`)
    LOST = "lost"
    #: some retained log entry names it
    NAMED_IN_LOG = "named_in_log"
    #: modified at or after the cut-off
    RECENT = "recent"
    #: under ``_change_data/``
    CHANGE_DATA_PATH = "change_data_path"
    #: a snapshot tombstone names it
    TOMBSTONE = "tombstone"
    #: a retained ``cdc`` action names it
    CHANGE_DATA = "change_data"


class Detail(StrEnum):
    """What fills the ``{}`` of a rule's reason."""

    NONE = "none"
    #: the lost commit's reason (:data:`LOST_COMMIT_REASON`)
    LOST_REASON = "lost_reason"
    #: the tombstone's newest deletion time, as :func:`~deltaguard.tools.deltalog.times.iso_utc`
    DELETED_AT = "deleted_at"


@dataclass(frozen=True, slots=True)
class DataRule:
    """One row of :data:`DATA_RULES`: if every ``(fact, value)`` of ``when`` holds (an empty
    ``when`` always does), the file is of ``file_class`` (None: not a candidate) for
    ``reason`` (its ``{}`` filled by ``detail``)."""

    when: tuple[tuple[Fact, bool], ...]
    file_class: FileClass | None
    reason: str = ""
    detail: Detail = Detail.NONE


#: The class of a listed data file: the first rule that holds decides. The one definition
#: both engines execute: :func:`data_candidate` evaluates it, the Spark engine generates its
#: SQL from it (:func:`deltaguard.tools.spark_engine.classify_sql.data_class_columns`). The
#: last rule holds always.
DATA_RULES: tuple[DataRule, ...] = (
    DataRule(((Fact.PROTECTED, True),), None),
    DataRule(
        ((Fact.LOST, True), (Fact.NAMED_IN_LOG, False)),
        FileClass.LOST_COMMIT,
        "{}",
        Detail.LOST_REASON,
    ),
    DataRule(((Fact.RECENT, True),), FileClass.RECENT, RECENT_REASON),
    DataRule(
        ((Fact.NAMED_IN_LOG, False), (Fact.CHANGE_DATA_PATH, True)),
        FileClass.ORPHAN,
        ORPHAN_CHANGE_DATA_REASON,
    ),
    DataRule(((Fact.NAMED_IN_LOG, False),), FileClass.ORPHAN, ORPHAN_REASON),
    DataRule(
        ((Fact.TOMBSTONE, True),), FileClass.EXPIRED_TOMBSTONE, TOMBSTONE_REASON, Detail.DELETED_AT
    ),
    DataRule(((Fact.CHANGE_DATA, True),), FileClass.EXPIRED_TOMBSTONE, EXPIRED_CHANGE_DATA_REASON),
    DataRule((), FileClass.EXPIRED_TOMBSTONE, EXPIRED_REASON),
)


#: :data:`DATA_RULES` with each fact as its position in :class:`Fact` (a tuple of the facts
#: in that order is what :func:`first_rule` reads: no dict per file).
_RULES_BY_POSITION = tuple(
    (tuple((list(Fact).index(f), v) for f, v in rule.when), rule) for rule in DATA_RULES
)


_CHANGE_DATA_PREFIX = CHANGE_DATA_DIR + "/"


def first_rule(facts: Sequence[bool]) -> DataRule:
    """The first of :data:`DATA_RULES` that holds for ``facts`` (one bool per :class:`Fact`,
    in its order)."""
    for when, rule in _RULES_BY_POSITION:
        for i, v in when:
            if facts[i] is not v:
                break
        else:
            return rule
    raise AssertionError("the last data rule holds always")


def data_candidate(
    info: FileInfo,
    cutoff_ms: int,
    *,
    protected: bool,
    named_in_log: bool,
    tombstone: tuple[bool, int | None],
    change_data: bool,
    lost: str | None = None,
) -> Candidate | None:
    """The class of one listed data file by :data:`DATA_RULES`, from what the log says about
    its path: protected by the snapshot, named by any retained entry, a snapshot tombstone
    (and its newest deletion timestamp), a ``cdc`` file, added by a lost commit (``lost``:
    the reason, whatever the file's age; only when no retained entry names it)."""
    if protected:  # the first rule, and most listed files: no table walk
        return None
    rule = first_rule(
        (  # in Fact's order
            False,
            lost is not None,
            named_in_log,
            info.mtime_ms >= cutoff_ms,
            info.path.startswith(_CHANGE_DATA_PREFIX),
            tombstone[0],
            change_data,
        )
    )
    if rule.file_class is None:
        return None
    reason = rule.reason
    if rule.detail is Detail.LOST_REASON:
        reason = reason.format(lost)
    elif rule.detail is Detail.DELETED_AT:
        reason = reason.format(iso_utc(tombstone[1]))
    return Candidate(info.path, info.size, info.mtime_ms, rule.file_class, reason)


def referenced_sidecars(
    store: TableStore, listing: LogListing, kept: list[CheckpointRef] | None = None
) -> set[str] | None:
    """Sidecar files (relative to the table root) any retained V2 checkpoint references (of
    ``kept``, by default every complete one in ``listing``), or None if one of them cannot be
    read (then no sidecar is called unreferenced)."""
    out: set[str] = set()
    for ref in listing.checkpoints if kept is None else kept:
        if ref.kind is not LogFileKind.V2_CHECKPOINT:
            continue
        try:
            out.update(read_checkpoint(store, ref).sidecars)
        except DeltaLogError:
            return None
    return out


def log_candidates(
    store: TableStore,
    listing: LogListing,
    cutoff_ms: int,
    entries: Mapping[str, EntryState] | None = None,
) -> list[Candidate]:
    """The candidates in ``_delta_log``. ``log-temp``: old temp files, unreferenced sidecars,
    incomplete multi-part checkpoint parts, and Hadoop checksum files
    (:func:`checksum_candidates`). DynamoDB temp commits are judged by
    :func:`~deltaguard.tools.deltalog.temp_commits.judge_temp` with ``entries`` (the DynamoDB
    table's entries, None when it was not given): ``log-temp`` only once the protocol no longer
    needs them (and older than the cut-off), else ``pending-commit`` or ``stranded-commit``
    whatever their age. Everything else in ``_delta_log`` is left to Delta's own log cleanup;
    staged commits (``_staged_commits/``) belong to the table's catalog and are never
    candidates. Both engines call this (the Spark engine on its driver)."""
    out: list[Candidate] = []

    def add(rel: str, info: FileInfo | None, reason: str) -> None:
        if info is not None and info.mtime_ms < cutoff_ms:
            out.append(Candidate(rel, info.size, info.mtime_ms, FileClass.LOG_TEMP, reason))

    for name in listing.temp_files:
        rel = f"{LOG_DIR}/{name}"
        info = listing.files.get(name) or store.stat(rel)
        verdict = judge_temp(name, listing, entries)
        if verdict is None:
            add(rel, info, "log store temp file")
        elif TEMP_CLASS[verdict.state] is FileClass.LOG_TEMP:
            add(rel, info, verdict.reason)
        elif info is not None:
            cls = TEMP_CLASS[verdict.state]
            out.append(Candidate(rel, info.size, info.mtime_ms, cls, verdict.reason))
    complete_versions = {c.version for c in listing.checkpoints}
    for ref in listing.incomplete_checkpoints:
        for name in ref.files:
            why = "part of an incomplete multi-part checkpoint"
            if ref.version in complete_versions:
                why += " (a complete checkpoint of that version exists)"
            add(f"{LOG_DIR}/{name}", listing.files.get(name), why)
    listed_sidecars = store.list_dir(f"{LOG_DIR}/{SIDECARS_DIR}")
    sidecar_files = [i for i in listed_sidecars if not _is_checksum_path(i.path)]
    if sidecar_files:
        used = referenced_sidecars(store, listing)
        if used is not None:
            for info in sidecar_files:
                if info.path not in used:
                    add(info.path, info, "sidecar no retained checkpoint references")
    log_infos = [
        FileInfo(f"{LOG_DIR}/{name}", listing.files[name].size, listing.files[name].mtime_ms)
        for name in listing.hadoop_checksums
        if name in listing.files
    ]
    out += checksum_candidates(
        [*log_infos, *(i for i in listed_sidecars if _is_checksum_path(i.path))],
        present={f"{LOG_DIR}/{n}" for n in listing.files} | {i.path for i in listed_sidecars},
        cleaned={c.path for c in out},
        cutoff_ms=cutoff_ms,
    )
    return out


def _is_checksum_path(rel: str) -> bool:
    return hadoop_checksum_owner(rel.rpartition("/")[2]) is not None


def checksum_candidates(
    checksums: list[FileInfo], present: set[str], cleaned: set[str], cutoff_ms: int
) -> list[Candidate]:
    """Hadoop checksum files (``.<name>.crc``, written by Hadoop's local ChecksumFileSystem
    next to each file it writes) in ``_delta_log`` or ``_sidecars/``, one rule for commits,
    checkpoints, sidecars and every other log file: a checksum follows its file. It is a
    candidate (older than the cut-off) if its file is gone, or if its file is itself being
    cleaned up (in ``cleaned``); it is kept while its file is kept."""
    out: list[Candidate] = []
    for info in checksums:
        folder, _, name = info.path.rpartition("/")
        owner = f"{folder}/{hadoop_checksum_owner(name)}"
        if info.mtime_ms >= cutoff_ms:
            continue
        if owner in cleaned:
            why = f"Hadoop checksum (.crc) of {owner}, which is cleaned up with it"
        elif owner not in present:
            why = f"Hadoop checksum (.crc) of {owner}, which no longer exists"
        else:
            continue
        out.append(Candidate(info.path, info.size, info.mtime_ms, FileClass.LOG_TEMP, why))
    return out


def scan(
    store: TableStore,
    *,
    retention_ms: int | None = None,
    now_ms: int | None = None,
    workers: int | None = None,
    progress: ListingProgress | None = None,
    on_phase: Callable[[str], None] | None = None,
    dynamodb: DynamoDBCheck | None = None,
    inventory: InventorySource | None = None,
    inventory_s3: S3Options | None = None,
    range_files: int = DEFAULT_RANGE_FILES,
) -> ScanResult:
    """Lists and classifies the table at ``store``. ``retention_ms`` defaults to the table's
    ``delta.deletedFileRetentionDuration`` (Delta's default: 7 days). ``dynamodb``: the
    DynamoDB LogStore's table, asked about DynamoDB temp commits (without it they are kept).
    ``inventory``: read it (its S3 files with ``inventory_s3``) instead of listing the data
    files, and judge at its date too (:mod:`.inventory`). ``range_files``: an S3 directory the
    log says holds at least twice as many files is listed in key ranges of about that many
    (:mod:`.key_ranges`; 0: never). Raises
    :class:`~deltaguard.tools.deltalog.errors.DeltaLogError` if the table (or the DynamoDB
    table) cannot be read, :class:`~.inventory.InventoryError` for an unusable inventory, or
    ValueError for an invalid retention property. Nothing is modified."""
    started = time.monotonic()
    use_jemalloc()  # the pool that returns freed tables (.memory)
    phase = on_phase or (lambda _name: None)
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    phase("reading the log")
    listing = list_log(store)
    snapshot: Snapshot = load_snapshot(store, listing=listing)
    retention_ms, source = DELETED_FILE_RETENTION.resolve(snapshot.configuration, retention_ms)
    cutoff = now_ms - retention_ms
    early: _EarlyInventory | None = None
    if inventory is not None:
        early = _EarlyInventory(store, snapshot, inventory, inventory_s3 or S3Options(), phase)
        cutoff = min(cutoff, early.date_ms())
    refs = collect_references(snapshot, cutoff)
    is_hidden = hidden_name_rule(snapshot.metadata.partition_columns, snapshot.configuration)
    version, notes = snapshot.version, list(snapshot.notes)
    del snapshot  # its file tables: the reference sets hold what the scan needs
    pa.default_memory_pool().release_unused()  # give the freed tables back before listing
    report: InventoryReport | None = None
    if early is not None:  # its rows are read once the snapshot is gone: less memory at once
        table, report = early.listing(refs)
        del early
    else:
        phase("listing the table")
        table = _list_data(store, is_hidden, refs, workers, progress, range_files)
    phase("looking for lost commits")
    lost, lost_note = lost_commit_files(store)
    notes += [lost_note] if lost_note is not None else []
    phase("classifying")
    checkpoints = checkpoint_dirs(info.path for info in table.files)
    visible = [
        info
        for info in table.files
        if is_visible(info.path, is_hidden) and not in_checkpoint(info.path, checkpoints)
    ]
    candidates = data_candidates(visible, refs, cutoff, lost)
    entries = read_entries(dynamodb) if dynamodb is not None else None
    candidates += log_candidates(store, listing, cutoff, entries)
    candidates.sort(key=lambda c: c.path)
    return ScanResult(
        store.uri,
        version,
        now_ms,
        retention_ms,
        source,
        candidates,
        table.listed,
        len(refs.live),
        table.hidden_dirs,
        len(listing.files),
        time.monotonic() - started,
        notes,
        kept_dirs(checkpoints, table.hidden_dirs),
        report,
    )


class _EarlyInventory:
    """A scan's inventory (:mod:`.inventory`): its date (from its rows when it gives none:
    they are read first then) and the data files it lists."""

    def __init__(
        self,
        store: TableStore,
        snapshot: Snapshot,
        inventory: InventorySource,
        s3: S3Options,
        phase: Callable[[str], None],
    ) -> None:
        self._source, self._s3, self._phase = inventory, s3, phase
        meta = snapshot.metadata
        self._root = table_root(store, inventory, meta.partition_columns, snapshot.configuration)
        self._rows: InventoryRows | None = None
        if inventory.date_ms is None:  # the date comes from the rows: read them first
            self._rows = self._read()

    def _read(self) -> InventoryRows:
        self._phase("reading the inventory")
        return read_table_rows(self._source, self._root, self._s3)

    def date_ms(self) -> int:
        newest = None if self._rows is None else self._rows.newest_ms
        return inventory_date(self._source, newest)[0]

    def listing(self, refs: References) -> tuple[TableListing, InventoryReport]:
        """The data files the inventory lists (:mod:`.inventory_read`) and its report."""
        rows = self._rows if self._rows is not None else self._read()
        self._rows = None
        inv = self._source
        date_ms, date_source = inventory_date(inv, rows.newest_ms)
        report = InventoryReport(
            inv.location, inv.form, date_ms, date_source, rows.rows, rows.under
        )
        return inventory_listing(rows, refs.protected), report


def _list_data(
    store: TableStore,
    is_hidden: Callable[[str], bool],
    refs: References,
    workers: int | None,
    progress: ListingProgress | None,
    range_files: int,
) -> TableListing:
    """Lists the table's data files (:func:`.listing.list_table`), an S3 directory the log
    says is large in key ranges (:mod:`.key_ranges`)."""
    cuts = (
        reference_cuts(refs.live, range_files, LOCAL_MAX_RANGES)
        if isinstance(store, S3TableStore)
        else {}
    )
    return list_table(
        store, is_hidden, referenced=refs.protected, workers=workers, progress=progress, cuts=cuts
    )
