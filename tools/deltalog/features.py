"""Which protocol versions and table features this reader understands: the one feature table.

:data:`FEATURES` names every table feature of the Delta protocol as of Delta 4.4 and
delta-kernel 4.4. Sources: delta-io/delta ``PROTOCOL.md`` ("Valid Feature Names in Table
Features") and ``protocol_rfcs/``; Delta 4.4.0's ``TableFeature.scala``
(``org.apache.spark.sql.delta.*Feature``); delta-kernel 4.4.0's ``TableFeatures.java``
(``io.delta.kernel.internal.tablefeatures``). Test-only features (``testWriter`` and the like)
are left out. ``tests/test_protocol_coverage.py`` checks both directions: every name here is a
feature name in those Delta 4.4.0 jars, and every feature the jars list at run time (the Spark
connector's ``TableFeature.allSupportedFeaturesMap``, kernel's ``TableFeatures.TABLE_FEATURES``)
is here, with the same kind.

Each feature is a reader-writer feature (readers must understand it) or a writer feature
(readers may ignore it), and this reader either *reads* tables that use it (the feature's log
semantics are implemented, e.g. deletion vectors and V2 checkpoints, or it only concerns data
files, types or writers, never the file list) or *refuses* them: the files under the table root
alone do not say which commits are ratified or where the table is (``catalogManaged``, commit
coordinators, redirects), or the feature's semantics are not published. A refused table raises
:class:`UnsupportedTableError`, never a misread; a feature missing from the table is refused if
it is a reader feature and worth a warning (``unknown-writer-feature``) if it is a writer one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from deltaguard.tools.deltalog.actions import Protocol
from deltaguard.tools.deltalog.errors import UnsupportedTableError

MAX_READER_VERSION = 3
#: The highest writer version deltaguard's own writers (``repair``, ``checkpoint``) know.
MAX_WRITER_VERSION = 7


class FeatureKind(StrEnum):
    READER_WRITER = "reader-writer"
    WRITER = "writer"


class Support(StrEnum):
    READ = "read"
    REFUSED = "refused"


@dataclass(frozen=True)
class Feature:
    """One table feature: its protocol name, kind, and whether this reader reads tables using
    it (``why`` says why not, for refused ones)."""

    name: str
    kind: FeatureKind
    support: Support = Support.READ
    why: str = ""


_RW, _W = FeatureKind.READER_WRITER, FeatureKind.WRITER
_CATALOG = (
    "it is a catalog-managed table: its catalog decides which commits are ratified, so the "
    "files alone cannot be replayed. Read it through its catalog"
)
_COORDINATOR = (
    "a commit coordinator ratifies its commits, and commits not yet backfilled into "
    "_delta_log are invisible to a file listing"
)
_REDIRECT = "the table is redirected to another location; read it there"
_UNPUBLISHED = "its log semantics are not in the published Delta protocol"

#: Every table feature of the protocol, by name. The one place the names live.
FEATURES: dict[str, Feature] = {
    f.name: f
    for f in (
        # reader-writer features whose log semantics are implemented or that concern data only
        Feature("columnMapping", _RW),
        Feature("deletionVectors", _RW),
        Feature("timestampNtz", _RW),
        Feature("v2Checkpoint", _RW),
        Feature("vacuumProtocolCheck", _RW),
        Feature("typeWidening", _RW),
        Feature("typeWidening-preview", _RW),
        Feature("variantType", _RW),
        Feature("variantType-preview", _RW),
        Feature("variantShredding", _RW),
        Feature("variantShredding-preview", _RW),
        Feature("geospatial", _RW),
        Feature("geospatial-dev", _RW),
        # reader-writer features a file listing cannot serve
        Feature("catalogManaged", _RW, Support.REFUSED, _CATALOG),
        Feature("redirectReaderWriter-preview", _RW, Support.REFUSED, _REDIRECT),
        Feature("adaptiveMetadata-preview", _RW, Support.REFUSED, _UNPUBLISHED),
        # writer features whose commits a reader must not replay from files alone
        Feature("coordinatedCommits-preview", _W, Support.REFUSED, _COORDINATOR),
        # writer features: readers may ignore them
        Feature("appendOnly", _W),
        Feature("invariants", _W),
        Feature("checkConstraints", _W),
        Feature("changeDataFeed", _W),
        Feature("generatedColumns", _W),
        Feature("identityColumns", _W),
        Feature("rowTracking", _W),
        Feature("domainMetadata", _W),
        Feature("icebergCompatV1", _W),
        Feature("icebergCompatV2", _W),
        Feature("icebergCompatV3", _W),
        Feature("icebergWriterCompatV1", _W),
        Feature("icebergWriterCompatV3", _W),
        Feature("clustering", _W),
        Feature("inCommitTimestamp", _W),
        Feature("allowColumnDefaults", _W),
        Feature("checkpointProtection", _W),
        Feature("collations", _W),
        Feature("collations-preview", _W),
        Feature("materializePartitionColumns", _W),
        Feature("redirectWriterOnly-preview", _W),
    )
}
#: Names earlier Delta releases wrote for features Delta 4.4 knows under another name
#: (Delta 4.0's ``catalogOwned-preview`` is 4.4's ``catalogManaged``): treated as that feature.
RENAMED_FEATURES = {"catalogOwned-preview": "catalogManaged"}


def feature(name: str) -> Feature | None:
    """The feature of this name (current or former), or None if unknown."""
    return FEATURES.get(RENAMED_FEATURES.get(name, name))


#: Reader features this reader replays correctly.
READER_FEATURES = frozenset(
    n for n, f in FEATURES.items() if f.kind is _RW and f.support is Support.READ
)
#: Features whose tables are refused (whether listed as reader or writer features).
REFUSED_FEATURES = frozenset(
    n for n in [*FEATURES, *RENAMED_FEATURES] if (f := feature(n)) and f.support is Support.REFUSED
)


def check_readable(protocol: Protocol, where: str) -> None:
    """Raises :class:`UnsupportedTableError` unless this reader can replay the table: a refused
    feature (reader or writer list), a reader version above 3, or an unknown reader feature."""
    refused = sorted((protocol.reader_features | protocol.writer_features) & REFUSED_FEATURES)
    if refused:
        found = feature(refused[0])
        assert found is not None
        raise UnsupportedTableError(
            f"{where} uses table feature {refused[0]}: {found.why}. deltaguard does not read "
            "such tables."
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
    """Writer features the protocol lists that are not in :data:`FEATURES`."""
    return sorted(n for n in protocol.writer_features if feature(n) is None)
