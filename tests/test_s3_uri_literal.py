"""Issue 49 goal 3: a table URI means exactly its key. ``s3://``/``s3a://`` locations are a
bucket and a key prefix taken literally (``logstore/python/s3_location.py``): ``#``, ``?``,
spaces, ``%``, ``+`` and non-ASCII letters are part of the key, never a fragment, query or
escape; ``file:`` URIs keep RFC 8089's decoding.

On LocalStack and MinIO, tables written by delta-rs at keys that a URL parser would cut,
decode or glob into a neighbour's key (``hash#1`` next to ``hash``, ``p%41`` next to ``pA``,
``q?x=1`` next to ``qAx=1``): ``audit``, ``history`` and ``repair`` of each name see exactly
that table, ``orphans --delete --yes`` deletes only the named table's strays (the local engine
here, the Spark engine in the ``spark`` tests, one session for the module), and a name with no
``_delta_log`` is "does not exist"/"not a Delta table", exit 2. The commands run in this
process (``CliRunner``): one CLI start per case would cost more than the cases.
"""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from click.testing import CliRunner, Result
from local_spark import local_spark_session

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.logstore.s3_listing import _decoded, list_unencoded
from deltaguard.logstore.s3_location import (
    InvalidFileURIError,
    InvalidS3URIError,
    S3Location,
    file_uri_path,
    scheme_of,
)
from deltaguard.tools.cli import main

# ---------------------------------------------------------------------------------------------
# The parser


@pytest.mark.parametrize(
    ("uri", "bucket", "key"),
    [
        ("s3://lake/hash#1", "lake", "hash#1"),
        ("s3a://lake/events?x=1", "lake", "events?x=1"),
        ("s3n://lake/a%41/b", "lake", "a%41/b"),
        ("s3://lake/a%2", "lake", "a%2"),
        ("s3://lake/sp ace+plus/caf\u00e9", "lake", "sp ace+plus/caf\u00e9"),
        ("s3://lake/t/#/?/%/", "lake", "t/#/?/%/"),
        ("S3A://lake/t", "lake", "t"),
        ("s3://user@lake/t", "lake", "t"),
        ("s3://lake", "lake", ""),
        ("s3://lake/", "lake", ""),
        ("s3://lake//t", "lake", "t"),
    ],
)
def test_an_s3_uri_is_a_bucket_and_a_literal_key(uri: str, bucket: str, key: str) -> None:
    assert S3Location.parse(uri) == S3Location(bucket, key)


@pytest.mark.parametrize(
    "uri", ["s3:/lake/t", "s3://", "s3:///t", "s3:lake/t", "http://lake/t", "lake/t", "/lake/t"]
)
def test_a_location_without_scheme_slashes_and_bucket_is_no_s3_uri(uri: str) -> None:
    with pytest.raises(InvalidS3URIError):
        S3Location.parse(uri)


def test_schemes_and_file_uris() -> None:
    assert [scheme_of(x) for x in ("S3://b/k", "file:/t", "C:\\t", "/a:b", "hash#1")] == [
        "s3",
        "file",
        "",
        "",
        "",
    ]
    assert file_uri_path("file:///tmp/a%20b/p%25c") == "/tmp/a b/p%c"
    assert file_uri_path("file:/tmp/caf%C3%A9") == "/tmp/caf\u00e9"
    for bad in ("file:/tmp/hash#1", "file:/tmp/events?x=1"):
        with pytest.raises(InvalidFileURIError, match="%23" if "#" in bad else "%3F"):
            file_uri_path(bad)


def test_a_file_uri_with_a_fragment_is_refused_and_a_plain_path_is_literal(
    tmp_path: Path,
) -> None:
    table = tmp_path / "hash#1 %41"
    _write(str(tmp_path / "plain"), 2)  # delta-rs 1.6 decodes a local %41 twice
    (tmp_path / "plain").rename(table)
    plain = _cli("audit", str(table), "--json")
    assert plain.exit_code == 0, plain.output
    assert orjson.loads(plain.stdout)["summary"]["live_files"] == 2
    encoded = _cli("audit", Path(table).as_uri(), "--json")  # ...%231%20%2541: decoded
    assert encoded.exit_code == 0, encoded.output
    refused = _cli("audit", f"file:{tmp_path}/hash#1")
    assert refused.exit_code == 2
    assert "'#' in a file: URI starts a fragment; write it %23" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------------
# Tables on LocalStack and MinIO

#: Table name -> its number of rows (one file each, so also its live files): each name next to
#: the key a URL parser would make of it (``hash#1`` cut at ``#``, ``p%41`` decoded), or with
#: every other character a parser could take for something else.
TABLES = {"hash": 1, "hash#1": 2, "p%41": 3, "pA": 4, "q?x=1 +\u00e9": 5}
#: Tables with a data file deleted (``repair`` and ``audit`` name it).
DAMAGED = ("hash#1", "pA")


def _cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def _write(uri: str, rows: int, storage_options: dict[str, str] | None = None) -> None:
    """A delta-rs table of ``rows`` rows, one file each. delta-rs parses the location as a URL:
    its name is the key percent-encoded (docs/reference/options.md)."""
    from deltalake import write_deltalake

    data = pa.table({"x": list(range(rows)), "p": [str(i) for i in range(rows)]})
    write_deltalake(uri, data, partition_by=["p"], storage_options=storage_options)


@dataclass
class Lake:
    """A bucket of tables on one server, each with a stray file ``stray-<rows>.parquet``."""

    endpoint: Endpoint
    bucket: str
    victims: dict[str, str]  # damaged table -> its deleted data file (relative)

    def uri(self, name: str, scheme: str = "s3") -> str:
        return f"{scheme}://{self.bucket}/{name}"

    def s3_args(self) -> list[str]:
        return ["--endpoint-url", self.endpoint.url, "--path-style"]

    def env(self) -> dict[str, str]:
        return {**self.endpoint.credentials_env(), "AWS_REGION": self.endpoint.region}

    def keys(self, name: str) -> set[str]:
        """The keys under ``name/``, relative to it."""
        client = self.endpoint.s3_client()
        pages = client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=f"{name}/"
        )
        return {o["Key"][len(name) + 1 :] for page in pages for o in page.get("Contents", ())}


def _build_lake(endpoint: Endpoint, tables: dict[str, int], damaged: tuple[str, ...] = ()) -> Lake:
    client = endpoint.s3_client()
    bucket = f"dg-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    options = {**endpoint.delta_rs_options(), "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    lake = Lake(endpoint, bucket, {})
    for name, rows in tables.items():
        if urllib.parse.unquote(name) == name:
            _write(f"s3://{bucket}/{urllib.parse.quote(name)}", rows, options)
        else:  # delta-rs 1.6 cannot open a key with %XX (it decodes it twice): moved there
            _write(f"s3://{bucket}/staging", rows, options)
            for key in lake.keys("staging"):
                source = {"Bucket": bucket, "Key": f"staging/{key}"}
                client.copy_object(Bucket=bucket, Key=f"{name}/{key}", CopySource=source)
                client.delete_object(Bucket=bucket, Key=f"staging/{key}")
        client.put_object(Bucket=bucket, Key=f"{name}/stray-{rows}.parquet", Body=b"stray")
    for name in damaged:
        victim = min(k for k in lake.keys(name) if k.startswith("p="))
        client.delete_object(Bucket=bucket, Key=f"{name}/{victim}")
        lake.victims[name] = victim
    return lake


@pytest.fixture(scope="module", params=["localstack", "minio"])
def lake(request: pytest.FixtureRequest) -> Lake:
    server = request.getfixturevalue(request.param)
    return _build_lake(server.endpoint, TABLES, DAMAGED)


def _json(result: Result) -> Any:
    assert result.exit_code in (0, 1), result.output
    return orjson.loads(result.stdout)


@pytest.mark.servers
def test_audit_history_and_repair_read_exactly_the_named_table(lake: Lake) -> None:
    """Every name: its own live files (a cut ``hash#1`` would be ``hash``'s one file, a decoded
    ``p%41`` ``pA``'s four), its own damage, its own history."""
    for name, rows in TABLES.items():
        victim = lake.victims.get(name)
        schemes = ("s3", "s3a") if name == "hash#1" else ("s3",)
        for uri in [lake.uri(name, scheme) for scheme in schemes]:
            audit = _cli("audit", uri, "--json", *lake.s3_args(), env=lake.env())
            doc = _json(audit)
            assert (doc["table"], doc["summary"]["live_files"]) == (uri, rows), audit.output
            assert audit.exit_code == int(victim is not None), audit.output
            named = [f for f in doc["findings"] if victim and victim in orjson.dumps(f).decode()]
            assert bool(named) == (victim is not None), doc["findings"]
        uri = lake.uri(name)
        history = _json(_cli("history", uri, "--json", *lake.s3_args(), env=lake.env()))
        assert [e["metrics"]["num_added_rows"] for e in history["entries"]] == [rows], name
        repair = _cli("repair", uri, "--json", *lake.s3_args(), env=lake.env())
        doc = _json(repair)
        assert doc["dry_run"] is True and repair.exit_code == int(victim is not None), name
        assert [d["path"] for d in doc["dangling"]] == ([victim] if victim else []), name


@pytest.mark.servers
def test_a_name_without_a_delta_log_is_no_other_table(lake: Lake) -> None:
    """Nothing there: "does not exist"; objects but no ``_delta_log``: "not a Delta table";
    never the table a bare prefix (``has``), a cut (``q``) or a decoded name would reach."""
    answers = {
        "has": "does not exist",  # a bare prefix of hash/ and hash#1/
        "hash#": "does not exist",
        "q": "does not exist",  # q?x=1 ... without its "query"
        "p%4": "does not exist",
        "hash#1/p=1": "is not a Delta table",  # objects, no _delta_log
    }
    for name, answer in answers.items():
        commands = ("audit", "history", "repair", "orphans") if name == "has" else ("audit",)
        for command in commands:
            result = _cli(command, lake.uri(name), *lake.s3_args(), env=lake.env())
            assert result.exit_code == 2, (command, result.output)
            assert f"{lake.uri(name)} {answer}" in result.stderr, (command, result.stderr)


@pytest.mark.servers
def test_listing_decodes_url_encoded_keys_exactly(lake: Lake) -> None:
    """The listing's fallback (``EncodingType=url``, keys decoded by deltaguard): MinIO writes a
    space as ``+``, LocalStack as ``%20``; both write ``+`` as ``%2B`` and ``%`` as ``%25``."""
    client = list_unencoded(lake.endpoint.s3_client())
    page = client.list_objects_v2(Bucket=lake.bucket, EncodingType="url", Delimiter="/")
    assert [p["Prefix"] for p in _decoded(page)["CommonPrefixes"]] == sorted(
        f"{name}/" for name in TABLES
    )


def _orphans_delete(lake: Lake, name: str, *extra: str, env: dict[str, str]) -> Result:
    args = ["--delete", "--yes", "--retention", "0", "--unsafe-retention", "--json"]
    return _cli("orphans", lake.uri(name), *args, *extra, env=env)


def _check_cleanup(
    lake: Lake, name: str, before: dict[str, set[str]], tables: dict[str, int]
) -> None:
    for table, keys in before.items():
        stray = f"stray-{tables[table]}.parquet"
        expected = keys - {stray} if table == name else keys
        assert lake.keys(table) == expected, f"{table} after orphans {name}"


@pytest.mark.servers
def test_local_orphans_cleanup_deletes_only_the_named_tables_strays(
    lake: Lake, tmp_path: Path
) -> None:
    """``hash`` next to ``hash#1`` (whose stray a bare-prefix listing of ``hash`` would see; a
    damaged table, as orphans still cleans it),
    ``p%41`` next to ``pA``: each cleanup deletes its own stray and nothing else."""
    env = {**lake.env(), "DELTAGUARD_STATE_DIR": str(tmp_path)}
    for name in ("hash", "hash#1", "p%41"):
        before = {t: lake.keys(t) for t in TABLES}
        result = _orphans_delete(lake, name, *lake.s3_args(), env=env)
        assert result.exit_code == 0, result.output
        _check_cleanup(lake, name, before, TABLES)


# ---------------------------------------------------------------------------------------------
# The Spark engine: Hadoop's Path(String) takes the same string literally


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    creds = Endpoint(url="http://127.0.0.1:1").credentials_env()
    with local_spark_session(tmp_path_factory, "s3-uri-literal", env=creds) as session:
        yield session


def _reach(spark: Any, endpoint: Endpoint, bucket: str) -> None:
    """The session reaches ``bucket`` on ``endpoint`` (per-bucket S3A settings)."""
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in endpoint.s3_storage().hadoop_conf().items():
        if key.startswith("spark.hadoop.fs.s3a."):
            hadoop.set(f"fs.s3a.bucket.{bucket}.{key.removeprefix('spark.hadoop.fs.s3a.')}", value)
        else:
            hadoop.set(key.removeprefix("spark.hadoop."), value)


#: The Spark engine's tables: ``hash`` next to ``hash#1``, ``q?x=1`` next to ``qAx=1``.
SPARK_TABLES = {"hash": 1, "hash#1": 2, "q?x=1": 3, "qAx=1": 4}


@pytest.mark.spark
@pytest.mark.servers
@pytest.mark.parametrize("server", ["localstack", "minio"])
def test_spark_orphans_cleanup_deletes_only_the_named_tables_strays(
    spark: Any, request: pytest.FixtureRequest, server: str, tmp_path: Path
) -> None:
    """Spark reads ``s3a://b/hash#1`` and ``s3a://b/q?x=1`` as those keys, and the Spark engine
    cleans ``hash`` next to ``hash#1``, and ``q?x=1`` next to ``qAx=1``, whose log names a file of
    the same relative path as one of ``q?x=1``'s strays: a glob read of ``q?x=1``'s log
    (Spark's readers glob ``?``) would take that stray for a live file and keep it."""
    endpoint = request.getfixturevalue(server).endpoint
    lake = _build_lake(endpoint, SPARK_TABLES)
    shadow = min(k for k in lake.keys("qAx=1") if k.startswith("p="))
    source = {"Bucket": lake.bucket, "Key": f"qAx=1/{shadow}"}
    endpoint.s3_client().copy_object(Bucket=lake.bucket, Key=f"q?x=1/{shadow}", CopySource=source)
    _reach(spark, endpoint, lake.bucket)
    for name in ("hash#1", "q?x=1"):  # Spark's Delta reader names them by the same string
        rows = spark.read.format("delta").load(lake.uri(name, "s3a")).count()
        assert rows == SPARK_TABLES[name], name
    env = {**lake.env(), "DELTAGUARD_STATE_DIR": str(tmp_path)}
    engine = ["--engine", "spark", "--report-table", str(tmp_path / "report")]
    for name in ("hash", "q?x=1"):
        before = {t: lake.keys(t) for t in SPARK_TABLES}
        result = _orphans_delete(lake, name, *lake.s3_args(), *engine, env=env)
        assert result.exit_code == 0, result.output
        if name == "q?x=1":
            assert shadow not in lake.keys(name), "the glob's neighbour's live file was kept"
            before[name].discard(shadow)
        _check_cleanup(lake, name, before, SPARK_TABLES)
