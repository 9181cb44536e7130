"""One I/O stack for the Spark engine: the S3 settings of the session's Hadoop configuration.

The Spark engine reads the log with ``spark.read`` (S3A, the session's Hadoop settings) and
lists and deletes with deltaguard's boto3 client in the executors (batched ``DeleteObjects``:
S3A deletes one object a request, and its bulk delete API needs Hadoop >= 3.4.1). Both must
reach the same objects with the same identity, so the boto3 client is configured from the
Hadoop configuration the log is read with, under ``spark-submit`` as in a session the command
builds itself:

* of S3A's settings (the ``fs.s3a.`` keys, named here without that prefix; the key names and
  S3A's per-bucket override rule are :func:`deltaguard.spark_conf.storage.s3a_keys`): the
  endpoint ``endpoint`` (without a scheme: ``https://`` unless ``connection.ssl.enabled`` is
  ``false``), region ``endpoint.region``, path-style ``path.style.access``, keys
  ``access.key``/``secret.key``/``session.token``;
* credentials providers (``aws.credentials.provider``): the key providers (Simple,
  Temporary) use the keys above; providers of the SDK's default chain (environment, profile,
  container, instance role) are boto3's default chain, which reads the same sources; any other
  provider (assumed roles, custom classes) cannot be mapped: boto3's default chain is used
  and the report's notes say so;
* the command's ``--endpoint``/``--region``/``--path-style``, when given, must agree with the
  session: a different endpoint, region or path style is refused
  (:class:`SessionSettingsConflict`, exit code 2) naming both settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from deltaguard.logstore.s3_location import S3_SCHEMES, S3Location
from deltaguard.spark_conf.storage import s3a_keys
from deltaguard.tools.storage import S3Options

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Credentials providers whose sources boto3's default chain reads too (simple class names).
_CHAIN_PROVIDERS = frozenset(
    {
        "EnvironmentVariableCredentialsProvider",
        "IAMInstanceCredentialsProvider",
        "DefaultCredentialsProvider",
        "DefaultAWSCredentialsProviderChain",
        "InstanceProfileCredentialsProvider",
        "ContainerCredentialsProvider",
        "EC2ContainerCredentialsProviderWrapper",
        "ProfileCredentialsProvider",
        "SystemPropertyCredentialsProvider",
    }
)
#: Providers that hand out the ``access.key``/``secret.key``(/``session.token``) settings.
_KEY_PROVIDERS = frozenset({"SimpleAWSCredentialsProvider", "TemporaryAWSCredentialsProvider"})


class SessionSettingsConflict(ValueError):
    """The command's S3 options disagree with the session's Hadoop configuration."""


@dataclass(frozen=True)
class Credentials:
    """Static keys from the Hadoop configuration (never printed)."""

    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class HadoopS3:
    """The S3 settings for one bucket: ``s3`` for the client, ``credentials`` (None: boto3's
    default chain), ``note`` (why the credentials could not be mapped, or None), and
    ``sources``: the Hadoop key each setting came from (for messages)."""

    s3: S3Options
    credentials: Credentials | None
    note: str | None
    sources: dict[str, str]


def s3a_settings(get: Callable[[str], str | None], bucket: str) -> HadoopS3:
    """The S3 settings a Hadoop configuration (``get``: its value of a key, None if unset)
    gives ``bucket``; see the module docstring."""
    sources: dict[str, str] = {}

    def value(name: str) -> str | None:
        keys = s3a_keys(name, bucket)
        for key in keys:
            found = get(key)
            if found is not None and found.strip():
                sources[name] = key
                return found.strip()
        sources[name] = keys[-1]
        return None

    endpoint = value("endpoint")
    if endpoint and "://" not in endpoint:
        secure = (value("connection.ssl.enabled") or "true").lower() != "false"
        endpoint = f"{'https' if secure else 'http'}://{endpoint}"
    region = value("endpoint.region")
    path_style = (value("path.style.access") or "false").lower() == "true"
    listed = (value("aws.credentials.provider") or "").split(",")
    providers = [p.strip() for p in listed if p.strip()]
    names = [p.rsplit(".", 1)[-1] for p in providers]
    access, secret, token = value("access.key"), value("secret.key"), value("session.token")
    credentials = None
    note = None
    keys_allowed = not names or any(n in _KEY_PROVIDERS for n in names)
    if access and secret and keys_allowed:
        credentials = Credentials(access, secret, token)
    else:
        known = _CHAIN_PROVIDERS | _KEY_PROVIDERS
        unmapped = [p for p, n in zip(providers, names, strict=True) if n not in known]
        if unmapped:
            note = (
                f"listing and deleting use boto3's default credential chain: the session's "
                f"{sources['aws.credentials.provider']} ({', '.join(unmapped)}) has no boto3 "
                "equivalent"
            )
    return HadoopS3(S3Options(endpoint, region, path_style), credentials, note, sources)


def check_agrees(cli: S3Options, hadoop: HadoopS3) -> None:
    """Raises :class:`SessionSettingsConflict` if an S3 option given on the command line
    differs from the session's setting (an option not given agrees with anything)."""
    given = [
        ("--endpoint", "endpoint", _url(cli.endpoint), _url(hadoop.s3.endpoint)),
        ("--region", "endpoint.region", cli.region, hadoop.s3.region),
    ]
    for option, name, ours, theirs in given:
        if ours is not None and ours != theirs:
            raise SessionSettingsConflict(
                f"{option} {ours} differs from the Spark session's {hadoop.sources[name]} "
                f"({theirs or 'unset'}): the Spark engine reads the log and lists and deletes "
                "with the session's S3 settings; drop the option or make them agree"
            )
    if cli.path_style and not hadoop.s3.path_style:
        raise SessionSettingsConflict(
            f"--path-style differs from the Spark session's {hadoop.sources['path.style.access']} "
            "(false): drop the option or make them agree"
        )


def _url(endpoint: str | None) -> str | None:
    return endpoint.rstrip("/") if endpoint else None


def session_s3(spark: SparkSession, table: str, cli: S3Options) -> HadoopS3 | None:
    """The S3 settings of ``spark``'s Hadoop configuration for ``table``'s bucket, checked
    against the command's options (:func:`check_agrees`); None for a table not on S3."""
    scheme = table.partition("://")[0] if "://" in table else ""
    if scheme not in S3_SCHEMES:
        return None
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    settings = s3a_settings(conf.get, S3Location.parse(table).bucket)
    check_agrees(cli, settings)
    return settings
