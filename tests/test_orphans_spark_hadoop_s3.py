"""The Spark engine's one I/O stack (tools/spark_engine/hadoop_s3.py): the S3 settings the
executors list and delete with come from the session's Hadoop configuration, per-bucket
overrides included; credentials providers boto3 cannot mirror fall back to its default chain
with a note; command options that disagree with the session are refused. No JVM: the Hadoop
configuration is a dict here (tests/test_orphans_spark_engine.py runs it against LocalStack)."""

from __future__ import annotations

import pytest

from deltaguard.tools.spark_engine.hadoop_s3 import (
    Credentials,
    SessionSettingsConflict,
    check_agrees,
    s3a_settings,
)
from deltaguard.tools.storage import S3Options


def test_per_bucket_settings_override_the_global_ones() -> None:
    conf = {
        "fs.s3a.endpoint": "https://s3.eu-west-1.amazonaws.com",
        "fs.s3a.endpoint.region": "eu-west-1",
        "fs.s3a.access.key": "GLOBAL",
        "fs.s3a.secret.key": "global-secret",
        "fs.s3a.bucket.lake.endpoint": "127.0.0.1:4566",
        "fs.s3a.bucket.lake.connection.ssl.enabled": "false",
        "fs.s3a.bucket.lake.endpoint.region": "us-east-1",
        "fs.s3a.bucket.lake.path.style.access": "true",
        "fs.s3a.bucket.lake.access.key": "LAKE",
        "fs.s3a.bucket.lake.secret.key": "lake-secret",
        "fs.s3a.bucket.lake.session.token": "token",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
    }
    lake = s3a_settings(conf.get, "lake")
    assert lake.s3 == S3Options("http://127.0.0.1:4566", "us-east-1", path_style=True)
    assert lake.credentials == Credentials("LAKE", "lake-secret", "token")
    assert lake.note is None and lake.sources["endpoint"] == "fs.s3a.bucket.lake.endpoint"
    other = s3a_settings(conf.get, "other")
    assert other.s3 == S3Options("https://s3.eu-west-1.amazonaws.com", "eu-west-1", False)
    assert other.credentials == Credentials("GLOBAL", "global-secret")
    assert "global-secret" not in repr(other) and "GLOBAL" not in repr(other)


def test_credentials_providers_map_to_boto3_or_say_why_not() -> None:
    chain = {
        "fs.s3a.aws.credentials.provider": (
            "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider, "
            "org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider"
        )
    }
    settings = s3a_settings(chain.get, "b")
    assert settings.credentials is None and settings.note is None
    assert settings.s3 == S3Options(None, None, False)
    role = {
        "fs.s3a.access.key": "K",
        "fs.s3a.secret.key": "S",
        "fs.s3a.bucket.b.aws.credentials.provider": (
            "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider"
        ),
    }
    settings = s3a_settings(role.get, "b")
    assert settings.credentials is None
    assert settings.note is not None
    assert "fs.s3a.bucket.b.aws.credentials.provider" in settings.note
    assert "AssumedRoleCredentialProvider" in settings.note


def test_command_options_that_disagree_with_the_session_are_refused() -> None:
    conf = {
        "fs.s3a.bucket.b.endpoint": "http://127.0.0.1:4566/",
        "fs.s3a.endpoint.region": "us-east-1",
    }
    settings = s3a_settings(conf.get, "b")
    check_agrees(S3Options(), settings)
    check_agrees(S3Options("http://127.0.0.1:4566", "us-east-1"), settings)
    with pytest.raises(SessionSettingsConflict, match=r"--endpoint .*fs\.s3a\.bucket\.b\.endpoint"):
        check_agrees(S3Options("http://127.0.0.1:9000"), settings)
    with pytest.raises(
        SessionSettingsConflict, match=r"--region eu-west-1 .*fs\.s3a\.endpoint\.region"
    ):
        check_agrees(S3Options(region="eu-west-1"), settings)
    with pytest.raises(SessionSettingsConflict, match=r"--path-style .*path\.style\.access"):
        check_agrees(S3Options(path_style=True), settings)
