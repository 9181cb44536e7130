"""Which protocol versions and table features this reader understands.

Reader features change how the log or data must be read; a table that needs one not listed in
:data:`READER_FEATURES` is refused (:class:`UnsupportedTableError`), never misread.
``catalogManaged`` (and its preview name) is refused on purpose: the catalog, not the file
listing, decides which commits are ratified. Writer features this module does not know are
only worth a warning for an auditor, since reading never depends on them.
"""

from __future__ import annotations

from deltaguard.tools.deltalog.actions import Protocol
from deltaguard.tools.deltalog.errors import UnsupportedTableError

MAX_READER_VERSION = 3
CATALOG_MANAGED = frozenset({"catalogManaged", "catalogOwned-preview"})
#: Reader features whose log semantics this reader implements (deletion vectors and V2
#: checkpoints) or that only concern data files, never the file list.
READER_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "variantShredding",
        "variantShredding-preview",
    }
)
WRITER_FEATURES = READER_FEATURES | frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "identityColumns",
        "rowTracking",
        "domainMetadata",
        "icebergCompatV1",
        "icebergCompatV2",
        "icebergCompatV3",
        "icebergWriterCompatV1",
        "clustering",
        "inCommitTimestamp",
        "allowColumnDefaults",
        "checkpointProtection",
        "collations-preview",
    }
)


def check_readable(protocol: Protocol, where: str) -> None:
    """Raises :class:`UnsupportedTableError` unless this reader can replay the table."""
    features = protocol.reader_features | protocol.writer_features
    if features & CATALOG_MANAGED:
        raise UnsupportedTableError(
            f"{where} is a catalog-managed table (feature {sorted(features & CATALOG_MANAGED)[0]}): "
            "its catalog decides which commits are ratified, so the files alone cannot be "
            "replayed. Read it through its catalog."
        )
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise UnsupportedTableError(
            f"{where} needs reader version {protocol.min_reader_version}; deltaguard reads up "
            f"to {MAX_READER_VERSION}"
        )
    unknown = sorted(protocol.reader_features - READER_FEATURES)
    if unknown:
        raise UnsupportedTableError(
            f"{where} needs reader feature(s) deltaguard does not understand: {', '.join(unknown)}"
        )


def unknown_writer_features(protocol: Protocol) -> list[str]:
    return sorted(protocol.writer_features - WRITER_FEATURES - CATALOG_MANAGED)
