"""The names of deltaguard's presets: one named choice of commit path per bucket.

The one definition of these names: presets render them (:mod:`deltaguard.spark_conf.presets`),
the probe recommends one (:mod:`deltaguard.logstore.probe`), the test bed and the CLI choose by
them. A leaf module (no deltaguard imports), so anything may name a preset without pulling in
Spark settings.

Why here, in the lowest layer: each name is a commit path, i.e. a choice of LogStore, and the
probe (this layer) recommends one. It is a pure name table, so it moved down from
``spark_conf`` (which depends on logstore) rather than being mirrored by a second enum that
``spark_conf`` would map: one definition, and logstore never imports ``spark_conf``.
"""

from __future__ import annotations

from enum import StrEnum


class PresetName(StrEnum):
    """A commit path. See :mod:`deltaguard.spark_conf.presets` for what each one sets."""

    #: deltaguard's conditional-write LogStore: safe for many drivers on a store that honours
    #: ``If-None-Match`` (``deltaguard probe`` says whether it does).
    S3_CONDITIONAL = "s3-conditional"
    #: deltaguard's DynamoDB LogStore (Delta's S3DynamoDBLogStore protocol): safe for many
    #: drivers on stores without working conditional writes.
    S3_DYNAMODB = "s3-dynamodb"
    #: deltaguard's transition LogStore: the DynamoDB protocol whose commit files are created
    #: with ``If-None-Match``; moves a live table from ``s3-dynamodb`` to ``s3-conditional``
    #: (docs/guides/migration.md).
    S3_DYNAMODB_TRANSITION = "s3-dynamodb-transition"
    #: Delta's ``S3SingleDriverLogStore`` (its default for S3): safe for ONE driver only.
    S3_SINGLE_DRIVER = "s3-single-driver"
    #: Delta on the local filesystem.
    LOCAL = "local"

    @property
    def uses_dynamodb(self) -> bool:
        """Whether the commit path needs a DynamoDB commit table."""
        return self in (PresetName.S3_DYNAMODB, PresetName.S3_DYNAMODB_TRANSITION)
