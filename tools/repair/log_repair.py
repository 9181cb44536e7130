"""``repair``'s mending of the log's own damage: broken checkpoints and a wrong ``_last_checkpoint``.

**What is broken** (one listing of ``_delta_log``, the audit's checkpoint findings):

* a complete checkpoint that cannot be read whole (truncated, garbage, a bad page, no
  protocol or metaData: ``checkpoint-unreadable``); for a V2 checkpoint, its top-level file
  and every sidecar it names (a sidecar missing, truncated or unreadable breaks it);
* a readable checkpoint whose state differs from the replay of the commits up to its version
  (:func:`~deltaguard.tools.deltalog.checkpoint_content.compare_checkpoint`:
  ``checkpoint-mismatch``; every checkpoint is compared, not only the newest);
* a multi-part checkpoint missing a part (``checkpoint-parts-missing``);
* ``_last_checkpoint`` naming a version with no complete checkpoint, or a V2 top-level file
  (its ``v2Checkpoint``) that is not there (``last-checkpoint-missing``), disagreeing with its checkpoint
  (``last-checkpoint-mismatch``), not valid JSON, or older than the newest good checkpoint.

**When it can be rebuilt**: Delta's own fallback (Spark's ``SnapshotManagement`` retries a
snapshot whose checkpoint fails from ``Checkpoints.findLastCompleteCheckpointBefore(version)``,
the newest complete checkpoint below it, plus every JSON commit after it; with none, from
``0.json``). A version ``V`` is rebuilt from the listing with every broken checkpoint left out:
the newest good complete checkpoint below ``V`` (or version 0) and the commits up to ``V``,
replayed by :func:`~deltaguard.tools.deltalog.snapshot.load_snapshot`, the one replay. If any
broken checkpoint's version cannot be replayed so, the versions from it up to the next good
checkpoint are **lost**: they are named and nothing at all is written.

**What is done** (with ``--yes``; the log is listed and judged again right before):

1. For each broken version, ascending: a checkpoint of the replayed state, written
   create-exclusive with ``deltaguard checkpoint``'s writers: a V2 one (new sidecars, a new
   UUID-named top-level file: :func:`~deltaguard.tools.checkpoint.v2_write.write_v2`) for a
   table that takes V2 checkpoints
   (:func:`~deltaguard.tools.checkpoint.build.uses_v2_checkpoints`), else a classic one. Readers choose a checkpoint by
   its name (and prefer a multi-part or V2 checkpoint to a classic one of the same version),
   so the broken files of that version are first set aside: copied create-exclusive to
   ``_delta_log/_deltaguard_quarantine/<name>.<sha256 prefix>`` (no reader lists a
   subdirectory of ``_delta_log`` as a checkpoint, nor does ``log-cleanup``), then deleted.
   A broken file is needed by no retained version: each one it covered is rebuilt first from
   the commits. When the broken file holds the classic name itself it is moved before the new
   one is written (between the two, readers fall back to an older checkpoint and the
   commits); otherwise the new one is written first. A broken V2 checkpoint's sidecars stay
   where they are: named by no kept checkpoint, they are ``log-cleanup``'s to remove once
   older than the log retention.
2. ``_last_checkpoint`` is pointed at the newest good checkpoint (classic, multi-part or V2),
   with its true ``size``, ``sizeInBytes``, ``parts`` and ``numOfAddFiles`` (and for a V2
   checkpoint ``v2Checkpoint``, as ``deltaguard checkpoint`` writes it for one it wrote): an overwrite, the one
   non-exclusive write Delta's own checkpoint writer makes too (a concurrent checkpoint writer
   may overwrite it in turn; that hint is then its own, as correct as Delta's).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from deltaguard.logstore.errors import LogFileExistsError
from deltaguard.tools.checkpoint.build import uses_v2_checkpoints
from deltaguard.tools.checkpoint.last_checkpoint import last_checkpoint_json
from deltaguard.tools.checkpoint.store import create_exclusive, overwrite
from deltaguard.tools.checkpoint.v2_write import write_v2
from deltaguard.tools.deltalog.actions import AddFile, parse_json_actions
from deltaguard.tools.deltalog.audit import last_checkpoint_mismatches
from deltaguard.tools.deltalog.checkpoint import (
    LOG_DIR,
    CheckpointRef,
    checkpoint_names,
    missing_parts,
    read_checkpoint,
)
from deltaguard.tools.deltalog.checkpoint_content import compare_checkpoint
from deltaguard.tools.deltalog.listing import (
    LastCheckpoint,
    LastCheckpointError,
    LogListing,
    list_log,
    read_last_checkpoint,
)
from deltaguard.tools.deltalog.names import SIDECARS_DIR, LogFileKind
from deltaguard.tools.deltalog.snapshot import Snapshot, load_snapshot
from deltaguard.tools.storage import S3Options, TableStore
from deltaguard.tools.storage.errors import DeltaLogError, StorageError

#: Where broken checkpoint files are set aside, under ``_delta_log``.
QUARANTINE_DIR = f"{LOG_DIR}/_deltaguard_quarantine"
LAST_CHECKPOINT = "_last_checkpoint"
#: The audit's findings this module mends.
LOG_CODES = frozenset(
    {
        "checkpoint-unreadable",
        "checkpoint-mismatch",
        "checkpoint-parts-missing",
        "last-checkpoint-missing",
        "last-checkpoint-mismatch",
        "last-checkpoint-corrupt",
    }
)
#: Delete attempts for a broken file once it is copied aside.
_DELETE_ATTEMPTS = 5


@dataclass(frozen=True)
class Built:
    """A checkpoint built in memory (the builder the caller passes: ``deltaguard checkpoint``'s
    classic writer)."""

    body: bytes
    actions: int
    add_files: int


#: Builds the classic checkpoint of a snapshot (raises :class:`DeltaLogError` if it cannot).
Builder = Callable[[Snapshot], Built]


@dataclass(frozen=True)
class Broken:
    """A broken checkpoint: its version, files (in ``_delta_log``; none for a checkpoint that
    ``_last_checkpoint`` names and that is not there), kind (``unreadable``, ``mismatch``,
    ``incomplete``, ``missing``) and why."""

    version: int
    files: tuple[str, ...]
    kind: str
    reason: str


@dataclass
class LogPlan:
    """What :func:`plan_log_repair` found: ``broken`` checkpoints; ``rebuild``, the versions
    that get a new checkpoint; ``lost``, (first, last) version ranges nothing can rebuild;
    ``hint``, why ``_last_checkpoint`` is rewritten (None: it is right, or nothing good to point
    at)."""

    broken: list[Broken] = field(default_factory=list)
    rebuild: list[int] = field(default_factory=list)
    lost: list[tuple[int, int]] = field(default_factory=list)
    hint: str | None = None
    #: the latest version of the listing judged
    latest: int | None = None

    @property
    def found(self) -> bool:
        return bool(self.broken or self.hint)


@dataclass
class LogDone:
    """What :func:`apply_log_repair` did (the JSON report's ``log``)."""

    written: list[str] = field(default_factory=list)
    quarantined: list[dict[str, str]] = field(default_factory=list)
    last_checkpoint: int | None = None


def describe(plan: LogPlan) -> list[str]:
    """The plan's findings, one line each: the broken checkpoints and the lost versions."""
    lines = [f"broken checkpoint: version {b.version} ({b.kind}): {b.reason}" for b in plan.broken]
    for first, last in plan.lost:
        span = f"version {first}" if first == last else f"versions {first} to {last}"
        lines.append(
            f"lost: {span} cannot be rebuilt (no good checkpoint below with every commit "
            "after it): nothing in the log changed"
        )
    return lines


def _whole_read_problem(store: TableStore, ref: CheckpointRef) -> str | None:
    """Why checkpoint ``ref`` cannot be read whole (every part and every sidecar a V2
    checkpoint names, every column and page with its checksum, strings validated, the actions
    decoded), or None."""
    rel = f"{LOG_DIR}/{ref.files[0]}"
    try:
        state = read_checkpoint(store, ref)
        parquet = [f"{LOG_DIR}/{n}" for n in ref.files if not n.endswith(".json")]
        for rel in [*parquet, *state.sidecars]:
            table = pq.read_table(pa.BufferReader(store.read(rel)), page_checksum_verification=True)
            table.validate(full=True)
    except DeltaLogError as exc:
        return str(exc).splitlines()[0]
    except (pa.ArrowException, OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"{rel.removeprefix(LOG_DIR + '/')}: {first}"
    return None


def _hint(store: TableStore) -> tuple[LastCheckpoint | None, str | None]:
    try:
        return read_last_checkpoint(store), None
    except LastCheckpointError as exc:
        return None, f"{LAST_CHECKPOINT} is not valid ({exc})"


def _without(listing: LogListing, broken: list[Broken]) -> LogListing:
    """``listing`` with every broken checkpoint left out (what a reader falls back to)."""
    bad = {f for b in broken for f in b.files}
    return dataclasses.replace(
        listing,
        checkpoints=[c for c in listing.checkpoints if not set(c.files) & bad],
        incomplete_checkpoints=[],
    )


def _find_broken(store: TableStore, listing: LogListing) -> list[Broken]:
    broken: list[Broken] = []
    for ref in listing.checkpoints:
        problem = _whole_read_problem(store, ref)
        if problem is not None:
            broken.append(Broken(ref.version, ref.files, "unreadable", problem))
            continue
        compared = compare_checkpoint(store, listing, ref)
        if compared.differences:
            reason = f"does not hold the state of version {ref.version}: " + "; ".join(
                compared.differences
            )
            broken.append(Broken(ref.version, ref.files, "mismatch", reason))
    for ref in listing.incomplete_checkpoints:
        reason = "multi-part checkpoint missing " + ", ".join(missing_parts(ref))
        broken.append(Broken(ref.version, ref.files, "incomplete", reason))
    return broken


def _good(listing: LogListing, broken: list[Broken]) -> list[CheckpointRef]:
    return list(_without(listing, broken).checkpoints)


def _v2_name(hint: LastCheckpoint) -> str | None:
    """The file name of the V2 top-level file ``hint``'s ``v2Checkpoint`` names, if any."""
    return hint.v2_path.rstrip("/").rsplit("/", 1)[-1] if hint.v2_path else None


def _named(hint: LastCheckpoint, good: list[CheckpointRef]) -> CheckpointRef | None:
    """The good checkpoint ``hint`` names: the V2 top-level file its ``v2Checkpoint`` names,
    else the one readers pick at its version; None if that is not there."""
    at = [c for c in good if c.version == hint.version]
    v2 = _v2_name(hint)
    if v2 is not None:
        return next((c for c in at if c.files[0] == v2), None)
    return at[-1] if at else None


def _absent(hint: LastCheckpoint) -> str:
    v2 = _v2_name(hint)
    what = f"{v2} (version {hint.version})" if v2 else f"version {hint.version}"
    return f"{LAST_CHECKPOINT} names {what}, which has no complete checkpoint"


def plan_log_repair(store: TableStore) -> tuple[LogPlan, LogListing]:
    """Lists and judges the log (see the module docstring); writes nothing. Returns the plan
    and the listing it was made from."""
    listing = list_log(store)
    plan = LogPlan(_find_broken(store, listing), latest=listing.latest_version)
    hint, hint_problem = _hint(store)
    latest = listing.latest_version
    good_versions = {c.version for c in _good(listing, plan.broken)}
    if (
        hint is not None
        and hint.version not in good_versions
        and not any(b.version == hint.version for b in plan.broken)
        and latest is not None
        and hint.version <= latest
    ):
        plan.broken.append(Broken(hint.version, (), "missing", _absent(hint)))
    clean = _without(listing, plan.broken)
    for version in sorted({b.version for b in plan.broken}):
        if version in good_versions:
            continue  # a good checkpoint of that version remains: only the broken files go
        try:
            load_snapshot(store, version, listing=clean)
        except DeltaLogError:
            above = [v for v in good_versions if v > version]
            last = (min(above) - 1) if above else (latest if latest is not None else version)
            plan.lost.append((version, max(version, last)))
            continue
        plan.rebuild.append(version)
    plan.hint = hint_problem or _hint_problem(store, listing, plan, hint)
    return plan, listing


def _hint_problem(
    store: TableStore, listing: LogListing, plan: LogPlan, hint: LastCheckpoint | None
) -> str | None:
    """Why ``_last_checkpoint`` must be rewritten once the broken checkpoints are rebuilt: it
    names a broken or absent checkpoint, disagrees with the one it names (the audit's
    ``last-checkpoint-mismatch`` rule), or is older than (or absent beside) a rebuilt one. A
    hint merely older than a good checkpoint another writer made is left (harmless)."""
    good = _good(listing, plan.broken)
    newest = max([*(c.version for c in good), *plan.rebuild], default=None)
    if newest is None:
        return None
    if hint is None:
        return f"{LAST_CHECKPOINT} is absent" if plan.rebuild else None
    if any(b.version == hint.version for b in plan.broken):
        return f"{LAST_CHECKPOINT} names the broken checkpoint of version {hint.version}"
    named = _named(hint, good)
    if named is None:
        return _absent(hint)
    if last_checkpoint_mismatches(store, listing, hint, named):
        return f"{LAST_CHECKPOINT} disagrees with checkpoint {hint.version} (parts or sizes)"
    if plan.rebuild and hint.version < newest:
        return f"{LAST_CHECKPOINT} names version {hint.version}; the newest good is {newest}"
    return None


def _rows_and_adds(store: TableStore, rel: str) -> tuple[int, int, int]:
    """A checkpoint file's (or sidecar's) actions, ``add`` actions and bytes."""
    data = store.read(rel)
    if rel.endswith(".json"):
        lines = [line for line in data.splitlines() if line.strip()]
        adds = sum(isinstance(a, AddFile) for a in parse_json_actions(data).actions)
        return len(lines), adds, len(data)
    pf = pq.ParquetFile(pa.BufferReader(data))
    adds = 0
    if "add" in pf.schema_arrow.names:
        col = pf.read(columns=["add.path"])["add"]
        adds = len(col) - col.null_count
    return pf.metadata.num_rows, adds, len(data)


def _hint_body(store: TableStore, ref: CheckpointRef) -> bytes:
    """``_last_checkpoint``'s content for the good checkpoint ``ref`` (read from its files and,
    for a V2 checkpoint, its sidecars): its true ``size``, ``sizeInBytes``, ``numOfAddFiles``
    and ``parts``; for a V2 checkpoint ``v2Checkpoint`` with the top-level file's ``path``,
    ``sizeInBytes`` and ``modificationTime`` (the lists of non-file actions and sidecars are
    optional in Delta's hint and left out)."""
    rels = [f"{LOG_DIR}/{name}" for name in ref.files]
    if ref.kind is LogFileKind.V2_CHECKPOINT:
        rels += read_checkpoint(store, ref).sidecars
    counted = [_rows_and_adds(store, rel) for rel in rels]
    v2 = None
    if ref.kind is LogFileKind.V2_CHECKPOINT:
        top = f"{LOG_DIR}/{ref.files[0]}"
        info = store.stat(top)
        v2 = {
            "path": ref.files[0],
            "sizeInBytes": counted[0][2],
            "modificationTime": info.mtime_ms if info else 0,
        }
    return last_checkpoint_json(
        ref.version,
        sum(c[0] for c in counted),
        sum(c[2] for c in counted),
        sum(c[1] for c in counted),
        len(ref.files) if ref.kind is LogFileKind.MULTIPART_CHECKPOINT else None,
        v2_checkpoint=v2,
    )


def _quarantine(store: TableStore, s3: S3Options, name: str, done: LogDone) -> None:
    """Copies ``_delta_log/name`` aside create-exclusive, then deletes it (see the module
    docstring). A file already gone is skipped."""
    rel = f"{LOG_DIR}/{name}"
    try:
        data = store.read(rel)
    except StorageError:
        if store.stat(rel) is None:
            return
        raise
    aside = f"{QUARANTINE_DIR}/{name}.{hashlib.sha256(data).hexdigest()[:12]}"
    create_exclusive(store, s3, aside, data)  # the same bytes again: no error
    outcome = store.delete_batch([rel], _DELETE_ATTEMPTS)
    if rel not in outcome.deleted and rel not in outcome.missing:
        errors = [e for _, e in [*outcome.failed, *outcome.unknown]]
        raise StorageError(
            f"{store.location(rel)}: copied to {aside} but not deleted "
            f"({errors[0] if errors else 'not sent'})",
            rel,
        )
    done.quarantined.append({"file": rel, "moved_to": aside})


def apply_log_repair(
    store: TableStore, s3: S3Options, build: Builder, say: Callable[[str], None]
) -> tuple[LogPlan, LogDone]:
    """Judges the log again and, if no version is lost, rebuilds every broken checkpoint and
    rewrites ``_last_checkpoint`` (the module docstring's steps). ``say`` gets one line per
    step, once done. Raises :class:`DeltaLogError` and the stores' errors."""
    plan, listing = plan_log_repair(store)
    done = LogDone()
    for line in describe(plan):
        say(line)
    if plan.lost or not plan.found:
        return plan, done
    clean = _without(listing, plan.broken)
    v2_tops = {c.files[0] for c in listing.checkpoints if c.kind is LogFileKind.V2_CHECKPOINT}
    hints: dict[str, bytes] = {}
    for version in sorted({b.version for b in plan.broken}):
        files = [f for b in plan.broken if b.version == version for f in b.files]
        name = checkpoint_names(version)[0]
        snap = load_snapshot(store, version, listing=clean) if version in plan.rebuild else None
        if snap is not None and uses_v2_checkpoints(snap):
            written = write_v2(store, s3, snap)
            hints[written.name] = written.hint
            done.written.append(f"{LOG_DIR}/{written.name}")
            done.written += [f"{LOG_DIR}/{SIDECARS_DIR}/{n}" for n in written.sidecars]
            say(
                f"wrote {LOG_DIR}/{written.name} (V2, {len(written.sidecars)} sidecar(s) in "
                f"{LOG_DIR}/{SIDECARS_DIR}/): version {version} rebuilt from the commits "
                f"({written.add_files} live file(s), {written.actions} action(s))"
            )
            snap = None
        built = build(snap) if snap is not None else None
        if name in files:
            _quarantine(store, s3, name, done)
            say(_moved(name, done, name in v2_tops))
        if built is not None:
            try:
                create_exclusive(store, s3, f"{LOG_DIR}/{name}", built.body)
            except LogFileExistsError:  # judged by the next run (and the audit below)
                say(f"{LOG_DIR}/{name} was created by another writer meanwhile: kept")
            else:
                hints[name] = last_checkpoint_json(
                    version, built.actions, len(built.body), built.add_files
                )
                done.written.append(f"{LOG_DIR}/{name}")
                say(
                    f"wrote {LOG_DIR}/{name}: version {version} rebuilt from the commits "
                    f"({built.add_files} live file(s), {built.actions} action(s))"
                )
        for other in files:
            if other != name:
                _quarantine(store, s3, other, done)
                say(_moved(other, done, other in v2_tops))
    _point_hint(store, s3, hints, done, say)
    return plan, done


def _moved(name: str, done: LogDone, v2: bool) -> str:
    line = f"moved broken {LOG_DIR}/{name} to {done.quarantined[-1]['moved_to']}"
    if v2:
        line += (
            f" (its sidecars in {LOG_DIR}/{SIDECARS_DIR}/, named by no kept checkpoint, are "
            "left for log-cleanup, which removes them once older than the log retention)"
        )
    return line


def _point_hint(
    store: TableStore,
    s3: S3Options,
    hints: dict[str, bytes],
    done: LogDone,
    say: Callable[[str], None],
) -> None:
    """Points ``_last_checkpoint`` at the newest good checkpoint, V2 included (the log listed
    again; ``hints``: the content for each checkpoint just written, by file name)."""
    listing = list_log(store)
    ref = None
    newest_first = sorted(
        listing.checkpoints, key=lambda c: (c.version, c.files[0] in hints), reverse=True
    )
    for c in newest_first:
        if c.files[0] in hints or _whole_read_problem(store, c) is None:
            ref = c
            break
    if ref is None:
        return
    hint, _problem = _hint(store)
    if (
        hint is not None
        and _named(hint, [ref]) is not None
        and not last_checkpoint_mismatches(store, listing, hint, ref)
    ):
        return
    body = hints.get(ref.files[0]) or _hint_body(store, ref)
    overwrite(store, s3, f"{LOG_DIR}/{LAST_CHECKPOINT}", body)
    done.last_checkpoint = ref.version
    say(f"{LAST_CHECKPOINT} now names version {ref.version} ({ref.files[0]})")
