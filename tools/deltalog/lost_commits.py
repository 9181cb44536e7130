"""Lost commits: the ``N.json`` bytes a concurrent writer overwrote, kept by bucket versioning.

Delta's default ``S3SingleDriverLogStore`` writes ``N.json`` with a plain PUT: when two drivers
commit the same version, the later PUT replaces the earlier commit, and the earlier writer
believes it committed. On a versioned bucket the overwritten bytes stay behind as a
noncurrent object version of ``_delta_log/N.json``, and the data files that commit added stay
in the table directory (no retained version names them). :func:`scan_lost_commits` finds
them:

* one ``GetBucketVersioning``: ``Enabled`` or ``Suspended`` (noncurrent versions may remain
  from before the suspension) lists the versions; off, denied or failing: :attr:`LostScan.note`
  says so once, and nothing is found (never damage);
* ``ListObjectVersions`` of the log prefix (taken literally), paginated;
* for every ``N.json`` whose current version exists, each noncurrent version whose ETag and
  size differ from the current one's (a rewrite of the same bytes is not a lost commit) is
  read with ``GetObject VersionId`` and described (:class:`LostCommit`).

A lost commit is *restored* when a retained commit's ``commitInfo`` carries
:data:`RESTORED_KEY` naming its version and ETag (written by ``deltaguard repair
--restore-lost``); :func:`restored_mark` reads that marker.

Local tables keep no overwritten versions: nothing is looked for there (no note).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from botocore.exceptions import BotoCoreError, ClientError

from deltaguard.logstore.aws_errors import describe, error_code
from deltaguard.logstore.commit_names import commit_version
from deltaguard.tools.deltalog.actions import (
    AddFile,
    CdcFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    parse_json_actions,
)
from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.deltalog.provenance import Provenance, classify
from deltaguard.tools.storage import S3TableStore, TableStore

#: The ``commitInfo`` key of a commit that restores a lost one: ``{"version", "versionId",
#: "etag"}`` of the lost ``N.json`` object version.
RESTORED_KEY = "deltaguardRestoredLostCommit"

#: The note when the bucket's versioning is off (or was never enabled).
VERSIONING_OFF = "bucket versioning off: lost commits cannot be found"

_KIND = {
    RemoveFile: "remove",
    Metadata: "metaData",
    Protocol: "protocol",
    Txn: "txn",
    DomainMetadata: "domainMetadata",
    CdcFile: "cdc",
}


@dataclass(frozen=True)
class LostCommit:
    """One overwritten ``N.json`` object version: what it held.

    ``others``: the kinds of actions besides ``add`` and ``commitInfo`` (``remove``,
    ``metaData``, ``protocol``, ``txn``, ``domainMetadata``, ``cdc``), plus ``unparsable``
    when a line is not a valid action; empty for a blind append. ``rows``: the records its
    adds hold (``numRecords`` of their stats, else ``operationMetrics.numOutputRows``), None
    when neither says."""

    version: int
    version_id: str
    etag: str
    size: int
    provenance: Provenance
    operation: str | None
    timestamp_ms: int | None
    adds: tuple[AddFile, ...]
    rows: int | None
    others: tuple[str, ...]
    commit_info: Mapping[str, Any] | None
    body: bytes = field(repr=False)

    @property
    def blind_append(self) -> bool:
        """Only ``add`` actions (and ``commitInfo``): nothing it read or changed besides."""
        return not self.others and bool(self.adds)

    def describe(self) -> str:
        """One line: version, object version, writer, operation, time, files and rows."""
        from deltaguard.tools.deltalog.times import iso_utc

        rows = "unknown" if self.rows is None else f"{self.rows:,}"
        held = f", also {', '.join(self.others)}" if self.others else ""
        return (
            f"version {self.version} (object version {self.version_id}) by "
            f"{self.provenance.label}: {self.operation or 'unknown operation'} at "
            f"{iso_utc(self.timestamp_ms)}, {len(self.adds)} file(s) added, {rows} rows{held}"
        )


@dataclass
class LostScan:
    """What :func:`scan_lost_commits` found: the lost commits (by version, then object
    version), or a ``note`` saying why none could be looked for."""

    lost: list[LostCommit] = field(default_factory=list)
    note: str | None = None
    versioning: str | None = None


def _rows(adds: Iterable[AddFile], info: Mapping[str, Any] | None) -> int | None:
    total = 0
    for add in adds:
        try:
            stats = orjson.loads(add.stats) if add.stats else None
        except orjson.JSONDecodeError:
            stats = None
        n = stats.get("numRecords") if isinstance(stats, dict) else None
        if not isinstance(n, int):
            break
        total += n
    else:
        return total
    metrics = (info or {}).get("operationMetrics")
    value = metrics.get("numOutputRows") if isinstance(metrics, dict) else None
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def describe_commit(
    version: int,
    version_id: str,
    etag: str,
    body: bytes,
    metadata: Mapping[str, str] | None,
) -> LostCommit:
    """A :class:`LostCommit` from the bytes (and user metadata) of one object version."""
    parsed = parse_json_actions(body)
    adds = tuple(a for a in parsed.actions if isinstance(a, AddFile))
    info = next((a.raw for a in parsed.actions if isinstance(a, CommitInfo)), None)
    others = sorted({kind for a in parsed.actions if (kind := _KIND.get(type(a)))})
    if parsed.errors:
        others.append("unparsable")
    engine = info.get("engineInfo") if info else None
    op = info.get("operation") if info else None
    ts = CommitInfo(info).timestamp if info else None
    return LostCommit(
        version=version,
        version_id=version_id,
        etag=etag,
        size=len(body),
        provenance=classify(engine if isinstance(engine, str) else None, metadata),
        operation=op if isinstance(op, str) else None,
        timestamp_ms=ts,
        adds=adds,
        rows=_rows(adds, info),
        others=tuple(others),
        commit_info=info,
        body=body,
    )


def restored_mark(commit_info: Mapping[str, Any] | None) -> tuple[int, str] | None:
    """``(version, etag)`` of the lost commit a commit restores (its ``commitInfo`` carries
    :data:`RESTORED_KEY`), else None."""
    mark = (commit_info or {}).get(RESTORED_KEY)
    if not isinstance(mark, dict):
        return None
    version, etag = mark.get("version"), mark.get("etag")
    if isinstance(version, int) and isinstance(etag, str):
        return version, etag
    return None


def restored_marks(bodies: Iterable[bytes]) -> set[tuple[int, str]]:
    """The lost commits the commits with these bodies restore (:func:`restored_mark`)."""
    out = set()
    key = RESTORED_KEY.encode()
    for body in bodies:
        if key not in body:
            continue
        for action in parse_json_actions(body).actions:
            if isinstance(action, CommitInfo) and (mark := restored_mark(action.raw)):
                out.add(mark)
    return out


def _versioning(client: Any, bucket: str) -> tuple[str | None, str | None]:
    """(status, note): the bucket's versioning status, or why it is unknown."""
    try:
        status = client.get_bucket_versioning(Bucket=bucket).get("Status")
    except (ClientError, BotoCoreError) as exc:
        if error_code(exc) in ("AccessDenied", "403"):
            return None, (
                f"bucket versioning of {bucket} could not be read (access denied): "
                "lost commits cannot be found"
            )
        return None, f"bucket versioning of {bucket} could not be read ({describe(exc)}): " + (
            "lost commits cannot be found"
        )
    if status not in ("Enabled", "Suspended"):
        return None, VERSIONING_OFF
    return str(status), None


def scan_lost_commits(store: TableStore) -> LostScan:
    """The lost commits of the table in ``store`` (see the module docstring). Never raises
    for storage errors: a request that fails becomes :attr:`LostScan.note`."""
    if not isinstance(store, S3TableStore):
        return LostScan()  # local disk keeps no overwritten versions: nothing to look for
    client, bucket = store.client, store.root.bucket
    status, note = _versioning(client, bucket)
    if note is not None:
        return LostScan(note=note)
    prefix = store.key(f"{LOG_DIR}/")
    versions: dict[int, list[dict[str, Any]]] = {}
    try:
        paginator = client.get_paginator("list_object_versions")
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            for obj in page.get("Versions", ()):
                name = obj["Key"][len(prefix) :]
                version = commit_version(name) if "/" not in name else None
                if version is not None and name.endswith(".json"):
                    versions.setdefault(version, []).append(obj)
    except (ClientError, BotoCoreError) as exc:
        return LostScan(
            note=f"object versions of s3://{bucket}/{prefix} could not be listed "
            f"({describe(exc)}): lost commits cannot be found",
            versioning=status,
        )
    scan = LostScan(versioning=status)
    for version in sorted(versions):
        objs = versions[version]
        current = next((o for o in objs if o.get("IsLatest")), None)
        if current is None:
            continue  # N.json deleted (a delete marker is current): the gap findings say so
        seen = {(current["ETag"], int(current["Size"]))}
        for obj in sorted(objs, key=lambda o: o["LastModified"]):
            ident = (obj["ETag"], int(obj["Size"]))
            if obj.get("IsLatest") or ident in seen:
                continue
            seen.add(ident)
            try:
                got = client.get_object(Bucket=bucket, Key=obj["Key"], VersionId=obj["VersionId"])
                body = got["Body"].read()
            except (ClientError, BotoCoreError) as exc:
                scan.note = (
                    f"noncurrent version {obj['VersionId']} of {obj['Key']} could not be read "
                    f"({describe(exc)}): the lost commits listed may be incomplete"
                )
                continue
            scan.lost.append(
                describe_commit(
                    version, obj["VersionId"], obj["ETag"], body, got.get("Metadata") or {}
                )
            )
    return scan
