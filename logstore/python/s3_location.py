"""The one rule for a table location: its scheme (:func:`scheme_of`), an S3 URI as (bucket,
key) (:meth:`S3Location.parse`), a ``file:`` URI as a local path (:func:`file_uri_path`).

**An S3 location is a bucket and a key prefix taken literally**, as the AWS CLI and Hadoop's
``Path(String)`` take them: after ``s3://`` (``s3a://``, ``s3n://``) comes the bucket, up to
the first ``/``, and everything after that ``/`` is the key, character for character. ``#``,
``?``, spaces, ``%``, ``+`` and non-ASCII letters are part of the key, never a fragment, a
query or an escape: ``s3://lake/hash#1`` is the key ``hash#1``, ``s3://lake/a%41`` the key
``a%41``. Never ``urllib.parse`` (which would cut ``s3://lake/hash#1`` at the ``#``).

A ``file:`` URI keeps RFC 8089's meaning (``%XX`` escapes are decoded; ``?`` and ``#`` would
start a query or a fragment, so a ``file:`` URI holding one is refused rather than cut); a
plain local path is taken literally.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

S3_SCHEMES = ("s3", "s3a", "s3n")

#: A URI scheme (RFC 3986) of two characters or more: ``C:`` is a drive, not a scheme.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")


class InvalidS3URIError(ValueError):
    """A location with an S3 scheme that names no bucket (``s3:/x/t``, ``s3://``)."""


class InvalidFileURIError(ValueError):
    """A ``file:`` URI with a query or a fragment (a ``?`` or ``#``)."""


def scheme_of(location: str) -> str:
    """The URI scheme of ``location``, lower case, or ``""`` for a plain path (a one-letter
    "scheme" is a Windows drive). Nothing else of the location is interpreted."""
    match = _SCHEME.match(location)
    return match.group(1).lower() if match else ""


def file_uri_path(uri: str) -> str:
    """The local path of a ``file:`` URI (``file:/p``, ``file:///p``, ``file://localhost/p``),
    ``%XX`` escapes decoded (RFC 8089; the authority is ignored, as before). Raises
    :class:`InvalidFileURIError` for a URI with a ``?`` or ``#``: RFC 3986 would cut the path
    there, and a table location never has a query or fragment (write them ``%3F``/``%23``, or
    give the plain path)."""
    for char, escape in (("?", "%3F"), ("#", "%23")):
        if char in uri:
            raise InvalidFileURIError(
                f"{uri!r}: a {char!r} in a file: URI starts a "
                f"{'query' if char == '?' else 'fragment'}; write it {escape} or give the plain "
                "path"
            )
    return urllib.parse.unquote(urllib.parse.urlsplit(uri).path)


@dataclass(frozen=True)
class S3Location:
    """An object or prefix in S3. ``s3``, ``s3a`` and ``s3n`` name the same objects."""

    bucket: str
    key: str

    @classmethod
    def parse(cls, uri: str) -> S3Location:
        """``scheme://bucket/key`` split by hand (see the module docstring): the key is the
        text after the bucket's ``/``, literally (leading ``/`` dropped); user info before an
        ``@`` is no part of the bucket. Raises :class:`InvalidS3URIError` for another scheme
        or a location without ``//`` and a bucket (``s3:/x/t``, ``s3://``, ``s3:///t``)."""
        scheme = scheme_of(uri)
        rest = uri[len(scheme) + 1 :] if scheme else ""
        authority, _, key = rest[2:].partition("/") if rest.startswith("//") else ("", "", "")
        bucket = authority.rsplit("@", 1)[-1]
        if scheme not in S3_SCHEMES or not bucket:
            raise InvalidS3URIError(f"not an S3 URI (s3://bucket/key or s3a://bucket/key): {uri!r}")
        return cls(bucket, key.lstrip("/"))

    @property
    def parent_key(self) -> str:
        """The key of the parent "directory", without a trailing slash."""
        return self.key.rsplit("/", 1)[0] if "/" in self.key else ""

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    def uri(self, scheme: str = "s3") -> str:
        return f"{scheme}://{self.bucket}/{self.key}"
