"""Parsing s3:// and s3a:// URIs into (bucket, key)."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

S3_SCHEMES = ("s3", "s3a", "s3n")


class InvalidS3URIError(ValueError):
    """A location with an S3 scheme that names no bucket (``s3:/x/t``, ``s3://``)."""


@dataclass(frozen=True)
class S3Location:
    """An object or prefix in S3. ``s3``, ``s3a`` and ``s3n`` name the same objects."""

    bucket: str
    key: str

    @classmethod
    def parse(cls, uri: str) -> S3Location:
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme not in S3_SCHEMES or not parts.netloc:
            raise InvalidS3URIError(f"not an S3 URI (s3://bucket/key or s3a://bucket/key): {uri!r}")
        return cls(parts.netloc.rsplit("@", 1)[-1], parts.path.lstrip("/"))

    @property
    def parent_key(self) -> str:
        """The key of the parent "directory", without a trailing slash."""
        return self.key.rsplit("/", 1)[0] if "/" in self.key else ""

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    def uri(self, scheme: str = "s3") -> str:
        return f"{scheme}://{self.bucket}/{self.key}"
