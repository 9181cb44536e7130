"""Damage to a Delta table on local disk, kind by kind, for the "healthy means readable" property
(tests/test_healthy_means_readable.py), and the small delta-rs table
it is applied to.

Each kind (:class:`Kind`) damages the files of a table directory the way storage, an operator or
a crashed writer does, and returns the files it damaged (paths relative to the table root, as
stored: the names a finding must give). Nothing here reads the log with deltaguard's code: the
log files are told apart by their names alone (:class:`TableFiles`), and the live data files are
the caller's (delta-rs' or Spark's own list), so the damage stays independent of the code under
test.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import pyarrow as pa

LOG = "_delta_log"
_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(
    r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10})|\.[0-9a-f-]{36})?\.(?:parquet|json)$"
)
#: A line no Delta reader can parse: an action cut off mid-way.
CORRUPT_LINE = '{"add": {"path": '


class Kind(Enum):
    """The kinds of damage. ``DATA_*`` hit a live data file, ``DV_*`` a deletion vector
    file, ``CHECKPOINT_*`` the newest checkpoint, ``LAST_CHECKPOINT_*`` the hint, ``GAP_*``
    remove a commit, ``CORRUPT_*`` replace a commit's last line with :data:`CORRUPT_LINE`
    ("before"/"after": the commit is covered by the newest checkpoint, or not)."""

    DATA_DELETED = "data-deleted"
    DATA_TRUNCATED = "data-truncated"  # the first 100 bytes kept
    DATA_GROWN = "data-grown"  # 64 bytes appended
    DATA_ZERO = "data-zero-byte"
    DATA_WRONG_MAGIC = "data-wrong-magic"  # same size, the trailing "PAR1" overwritten
    DV_DELETED = "dv-deleted"
    DV_SHORT = "dv-short"  # cut to half its size
    CHECKPOINT_DELETED = "checkpoint-deleted"  # every file of it; _last_checkpoint still names it
    CHECKPOINT_TRUNCATED = "checkpoint-truncated"  # its first file cut to half
    CHECKPOINT_MISMATCHED = "checkpoint-mismatched"  # holds the previous checkpoint's content
    CHECKPOINT_PART_MISSING = "checkpoint-part-missing"  # a multi-part checkpoint's last part
    LAST_CHECKPOINT_MISSING = "last-checkpoint-names-missing"  # names a version with none
    LAST_CHECKPOINT_SIZE = "last-checkpoint-wrong-size"  # size and sizeInBytes off
    GAP_AFTER_CHECKPOINT = "gap-after-checkpoint"
    GAP_BEFORE_CHECKPOINT = "gap-before-checkpoint"
    CORRUPT_AFTER_CHECKPOINT = "corrupt-line-after-checkpoint"
    CORRUPT_BEFORE_CHECKPOINT = "corrupt-line-before-checkpoint"

    @property
    def data_file(self) -> bool:
        """Damage to a live data file (what ``repair`` removes)."""
        return self.value.startswith("data-")

    @property
    def footer_only(self) -> bool:
        """Damage only a read of the file shows (its listing looks right)."""
        return self is Kind.DATA_WRONG_MAGIC


@dataclass(frozen=True)
class TableFiles:
    """The files of an undamaged table, by name: ``commits`` (version -> name),
    ``checkpoints`` (version -> the names of its files; multi-part ones sorted by part),
    ``dv_files`` (relative to the root, the newest first: the last DML's, which the latest
    version holds unless a later commit dropped it) and ``live_files`` (relative to the root,
    sorted; the live data files of the latest version are the caller's, from a reader)."""

    commits: dict[int, str]
    checkpoints: dict[int, list[str]]
    dv_files: list[str]
    live_files: list[str]

    @classmethod
    def of(cls, root: Path, live_files: list[str]) -> TableFiles:
        commits: dict[int, str] = {}
        checkpoints: dict[int, list[str]] = {}
        for path in sorted((root / LOG).iterdir()):
            if m := _COMMIT.match(path.name):
                commits[int(m[1])] = path.name
            elif m := _CHECKPOINT.match(path.name):
                checkpoints.setdefault(int(m[1]), []).append(path.name)
        dvs = sorted(root.rglob("deletion_vector_*.bin"), key=lambda p: (-p.stat().st_mtime, p))
        dv_files = [p.relative_to(root).as_posix() for p in dvs]
        return cls(commits, checkpoints, dv_files, sorted(live_files))

    @property
    def latest(self) -> int:
        return max(self.commits)

    @property
    def checkpoint(self) -> int | None:
        """The newest checkpoint's version."""
        return max(self.checkpoints, default=None)

    def _after(self) -> list[int]:
        cp = self.checkpoint
        return [v for v in sorted(self.commits) if cp is None or v > cp]

    def _before(self) -> list[int]:
        cp = self.checkpoint
        return [] if cp is None else [v for v in sorted(self.commits) if v <= cp]

    def _classic(self) -> list[int]:
        return [
            v
            for v, names in sorted(self.checkpoints.items())
            if len(names) == 1 and names[0].endswith(".checkpoint.parquet")
        ]

    def kinds(self) -> list[Kind]:
        """The kinds this table can suffer (a table without deletion vectors has no DV damage,
        one without a multi-part checkpoint no missing part, ...)."""
        cp = self.checkpoint
        able = {
            Kind.DV_DELETED: bool(self.dv_files),
            Kind.DV_SHORT: bool(self.dv_files),
            Kind.CHECKPOINT_DELETED: cp is not None,
            Kind.CHECKPOINT_TRUNCATED: cp is not None,
            Kind.CHECKPOINT_MISMATCHED: len(self._classic()) >= 2 and self._classic()[-1] == cp,
            Kind.CHECKPOINT_PART_MISSING: cp is not None and len(self.checkpoints[cp]) > 1,
            Kind.LAST_CHECKPOINT_MISSING: cp is not None and bool(self._after()),
            Kind.LAST_CHECKPOINT_SIZE: cp is not None,
            Kind.GAP_AFTER_CHECKPOINT: len(self._after()) >= 2,
            Kind.GAP_BEFORE_CHECKPOINT: len(self._before()) >= 2,
            Kind.CORRUPT_AFTER_CHECKPOINT: bool(self._after()),
            Kind.CORRUPT_BEFORE_CHECKPOINT: bool(self._before()),
        }
        return [k for k in Kind if able.get(k, bool(self.live_files))]

    def damage(self, root: Path, kind: Kind, pick: int = 0) -> list[str]:
        """Applies ``kind`` to the table at ``root`` (a copy of the table these names are
        from) and returns the damaged files (relative to ``root``). ``pick`` chooses the data or
        DV file (modulo their number). Raises ValueError for a kind :meth:`kinds` lacks."""
        if kind not in self.kinds():
            raise ValueError(f"{kind.value} does not apply to this table")
        if kind.data_file:
            rel = self.live_files[pick % len(self.live_files)]
            _damage_data(root / rel, kind)
            return [rel]
        if kind in (Kind.DV_DELETED, Kind.DV_SHORT):
            rel = self.dv_files[pick % len(self.dv_files)]
            path = root / rel
            if kind is Kind.DV_DELETED:
                path.unlink()
            else:
                path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
            return [rel]
        if kind.value.startswith("checkpoint-"):
            return self._damage_checkpoint(root, kind)
        if kind in (Kind.LAST_CHECKPOINT_MISSING, Kind.LAST_CHECKPOINT_SIZE):
            path = root / LOG / "_last_checkpoint"
            hint: dict[str, Any] = (
                json.loads(path.read_text()) if path.exists() else {"version": self.checkpoint}
            )
            if kind is Kind.LAST_CHECKPOINT_MISSING:
                hint = {"version": self._after()[-1], "size": hint.get("size", 1)}
            else:
                hint["size"] = int(hint.get("size", 0)) + 7
                hint["sizeInBytes"] = int(hint.get("sizeInBytes", 0)) + 100
            path.write_text(json.dumps(hint))
            return [f"{LOG}/_last_checkpoint"]
        if kind in (Kind.GAP_AFTER_CHECKPOINT, Kind.GAP_BEFORE_CHECKPOINT):
            versions = self._after() if kind is Kind.GAP_AFTER_CHECKPOINT else self._before()
            name = self.commits[versions[-2]]  # never the newest: that would be no gap
            (root / LOG / name).unlink()
            return [f"{LOG}/{name}"]
        versions = self._after() if kind is Kind.CORRUPT_AFTER_CHECKPOINT else self._before()
        name = self.commits[versions[0] if kind is Kind.CORRUPT_AFTER_CHECKPOINT else versions[-1]]
        path = root / LOG / name
        lines = path.read_text().splitlines()
        lines[-1] = CORRUPT_LINE
        path.write_text("\n".join(lines) + "\n")
        return [f"{LOG}/{name}"]

    def _damage_checkpoint(self, root: Path, kind: Kind) -> list[str]:
        cp = self.checkpoint
        assert cp is not None
        names = self.checkpoints[cp]
        if kind is Kind.CHECKPOINT_DELETED:
            for name in names:
                (root / LOG / name).unlink()
            return [f"{LOG}/{n}" for n in names]
        if kind is Kind.CHECKPOINT_TRUNCATED:
            path = root / LOG / names[0]
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
            return [f"{LOG}/{names[0]}"]
        if kind is Kind.CHECKPOINT_MISMATCHED:
            older = self.checkpoints[self._classic()[-2]][0]
            (root / LOG / names[0]).write_bytes((root / LOG / older).read_bytes())
            return [f"{LOG}/{names[0]}"]
        (root / LOG / names[-1]).unlink()  # CHECKPOINT_PART_MISSING
        return [f"{LOG}/{names[-1]}"]


def _damage_data(path: Path, kind: Kind) -> None:
    data = path.read_bytes()
    if kind is Kind.DATA_DELETED:
        path.unlink()
    elif kind is Kind.DATA_TRUNCATED:
        path.write_bytes(data[:100])
    elif kind is Kind.DATA_GROWN:
        path.write_bytes(data + bytes(64))
    elif kind is Kind.DATA_ZERO:
        path.write_bytes(b"")
    else:  # DATA_WRONG_MAGIC: same size, no Parquet trailer
        path.write_bytes(data[:-4] + b"XXXX")


#: The partition values of :func:`write_delta_rs_table`: each needs escaping in a path.
PARTITION_VALUES = ("a b", "x+y", "p%q", "日本")


def write_delta_rs_table(root: Path) -> int:
    """Writes a delta-rs table at ``root`` and returns its row count: partitioned by ``p``
    (:data:`PARTITION_VALUES`), versions 0-5: two appends, a checkpoint at 1, an append and a
    DELETE (a file removed), a checkpoint at 3, two more appends after it (19 rows in
    19 live files)."""
    from deltalake import DeltaTable, write_deltalake

    def rows(i: int) -> pa.Table:
        values = list(PARTITION_VALUES)
        return pa.table({"p": values, "n": [i * 10 + k for k in range(len(values))]})

    table = str(root)
    write_deltalake(table, rows(0), partition_by=["p"])
    write_deltalake(table, rows(1), partition_by=["p"], mode="append")
    DeltaTable(table).create_checkpoint()
    write_deltalake(table, rows(2), partition_by=["p"], mode="append")
    DeltaTable(table).delete("n = 21")
    DeltaTable(table).create_checkpoint()
    write_deltalake(table, rows(4), partition_by=["p"], mode="append")
    write_deltalake(table, rows(5), partition_by=["p"], mode="append")
    return 5 * len(PARTITION_VALUES) - 1
