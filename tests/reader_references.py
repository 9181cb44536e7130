"""What an independent reader, delta-rs, says each retained version of a local Delta table
references: the oracle of the cleanup properties (deltaguard's own replay is the code under
test, so it is not used here).

- The retained versions come from the raw ``_delta_log`` listing: a version is retained if
  every commit from 0 to it is there, or a checkpoint at or below it and every commit after that
  checkpoint up to it. Each one is loaded by delta-rs (``DeltaTable(path, version=v)``); one
  it cannot load raises, so a test using this never skips a version.
- A version's files: the live ``add`` actions delta-rs replays (``get_add_actions``: raw log
  paths, relative and percent-encoded or absolute ``file:`` URIs, decoded here) plus their
  deletion vector files, decoded from their descriptors here (read from the raw log: delta-rs
  1.6.6 does not expose them), per the Delta protocol's "Deletion Vector Descriptor" section: storage type ``u`` is a path relative
  to the table root, ``<random prefix><20-character Z85 UUID>`` naming
  ``<prefix>/deletion_vector_<uuid>.bin``; ``p`` an absolute path (a URI); ``i`` inline (no
  file).
- A version's timestamp: the modification time of its commit file (what Delta uses without
  in-commit timestamps), or of its checkpoint once the commit was cleaned up.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable

#: Z85 (ZeroMQ RFC 32), the alphabet of a ``u`` descriptor's UUID.
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.\d{10}\.\d{10})?(\.[^.]+)?\.(parquet|json)$")


def z85_uuid(text: str) -> uuid.UUID:
    """The UUID of 20 Z85 characters (4 bytes per 5 characters, big-endian base 85)."""
    if len(text) != 20:
        raise ValueError(f"a Z85 UUID has 20 characters: {text!r}")
    out = b""
    for i in range(0, 20, 5):
        n = 0
        for ch in text[i : i + 5]:
            n = n * 85 + _Z85.index(ch)
        out += n.to_bytes(4, "big")
    return uuid.UUID(bytes=out)


def dv_file(root: Path, storage_type: str, path_or_inline: str) -> str | None:
    """The file (relative to ``root``) a deletion vector descriptor names, or None (inline)."""
    if storage_type == "i":
        return None
    if storage_type == "u":
        prefix, encoded = path_or_inline[:-20], path_or_inline[-20:]
        name = f"deletion_vector_{z85_uuid(encoded)}.bin"
        return f"{prefix}/{name}" if prefix else name
    if storage_type == "p":
        return relative_file(root, path_or_inline)
    raise ValueError(f"unknown deletion vector storage type {storage_type!r}")


def relative_file(root: Path, uri: str) -> str:
    """A reader's absolute ``file:`` URI (or plain path) as a decoded path relative to ``root``."""
    path = unquote(urlsplit(uri).path) if uri.startswith("file:") else uri
    return Path(path).relative_to(root).as_posix()


def retained_versions(root: Path) -> list[int]:
    """The versions a reader may still load, from the raw listing of ``_delta_log``."""
    names = [p.name for p in (root / "_delta_log").iterdir()]
    commits = {int(m[1]) for n in names if (m := _COMMIT.match(n))}
    checkpoints = {int(m[1]) for n in names if (m := _CHECKPOINT.match(n))}
    latest = max(commits | checkpoints)
    out = []
    for v in range(latest + 1):
        starts = [-1] if all(c in commits for c in range(v + 1)) else []
        starts += [
            c for c in checkpoints if c <= v and all(x in commits for x in range(c + 1, v + 1))
        ]
        if starts:
            out.append(v)
    return out


def version_timestamp(root: Path, version: int) -> int:
    """Milliseconds: the commit file's modification time, else the checkpoint's."""
    log = root / "_delta_log"
    commit = log / f"{version:020d}.json"
    if commit.exists():
        return commit.stat().st_mtime_ns // 1_000_000
    checkpoint = next(log.glob(f"{version:020d}.checkpoint*"))
    return checkpoint.stat().st_mtime_ns // 1_000_000


def _checkpoint_adds(log: Path, version: int) -> list[dict[str, Any]]:
    """The ``add`` actions of the checkpoint of ``version``: a classic one's ``add`` column, or a
    V2 one's inline adds and its sidecars' ``add`` columns."""
    classic = log / f"{version:020d}.checkpoint.parquet"
    if classic.exists():
        return [a for a in pq.read_table(classic, columns=["add"])["add"].to_pylist() if a]
    v2 = next(log.glob(f"{version:020d}.checkpoint.*.json"))
    adds: list[dict[str, Any]] = []
    for line in v2.read_text().splitlines():
        action = json.loads(line) if line.strip() else {}
        if "add" in action:
            adds.append(action["add"])
        if "sidecar" in action:
            side = log / "_sidecars" / action["sidecar"]["path"]
            adds += [a for a in pq.read_table(side, columns=["add"])["add"].to_pylist() if a]
    return adds


def _raw_deletion_vectors(root: Path, version: int) -> dict[str, dict[str, Any]]:
    """Raw log path -> the deletion vector descriptor of the newest ``add`` of that path at or
    before ``version``, read from the raw log (a classic checkpoint's ``add`` column, then the
    commits after it): delta-rs 1.6.6 does not expose the descriptors of its add actions."""
    log = root / "_delta_log"
    out: dict[str, dict[str, Any]] = {}
    first = 0
    if not all((log / f"{c:020d}.json").exists() for c in range(version + 1)):
        base = max(
            c
            for c in range(version + 1)
            if any(log.glob(f"{c:020d}.checkpoint*"))
            and all((log / f"{x:020d}.json").exists() for x in range(c + 1, version + 1))
        )
        for add in _checkpoint_adds(log, base):
            out[add["path"]] = add.get("deletionVector")
        first = base + 1
    for c in range(first, version + 1):
        for line in (log / f"{c:020d}.json").read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if "add" in action:
                out[action["add"]["path"]] = action["add"].get("deletionVector")
    return {path: dv for path, dv in out.items() if dv}


def version_files(root: Path, version: int) -> set[str]:
    """Every file ``version`` references: the live data files delta-rs lists (its add actions'
    raw log paths, decoded here: delta-rs 1.6.6's ``file_uris()`` joins an absolute ``file:``
    path to the table root) and their deletion vector files (decoded paths relative to
    ``root``). Raises if delta-rs cannot load the version."""
    table = DeltaTable(str(root), version=version)
    assert table.version() == version
    raw = pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist()
    files = {relative_file(root, p) if p.startswith("file:") else unquote(p) for p in raw}
    dvs = _raw_deletion_vectors(root, version)
    for path in raw:
        dv = dvs.get(path)
        if dv is not None:
            name = dv_file(root, dv["storageType"], dv["pathOrInlineDv"])
            if name is not None:
                files.add(name)
    return files


def reader_versions(root: Path) -> dict[int, tuple[int, set[str]]]:
    """Every retained version: its timestamp and the files delta-rs says it references."""
    return {
        v: (version_timestamp(root, v), version_files(root, v)) for v in retained_versions(root)
    }
