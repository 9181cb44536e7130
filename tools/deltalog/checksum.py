"""Delta's version checksum file ``N.crc`` (PROTOCOL.md, "Version Checksum File"): one JSON object
with the table state at version N. The one model of it: the audit checks a ``.crc`` against the
replayed state with it (:func:`parse_checksum`), and deltaguard's Python committer writes the
next one with it (:func:`checksum_after_append`).

Why a writer should leave one: a Spark driver that loads version N without ``N.crc`` rebuilds
the table state with Spark jobs before its next commit (``docs/design/logstore.md``, "The checksum
path"); with it, a blind append costs one job.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import orjson

#: The fields a blind append can carry forward exactly: the counts it changes (numFiles,
#: tableSizeBytes, the histograms) and the ones it leaves as they are. Any other field of the
#: previous checksum (``allFiles``, ``inCommitTimestampOpt``, fields of newer Delta versions) is
#: left out, never guessed: every field of a checksum but the six required ones is optional, and
#: a reader validates only those present.
_CARRIED = (
    "tableSizeBytes",
    "numFiles",
    "numMetadata",
    "numProtocol",
    "setTransactions",
    "domainMetadata",
    "metadata",
    "protocol",
    "fileSizeHistogram",
    "histogramOpt",
    "deletedRecordCountsHistogramOpt",
    "numDeletedRecordsOpt",
    "numDeletionVectorsOpt",
)
#: The file-size histogram under Delta 4.4's name (the protocol's) and the legacy Delta-Spark one.
_HISTOGRAMS = ("fileSizeHistogram", "histogramOpt")
REQUIRED = ("tableSizeBytes", "numFiles", "numMetadata", "numProtocol", "metadata", "protocol")


class ChecksumError(ValueError):
    """A ``.crc`` that is not a JSON object with the required fields; the message says why."""


@dataclass(frozen=True)
class VersionChecksum:
    """A parsed ``N.crc``: the fields deltaguard reads by name, and the whole object as
    written (:attr:`fields`), so nothing it does not model is lost or changed."""

    fields: dict[str, Any]

    @property
    def num_files(self) -> int:
        return int(self.fields["numFiles"])

    @property
    def table_size_bytes(self) -> int:
        return int(self.fields["tableSizeBytes"])

    @property
    def metadata_id(self) -> str | None:
        meta = self.fields.get("metadata")
        return meta.get("id") if isinstance(meta, dict) else None

    @property
    def min_reader_version(self) -> int | None:
        proto = self.fields.get("protocol")
        return proto.get("minReaderVersion") if isinstance(proto, dict) else None

    def to_json(self) -> bytes:
        """One line of JSON, as Delta writes it."""
        return orjson.dumps(self.fields)


def parse_checksum(data: bytes) -> VersionChecksum:
    """Parses a ``.crc``; raises :class:`ChecksumError` if it is not a JSON object or lacks a
    required field."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ChecksumError(f"not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ChecksumError("not a JSON object")
    missing = [k for k in REQUIRED if k not in obj]
    if missing:
        raise ChecksumError(f"missing required fields {missing}")
    return VersionChecksum(obj)


#: With this table property Delta drops expired ``setTransactions`` from the state, so a
#: checksum cannot carry them forward (``BlindAppendChecksum.TXN_RETENTION``, the same rule).
TXN_RETENTION = "delta.setTransactionRetentionDuration"


def checksum_after_append(
    previous: VersionChecksum, sizes: list[int], txn_id: str
) -> VersionChecksum | None:
    """The checksum of the version a blind append commits right after ``previous``'s version
    (the same rule as the conditional store's JVM twin, ``BlindAppendChecksum.java``; both are
    pinned to ``logstore/src/test/resources/blind-append-checksums.json``):
    ``sizes`` are the byte sizes of the files it adds (no removes, no deletion vectors, no
    protocol, metadata, transaction or domain changes). Counts, table size and each histogram
    present in ``previous`` grow by the added files; the rest is carried as it was. None when
    ``previous`` cannot be carried exactly: not one metadata and one protocol, or a table with
    ``delta.setTransactionRetentionDuration``."""
    meta = previous.fields.get("metadata")
    config = meta.get("configuration") if isinstance(meta, dict) else None
    if (
        previous.fields.get("numMetadata") != 1
        or previous.fields.get("numProtocol") != 1
        or (isinstance(config, dict) and TXN_RETENTION in config)
    ):
        return None
    fields = {k: previous.fields[k] for k in _CARRIED if k in previous.fields}
    fields["txnId"] = txn_id
    fields["numFiles"] = previous.num_files + len(sizes)
    fields["tableSizeBytes"] = previous.table_size_bytes + sum(sizes)
    for name in _HISTOGRAMS:
        histogram = fields.get(name)
        if isinstance(histogram, dict):
            fields[name] = _with_files(histogram, sizes)
    deleted = fields.get("deletedRecordCountsHistogramOpt")
    if isinstance(deleted, dict):
        counts = list(deleted["deletedRecordCounts"])
        counts[0] += len(sizes)  # bin 0: files without deleted records
        fields["deletedRecordCountsHistogramOpt"] = {**deleted, "deletedRecordCounts": counts}
    return VersionChecksum(fields)


def _with_files(histogram: dict[str, Any], sizes: list[int]) -> dict[str, Any]:
    """Delta's FileSizeHistogram plus files of ``sizes``: bin i holds the sizes from
    ``sortedBinBoundaries[i]`` (inclusive) up to the next boundary."""
    bounds = histogram["sortedBinBoundaries"]
    counts = list(histogram["fileCounts"])
    total = list(histogram["totalBytes"])
    for size in sizes:
        i = bisect.bisect_right(bounds, size) - 1
        counts[i] += 1
        total[i] += size
    return {**histogram, "fileCounts": counts, "totalBytes": total}
