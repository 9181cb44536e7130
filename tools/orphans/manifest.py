"""The cleanup manifest, one format for both engines: a directory holding a JSON summary and
Parquet records, one per file; each run of ``--delete --yes`` writes a new one.

Layout of one manifest (a *run directory*)::

    RUN/manifest.json        the summary (below), rewritten atomically as the run goes
    RUN/plan/*.parquet       one record per file the scan planned: outcome planned or spared
    RUN/outcome/*.parquet    one record per file deleting settled: deleted, missing, failed
                             or unknown

**Where runs go** (``--manifest DIR``, by default ``<state dir>/orphans``): every run creates
a new run directory ``DIR/<table>-<hash>-<UTC time>-<random>`` (:func:`new_run_dir`: created
exclusively, never an existing one), so no manifest is ever replaced and the same
``--manifest`` works on every run. A ``DIR`` that is itself a manifest (the layout of earlier
versions: ``DIR/manifest.json``) counts as one of the runs in it. Before writing, a run looks
for the latest earlier run of the same table in ``DIR`` (:func:`unfinished_run`); if that run
did not finish (status ``deleting`` or ``interrupted``, or ``failed``/``unknown`` files, or an
``error``), the new run *continues* it: its summary's ``continues`` (:func:`continuation`)
names it, and the files whose outcome it did not know are re-checked against the new run's
plan.

Every record has the columns of :data:`RECORD_SCHEMA`, in both engines:
``path`` (relative to the table root), ``class``, ``size``, ``mtime_ms``, ``outcome`` (one of
:data:`OUTCOMES`), ``why`` (why the re-read of the log spared it, else null) and ``error``
(why it failed or why its outcome is unknown, else null). The local engine writes each
``.parquet`` file whole (temp file, fsync, rename) every :data:`BATCH_ROWS` records, so no
more than one batch of records is ever held in memory and a crash leaves only complete files;
the Spark engine writes the same columns with Spark (``part-*.parquet``, ``_SUCCESS``).

The summary (``schema`` = :data:`MANIFEST_SCHEMA`) holds no per-file lists::

    {
      "schema": "deltaguard.orphans.manifest/2",
      "command": "orphans" | "log-cleanup",   # the command that wrote it (absent: orphans)
      "status": "deleting" | "done" | "interrupted",   # interrupted: see "signal", "error"
      "table": str, "version_scanned": int, "version_rechecked": int | null,
      "retention_ms": int, "cutoff_ms": int, "classes": [CLASS],
      "started_at": ISO-8601, "finished_at": ISO-8601 | null,
      "planned": int,                 # files the scan planned to delete
      "counts": {"planned": int,      # still to delete after the re-read of the log
                 "spared": int, "deleted": int, "missing": int,
                 "failed": int, "unknown": int,
                 "not_sent": int},    # planned, never sent: a signal stopped the run
      "records": {"plan": "plan", "outcome": "outcome"},   # relative to RUN
      "error": str | null,            # a failure after deleting began
      "signal": "SIGINT" | "SIGTERM" | null,   # what stopped the run (status interrupted)
      "requests": int | null,         # delete requests sent (local engine)
      "continues": null | {           # the unfinished earlier run this one finishes
        "run": str,                   # its run directory's name
        "manifest": str,              # its run directory
        "status": str, "signal": str | null, "error": str | null,
        "deleted": int,               # what it deleted (counted there, never here)
        "rechecked": int | null,      # its files of unknown outcome (for a run that
                                      # crashed while deleting: its unsettled ones too)
        "planned_again": int | null,  # of those, in this run's plan: still there
        "gone": int | null            # of those, not found by this run's scan
      }                               # (the three are null until the plan is written)
    }

Order of writes: the plan records first, then the summary with ``"status": "deleting"``, and
only then the first delete; the outcome records as deleting goes; the summary again with the
outcome. A crash after deleting began leaves a ``deleting`` summary and the plan naming every
file that may be gone. A failure after deleting began never loses what is known: ``done``
with ``error`` (a final write failed: the summary on disk may still say ``deleting``; the
command's output has the counts, and the files whose records could not be written), or
``interrupted``: with ``signal``, SIGINT or SIGTERM stopped it (:mod:`.interrupt`: no delete
sent after the signal; ``deleted`` <= files gone <= ``deleted`` + ``unknown``, the planned
files never sent counted in ``not_sent`` and still ``planned`` in the records), without it
the Spark engine's delete job failed (every file without an outcome record is ``unknown``).

A manifest is never replaced: writing into a run directory that already holds one is refused
(:func:`refuse_existing`; the Python API's ``manifest_path`` is one run directory).

Read it with :func:`read_manifest` (one run) or :func:`read_manifests` (every run in a
directory), or directly: ``pyarrow.parquet.read_table("RUN/outcome")``,
``duckdb -c "select outcome, count(*) from 'RUN/outcome/*.parquet' group by all"``.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from deltaguard.tools.state_dir import manifests_dir

MANIFEST_SCHEMA = "deltaguard.orphans.manifest/2"
SUMMARY_FILE = "manifest.json"
PLAN_DIR = "plan"
OUTCOME_DIR = "outcome"
#: Where the records are, relative to the manifest directory (the summary's ``records``).
RECORDS = {"plan": PLAN_DIR, "outcome": OUTCOME_DIR}
#: Every record's outcome: ``planned``/``spared`` in the plan, the others in the outcome.
OUTCOMES = ("planned", "deleted", "missing", "spared", "failed", "unknown")
#: The columns of every record, both engines.
RECORD_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("class", pa.string()),
        ("size", pa.int64()),
        ("mtime_ms", pa.int64()),
        ("outcome", pa.string()),
        ("why", pa.string()),
        ("error", pa.string()),
    ]
)
#: Records per Parquet file the local engine writes (the most it holds at once).
BATCH_ROWS = 10_000
_SPARK_TYPES = {pa.string(): "string", pa.int64(): "long"}


#: The end of a run directory's name (:func:`new_run_dir`): UTC time and a random token.
RUN_NAME_END = re.compile(r"-\d{8}T\d{6}\.\d{6}Z-[0-9a-f]{8}$")
#: The entries of a manifest directory itself (an earlier version's ``--manifest DIR``).
_MANIFEST_ENTRIES = frozenset({SUMMARY_FILE, PLAN_DIR, OUTCOME_DIR})


class ManifestPathError(ValueError):
    """A ``--manifest`` path that cannot be a manifest directory."""


def record_ddl() -> str:
    """:data:`RECORD_SCHEMA` as a Spark DDL string (the Spark engine's records)."""
    return ", ".join(f"{f.name} {_SPARK_TYPES[f.type]}" for f in RECORD_SCHEMA)


def check_manifest_path(path: Path) -> None:
    """Raises :class:`ManifestPathError` for a path that cannot be a manifest directory: one
    ending in ``.json`` (the format of manifest/1, a single file: refused rather than read as
    a directory name), an existing file, or an existing non-empty directory that holds no
    ``manifest.json`` (never written into, nor cleared)."""
    if path.suffix.lower() == ".json":
        raise ManifestPathError(
            f"{path}: the manifest is a directory (manifest.json plus Parquet records, "
            "docs/guides/cleanup.md); give a directory path, not a .json file"
        )
    if path.exists() and not path.is_dir():
        raise ManifestPathError(f"{path}: exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not (path / SUMMARY_FILE).is_file():
        raise ManifestPathError(f"{path}: a non-empty directory that is not a manifest")


def check_manifests_dir(path: Path) -> None:
    """Raises :class:`ManifestPathError` for a ``--manifest`` path that cannot hold run
    directories: one ending in ``.json``, an existing file, or an existing directory holding
    anything but manifests (run directories, a manifest of its own, hidden temp files): a
    directory of other content is never written into."""
    if path.suffix.lower() == ".json" or (path.exists() and not path.is_dir()):
        check_manifest_path(path)
    if not path.is_dir():
        return
    for entry in path.iterdir():
        if entry.name.startswith(".") or entry.name in _MANIFEST_ENTRIES:
            continue
        if entry.is_dir() and (RUN_NAME_END.search(entry.name) or (entry / SUMMARY_FILE).is_file()):
            continue
        raise ManifestPathError(
            f"{path}: holds {entry.name}, which is not a cleanup manifest: --manifest is a "
            "directory of manifests (docs/guides/cleanup.md); choose another one"
        )


def run_dir_name(table: str, now: datetime) -> str:
    """``<table slug>-<hash>-<UTC time>``, the name a run's manifest directory starts with: the
    slug is the table location with unsafe characters replaced, plus a short hash so distinct
    tables never collide."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", table).strip("_.")[-60:] or "table"
    digest = hashlib.sha256(table.encode()).hexdigest()[:8]
    return f"{slug}-{digest}-{now.strftime('%Y%m%dT%H%M%S.%fZ')}"


def default_manifest_path(table: str, now: datetime) -> Path:
    """``<state dir>/orphans/<run_dir_name>`` (:func:`~deltaguard.tools.state_dir.manifests_dir`):
    where a run's manifest goes without ``--manifest``."""
    return manifests_dir() / run_dir_name(table, now)


def new_run_dir(directory: Path, table: str, now: datetime | None = None) -> Path:
    """Creates and returns a new run directory in ``directory`` (created with its parents):
    ``<table>-<hash>-<UTC time>-<random>`` (the name of
    :func:`run_dir_name` plus 8 random hex digits),
    created exclusively: an existing directory is never reused."""
    stamp = now or datetime.now(UTC)
    base = run_dir_name(table, stamp)
    while True:
        run = directory / f"{base}-{secrets.token_hex(4)}"
        try:
            run.mkdir(parents=True)
        except FileExistsError:
            continue
        return run


def read_manifests(directory: Path | str) -> list[Manifest]:
    """Every readable manifest in ``directory`` (its run directories, and ``directory``
    itself if it is one), oldest first (:func:`_started`). A summary that cannot be read or
    has another schema is left out."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found: list[Manifest] = []
    for candidate in [directory, *sorted(p for p in directory.iterdir() if p.is_dir())]:
        if not (candidate / SUMMARY_FILE).is_file():
            continue
        try:
            found.append(_read_one(candidate))
        except (OSError, ValueError):
            continue
    return sorted(found, key=_started)


def _started(m: Manifest) -> tuple[str, int, str]:
    """When a run started: its ``started_at`` (to the second), then when its summary was
    last written (a later run's first write follows an earlier run's last), then its name."""
    try:
        written = (m.directory / SUMMARY_FILE).stat().st_mtime_ns
    except OSError:
        written = 0
    return str(m.summary.get("started_at")), written, m.directory.name


def needs_finishing(summary: dict[str, Any]) -> bool:
    """True if the run of this summary did not finish its job: it is still ``deleting`` (it
    crashed) or ``interrupted``, or it left ``failed`` or ``unknown`` files or an ``error``."""
    counts = summary.get("counts") or {}
    return (
        summary.get("status") != "done"
        or bool(counts.get("failed") or counts.get("unknown"))
        or bool(summary.get("error"))
    )


def unfinished_run(
    directory: Path, table: str, exclude: Path | None = None, command: str = "orphans"
) -> Manifest | None:
    """The latest earlier run of ``table`` by ``command`` in ``directory``
    (:func:`read_manifests`; not ``exclude``, the new run's own directory; a summary without
    ``command`` is an ``orphans`` one), if it :func:`needs_finishing`; else None (no earlier
    run, or the latest one finished)."""
    runs = [
        m
        for m in read_manifests(directory)
        if m.summary.get("table") == table
        and m.directory != exclude
        and m.summary.get("command", "orphans") == command
    ]
    return runs[-1] if runs and needs_finishing(runs[-1].summary) else None


def continuation(earlier: Manifest, run_dir: Path | None = None) -> dict[str, Any]:
    """The new run's summary ``continues`` (module docstring): which run it continues, and
    the re-check of that run's files of unknown outcome (its ``unknown`` records; for a run
    that crashed while ``deleting``, its unsettled ``planned`` ones too) against the plan
    records in ``run_dir`` (None: the plan is not written yet, the re-check counts are
    null). A file of the plan is still there (``planned_again``: this run deletes it or
    spares it); one missing from the plan was not found by this run's scan (``gone``)."""
    doc = earlier.summary
    out: dict[str, Any] = {
        "run": earlier.directory.name,
        "manifest": str(earlier.directory),
        "status": doc.get("status"),
        "signal": doc.get("signal"),
        "error": doc.get("error"),
        "deleted": (doc.get("counts") or {}).get("deleted", 0),
        "rechecked": None,
        "planned_again": None,
        "gone": None,
    }
    if run_dir is None:
        return out
    records = earlier.records()
    unsure = ["unknown", "planned"] if doc.get("status") == "deleting" else ["unknown"]
    paths = records.filter(pc.is_in(records["outcome"], value_set=pa.array(unsure)))["path"]
    again = 0
    if len(paths) and (run_dir / PLAN_DIR).is_dir():
        plan = ds.dataset(run_dir / PLAN_DIR, format="parquet", schema=RECORD_SCHEMA)
        again = plan.count_rows(filter=pc.field("path").isin(paths.unique()))
    out.update(rechecked=len(paths), planned_again=again, gone=len(paths) - again)
    return out


def refuse_existing(path: Path) -> None:
    """Raises :class:`ManifestPathError` (one line: the path, what it holds, what to do) if
    ``path`` already holds a manifest: a manifest is never replaced."""
    summary = path / SUMMARY_FILE
    if not summary.is_file():
        return
    try:
        doc = orjson.loads(summary.read_bytes())
        held = f" (status {doc.get('status')}, started {doc.get('started_at')})"
    except (OSError, orjson.JSONDecodeError, AttributeError):
        held = ""
    raise ManifestPathError(
        f"{path} already holds a manifest{held}: a manifest is never replaced; give a new "
        "directory (or new_run_dir(): the command's --manifest makes a new one every run)"
    )


def prepare_manifest_dir(path: Path) -> None:
    """Checks ``path`` (:func:`check_manifest_path`, :func:`refuse_existing`) and creates
    it."""
    check_manifest_path(path)
    refuse_existing(path)
    path.mkdir(parents=True, exist_ok=True)


def write_summary(directory: Path, summary: dict[str, Any]) -> None:
    """Writes ``directory/manifest.json`` atomically and durably (temp file, fsync,
    ``os.replace``, fsync of the directory): readers see the old or the new summary."""
    _write_atomically(
        directory / SUMMARY_FILE,
        orjson.dumps({"schema": MANIFEST_SCHEMA, **summary}, option=orjson.OPT_INDENT_2),
    )


def _write_atomically(path: Path, data: bytes | pa.Table) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, bytes):
                f.write(data)
            else:
                with pq.ParquetWriter(f, RECORD_SCHEMA) as writer:
                    writer.write_table(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_record_file(path: Path, rows: list[tuple[Any, ...]]) -> None:
    """Writes ``rows`` (tuples in :data:`RECORD_SCHEMA`'s column order) as the one Parquet
    file ``path``, whole or not at all (:func:`_write_atomically`), replacing the file there:
    the Spark engine's executors write their delete batches' records this way."""
    columns: list[list[Any]] = [[] for _ in RECORD_SCHEMA]
    for row in rows:
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    table = pa.table(
        {f.name: pa.array(c, f.type) for f, c in zip(RECORD_SCHEMA, columns, strict=True)},
        schema=RECORD_SCHEMA,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomically(path, table)


class RecordWriter:
    """Appends records to ``directory/<records>/part-NNNNN.parquet``: buffered, and written
    as one whole Parquet file (:func:`_write_atomically`) every ``batch_rows`` records
    (default :data:`BATCH_ROWS`, read when the writer is made) and on
    :meth:`flush`. A write that fails raises OSError and keeps the buffered records
    (:meth:`take_buffered`). Not thread-safe: one writer at a time."""

    def __init__(self, directory: Path, records: str, batch_rows: int | None = None) -> None:
        self._dir = directory / records
        self._batch_rows = batch_rows or BATCH_ROWS
        self._columns: dict[str, list[Any]] = {f.name: [] for f in RECORD_SCHEMA}
        self._parts = 0
        self.written = 0

    def add(
        self,
        path: str,
        file_class: str,
        size: int | None,
        mtime_ms: int | None,
        outcome: str,
        *,
        why: str | None = None,
        error: str | None = None,
    ) -> None:
        """Buffers one record; writes the buffer when it is full."""
        row = (path, file_class, size, mtime_ms, outcome, why, error)
        for column, value in zip(self._columns.values(), row, strict=True):
            column.append(value)
        if len(self._columns["path"]) >= self._batch_rows:
            self.flush()

    def flush(self) -> None:
        """Writes the buffered records as one Parquet file (none if the buffer is empty)."""
        rows = len(self._columns["path"])
        if not rows:
            return
        self._dir.mkdir(parents=True, exist_ok=True)
        table = pa.table(self._columns, schema=RECORD_SCHEMA)
        _write_atomically(self._dir / f"part-{self._parts:05d}.parquet", table)
        self._parts += 1
        self.written += rows
        for column in self._columns.values():
            column.clear()

    def take_buffered(self) -> list[dict[str, Any]]:
        """The buffered records, as dicts, removed from the buffer (after a failed write)."""
        names = list(self._columns)
        rows = [
            dict(zip(names, row, strict=True)) for row in zip(*self._columns.values(), strict=True)
        ]
        for column in self._columns.values():
            column.clear()
        return rows


@dataclass(frozen=True)
class Manifest:
    """A manifest as read back: its summary and its records."""

    directory: Path
    summary: dict[str, Any]

    def plan(self) -> pa.Table:
        """The plan's records (outcome ``planned`` or ``spared``)."""
        return _read_records(self.directory / self.summary["records"]["plan"])

    def outcomes(self) -> pa.Table:
        """The records of the files deleting settled (empty while nothing is written)."""
        return _read_records(self.directory / self.summary["records"]["outcome"])

    def records(self) -> pa.Table:
        """Each planned file once, with its latest outcome: the outcome records, then the
        plan's records of the files without one (``spared``, or ``planned``: not settled,
        or its record was not written; after a crash they may be gone)."""
        plan, done = self.plan(), self.outcomes()
        unsettled = plan.filter(pc.invert(pc.is_in(plan["path"], value_set=done["path"])))
        return pa.concat_tables([done, unsettled])

    def paths(self, outcome: str) -> list[str]:
        """The sorted paths of the :meth:`records` with ``outcome`` (one of :data:`OUTCOMES`)."""
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}: one of {', '.join(OUTCOMES)}")
        table = self.records()
        return sorted(table.filter(pc.equal(table["outcome"], outcome))["path"].to_pylist())


def _read_records(path: Path) -> pa.Table:
    if not path.is_dir():
        return RECORD_SCHEMA.empty_table()
    table = pq.read_table(path, schema=RECORD_SCHEMA)
    return table.replace_schema_metadata(None)


def read_manifest(directory: Path | str) -> Manifest:
    """Reads the summary of the manifest in ``directory``: the latest of
    :func:`read_manifests` (for a ``--manifest`` directory, its latest run), else the one
    ``directory`` is; the records are read on demand (:class:`Manifest`). Raises OSError if
    there is none, ValueError for a summary of another schema."""
    runs = read_manifests(directory)
    return runs[-1] if runs else _read_one(Path(directory))


def _read_one(directory: Path) -> Manifest:
    summary = orjson.loads((directory / SUMMARY_FILE).read_bytes())
    if summary.get("schema") != MANIFEST_SCHEMA:
        raise ValueError(
            f"{directory}: manifest schema {summary.get('schema')!r}, not {MANIFEST_SCHEMA}"
        )
    return Manifest(directory, summary)
