"""deltaguard orphans --inventory, local engine: each inventory form, the date rule, bad
input (exit 2, one line), and on LocalStack through the fault proxy: no data-file listing."""

from __future__ import annotations

import gzip
import hashlib
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.orc as paorc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from deltaguard.localstack.fault_proxy import FaultProxy, requests_under
from deltaguard.localstack.synthetic_table import SyntheticTable
from deltaguard.localstack.table_copies import upload_table
from deltaguard.logstore.s3_location import S3Location
from deltaguard.tools.cli import main
from deltaguard.tools.orphans import scan
from deltaguard.tools.orphans.inventory import (
    Form,
    InventoryError,
    InventorySource,
    TableRoot,
    table_root,
    table_rows,
)
from deltaguard.tools.orphans.inventory_read import open_inventory, read_table_rows
from deltaguard.tools.storage import S3Options, S3TableStore, open_table

DAY = 86_400_000
NOW = int(time.time() * 1000)
OLD = NOW - 9 * DAY
#: The data files of :func:`make_table` that are not live (what the inventory must find).
ORPHANS = {"p=b/part-orphan.parquet", "_change_data/cdc-orphan.parquet"}


def make_table(root: Path) -> SyntheticTable:
    """A live file, an old tombstone, an old orphan, an old cdc orphan, a recent orphan, a
    hidden directory, a log temp file."""
    t = SyntheticTable(root)
    t.create(NOW - 10 * DAY)
    for rel in ("p=a/live.parquet", "p=b/gone.parquet"):
        t.write_file(rel, OLD)
    t.commit([{"add": t.add_action(r, OLD)} for r in ("p=a/live.parquet", "p=b/gone.parquet")], OLD)
    t.commit([{"remove": t.remove_action(("p=b/gone.parquet", None), NOW - 8 * DAY)}], OLD)
    t.write_file("p=b/part-orphan.parquet", OLD, size=10)
    t.write_file("_change_data/cdc-orphan.parquet", OLD)
    t.write_file("p=c/part-recent.parquet", NOW - 60_000)
    t.write_file("_tmp/x.parquet", OLD)
    t.write_file("_delta_log/.00000000000000000009.json.1234.tmp", OLD)
    return t


def walk_rows(root: Path, *, scheme: str = "file:") -> list[dict[str, Any]]:
    """A USING INVENTORY row for every file and directory below ``root`` (as Delta's
    listing would give it), plus rows of a sibling table that must be ignored."""
    rows = []
    for path in sorted(root.rglob("*")):
        st = path.stat()
        rows.append(
            {
                "path": f"{scheme}{path}",
                "length": 0 if path.is_dir() else st.st_size,
                "isDir": path.is_dir(),
                "modificationTime": st.st_mtime_ns // 1_000_000,
            }
        )
    rows.append(
        {"path": f"{scheme}{root}-sibling/x.parquet", "length": 1, "isDir": False,
         "modificationTime": OLD}
    )  # fmt: skip
    return rows


def write_parquet_inventory(rows: list[dict[str, Any]], where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), where / "part-0.parquet")
    (where / "_SUCCESS").write_bytes(b"")
    return where


def candidates(result: Any) -> dict[str, str]:
    return {c.path: c.file_class.value for c in result.candidates}


def test_parquet_inventory_finds_what_the_listing_finds(tmp_path: Path, monkeypatch) -> None:
    make_table(tmp_path / "t")
    listed = scan(open_table(str(tmp_path / "t")))
    inventory = write_parquet_inventory(walk_rows(tmp_path / "t"), tmp_path / "inv")
    source = open_inventory(str(inventory), S3Options(), NOW)

    def no_listing(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the data files were listed")

    monkeypatch.setattr("deltaguard.tools.orphans.classify.list_table", no_listing)
    result = scan(open_table(str(tmp_path / "t")), inventory=source)
    assert candidates(result) == candidates(listed)
    assert ORPHANS <= set(candidates(result))
    assert result.listed_files == listed.listed_files
    assert "_tmp" in result.hidden_dirs and "_delta_log" in result.hidden_dirs
    report = result.inventory
    assert report is not None and report.form is Form.PARQUET and report.date_ms == NOW
    assert report.rows_under_table == report.rows_read - 1  # the sibling's row
    assert result.cutoff_ms == result.now_ms - 7 * DAY  # the retention's cut-off is the earlier one


def test_files_the_inventory_does_not_list_are_unknown(tmp_path: Path) -> None:
    t = make_table(tmp_path / "t")
    inventory = write_parquet_inventory(walk_rows(tmp_path / "t"), tmp_path / "inv")
    t.write_file("p=b/part-after-inventory.parquet", OLD)  # old mtime, written after
    result = scan(
        open_table(str(tmp_path / "t")), inventory=open_inventory(str(inventory), S3Options(), NOW)
    )
    assert "p=b/part-after-inventory.parquet" not in candidates(result)


def test_date_rule_a_file_newer_than_the_inventory_is_never_a_candidate(tmp_path: Path) -> None:
    make_table(tmp_path / "t")
    rows = walk_rows(tmp_path / "t")
    date = OLD + 1_000
    newer = {"p=b/part-orphan.parquet"}
    for row in rows:  # recorded while the inventory was taken: newer than its date
        if any(row["path"].endswith(p) for p in newer):
            row["modificationTime"] = date
    inventory = write_parquet_inventory(rows, tmp_path / "inv")
    result = scan(
        open_table(str(tmp_path / "t")),
        retention_ms=0,
        inventory=open_inventory(str(inventory), S3Options(), date),
    )
    assert result.cutoff_ms == date
    found = candidates(result)
    assert found["p=b/part-orphan.parquet"] == "recent"
    assert found["_change_data/cdc-orphan.parquet"] == "orphan"
    # without a date: the newest modificationTime is the date, so the newest row is recent
    derived = scan(
        open_table(str(tmp_path / "t")),
        retention_ms=0,
        inventory=open_inventory(str(inventory), S3Options(), None),
    )
    assert derived.inventory is not None
    assert derived.inventory.date_ms == max(r["modificationTime"] for r in rows if not r["isDir"])
    assert "newest modificationTime" in derived.inventory.date_source
    assert candidates(derived)["p=c/part-recent.parquet"] == "recent"


def test_delta_inventory_table(tmp_path: Path) -> None:
    make_table(tmp_path / "t")
    inv = SyntheticTable(tmp_path / "inv")
    inv.create(OLD)
    inv.root.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(walk_rows(tmp_path / "t")), inv.root / "part-0.parquet")
    size = (inv.root / "part-0.parquet").stat().st_size
    inv.commit([{"add": inv.add_action("part-0.parquet", OLD, size=size)}], OLD)
    pq.write_table(pa.Table.from_pylist(walk_rows(tmp_path / "t")[:1]), inv.root / "stale.parquet")
    source = open_inventory(str(inv.root), S3Options(), NOW)
    assert source.form is Form.DELTA and len(source.data_files) == 1  # live files only
    listed = scan(open_table(str(tmp_path / "t")))
    assert candidates(scan(open_table(str(tmp_path / "t")), inventory=source)) == candidates(listed)


def report_rows(bucket: str) -> list[dict[str, Any]]:
    """S3 Inventory rows of a bucket-wide report: the table's keys (spaces, ``+``, ``%`` and
    non-ASCII), another table's, another bucket's, a noncurrent version, a delete marker, a
    directory marker."""

    def row(key: str, b: str = bucket, latest: str = "true", marker: str = "false") -> dict:  # type: ignore[type-arg]
        return {"Bucket": b, "Key": key, "Size": "7", "LastModifiedDate": "2026-01-02T03:04:05.000Z",
                "IsLatest": latest, "IsDeleteMarker": marker}  # fmt: skip

    return [
        row("lake/tbl/p=a b/part x+y%.parquet"),
        row("lake/tbl/p=é/part-é.parquet"),
        row("lake/tbl/_delta_log/00000000000000000000.json"),
        row("lake/tbl/p=a/"),
        row("lake/tbl/p=a/old-version.parquet", latest="false"),
        row("lake/tbl/p=a/deleted.parquet", marker="true"),
        row("lake/tbl2/part.parquet"),
        row("lake/tbl/p=a/other-bucket.parquet", b="other"),
    ]


EXPECTED_PATHS = ["p=a b/part x+y%.parquet", "p=é/part-é.parquet"]


#: S3 Inventory's Parquet and ORC names and types of the report fields these tests write.
_SNAKE = {"Bucket": ("bucket", pa.string()), "Key": ("key", pa.string()),
          "VersionId": ("version_id", pa.string()), "IsLatest": ("is_latest", pa.bool_()),
          "IsDeleteMarker": ("is_delete_marker", pa.bool_()), "Size": ("size", pa.int64()),
          "LastModifiedDate": ("last_modified_date", pa.timestamp("ms", tz="UTC")),
          "ETag": ("e_tag", pa.string())}  # fmt: skip


def _typed(values: list[Any], kind: pa.DataType) -> pa.Array:
    """A CSV field's text as S3 Inventory's Parquet and ORC hold it: empty is null."""
    cells = [None if v == "" else v for v in values]
    if kind == pa.bool_():
        return pa.array([None if v is None else v == "true" for v in cells], kind)
    return pa.array(cells).cast(kind)


def write_report(
    where: Path, form: Form, rows: list[dict[str, Any]], bucket: str, *, checksum: bool = True
) -> Path:
    """A report in S3 Inventory's layout: ``<config>/data/<file>``,
    ``<config>/<date>/manifest.json`` (each file's ``MD5checksum``) and, with ``checksum``,
    ``manifest.checksum`` (the MD5 of manifest.json). The CSV is written as AWS writes it:
    every field quoted, keys URL-encoded, empty fields ``""``."""
    data = where / "data"
    data.mkdir(parents=True, exist_ok=True)
    columns = list(rows[0])
    if form is Form.S3_CSV:
        name = "a.csv.gz"
        lines = [
            ",".join(
                '"' + (quote_plus(r[c], safe="") if c == "Key" else r[c]) + '"' for c in columns
            )
            for r in rows
        ]
        (data / name).write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
        schema = ", ".join(columns)
    else:
        table = pa.table(
            {_SNAKE[c][0]: _typed([r[c] for r in rows], _SNAKE[c][1]) for c in columns}
        )
        if form is Form.S3_PARQUET:
            name = "a.parquet"
            pq.write_table(table, data / name)
            schema = "message s3.inventory { required binary bucket (STRING); ... }"
        else:
            name = "a.orc"
            paorc.write_table(table, data / name)
            schema = "struct<bucket:string,key:string,size:bigint,last_modified_date:timestamp>"
    manifest = where / "2026-01-03T01-00Z" / "manifest.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "sourceBucket": bucket,
        "destinationBucket": "arn:aws:s3:::inventory-dest",
        "version": "2016-11-30",
        "creationTimestamp": "1767402000000",
        "fileFormat": {"S3_CSV": "CSV", "S3_PARQUET": "Parquet", "S3_ORC": "ORC"}[form.name],
        "fileSchema": schema,
        "files": [
            {
                "key": f"inv/{bucket}/config/data/{name}",
                "size": (data / name).stat().st_size,
                "MD5checksum": hashlib.md5((data / name).read_bytes()).hexdigest(),
            }
        ],
    }
    manifest.write_text(json.dumps(doc))
    if checksum:
        (manifest.parent / "manifest.checksum").write_text(
            hashlib.md5(manifest.read_bytes()).hexdigest()
        )
    return manifest


def versioned_rows(bucket: str) -> list[dict[str, Any]]:
    """An "all versions" report as S3 Inventory writes it: a row per version, the delete
    markers' Size and ETag empty. ``a``: two versions (the latest counts, size 7); ``b``: its
    latest version is a delete marker (gone); ``c``: a version over an older delete marker
    (counts); ``d``: only noncurrent versions (gone)."""

    def row(key: str, version: str, latest: bool, marker: bool = False, size: str = "7") -> dict:  # type: ignore[type-arg]
        return {"Bucket": bucket, "Key": f"lake/tbl/p=x/{key}.parquet", "VersionId": version,
                "IsLatest": str(latest).lower(), "IsDeleteMarker": str(marker).lower(),
                "Size": "" if marker else size, "LastModifiedDate": "2026-01-02T03:04:05.000Z",
                "ETag": "" if marker else "0123456789abcdef0123456789abcdef"}  # fmt: skip

    return [
        row("a", "v2", True),
        row("a", "v1", False, size="5"),
        row("b", "v3", True, marker=True),
        row("b", "v2", False),
        row("c", "v2", True, size="9"),
        row("c", "v1", False, marker=True),
        row("d", "v1", False),
    ]


@pytest.mark.parametrize("form", [Form.S3_CSV, Form.S3_PARQUET, Form.S3_ORC])
def test_versioned_report_latest_versions_only_and_empty_fields_are_null(
    tmp_path: Path, form: Form
) -> None:
    manifest = write_report(tmp_path / "config", form, versioned_rows("lake"), "lake")
    source = open_inventory(str(manifest), S3Options(), None)
    rows = read_table_rows(source, TableRoot(form, ("lake/tbl/",), "lake", ("p",)), S3Options())
    got = dict(zip(rows.files["path"].to_pylist(), rows.files["size"].to_pylist(), strict=True))
    assert got == {"p=x/a.parquet": 7, "p=x/c.parquet": 9}
    assert rows.rows == 2  # the objects there are now: one row each


def truncate_data_file(manifest: Path, form: Form) -> Path:
    """Replaces the report's data file with a valid one of half its rows (the manifest's
    MD5checksum unchanged): what a truncated copy or a file from another run looks like."""
    data = (
        manifest.parent.parent
        / "data"
        / {Form.S3_CSV: "a.csv.gz", Form.S3_PARQUET: "a.parquet"}[form]
    )
    if form is Form.S3_CSV:
        lines = gzip.decompress(data.read_bytes()).decode().splitlines()
        data.write_bytes(gzip.compress(("\n".join(lines[: len(lines) // 2]) + "\n").encode()))
    else:
        table = pq.read_table(data)
        pq.write_table(table.slice(0, table.num_rows // 2), data)
    return data


@pytest.mark.parametrize("form", [Form.S3_CSV, Form.S3_PARQUET])
def test_data_file_that_does_not_match_its_md5checksum_is_refused(
    tmp_path: Path, form: Form
) -> None:
    manifest = write_report(tmp_path / "config", form, report_rows("lake"), "lake")
    data = truncate_data_file(manifest, form)
    source = open_inventory(str(manifest), S3Options(), None)
    with pytest.raises(InventoryError, match="does not match") as refused:
        read_table_rows(source, TableRoot(form, ("lake/tbl/",), "lake", ("p",)), S3Options())
    assert str(data) in str(refused.value) and "MD5checksum" in str(refused.value)


@pytest.mark.parametrize("form", [Form.S3_CSV, Form.S3_PARQUET, Form.S3_ORC])
def test_s3_report_forms(tmp_path: Path, form: Form) -> None:
    manifest = write_report(tmp_path / "config", form, report_rows("lake"), "lake")
    source = open_inventory(str(manifest), S3Options(), None)
    assert source.form is form and source.date_ms == 1767402000000
    root = TableRoot(form, ("lake/tbl/",), "lake", ("p",))
    rows = read_table_rows(source, root, S3Options())
    assert sorted(rows.files["path"].to_pylist()) == EXPECTED_PATHS
    assert rows.rows == 6  # the noncurrent version and the delete marker are not objects
    assert rows.under == 4  # the two files, the log's commit, the directory marker
    assert rows.hidden_dirs == {"_delta_log"}
    assert set(rows.files["mtime_ms"].to_pylist()) == {1767323045000}


def test_csv_keys_are_url_decoded_once(tmp_path: Path) -> None:
    batch = pa.record_batch(
        {
            "Bucket": ["b", "b"],
            "Key": ["t/a%2Bb+c.parquet", "t/%25zz.parquet"],
            "Size": ["1", "2"],
            "LastModifiedDate": ["2026-01-02T03:04:05Z", "2026-01-02T03:04:05Z"],
        }
    )
    got = table_rows(batch, TableRoot(Form.S3_CSV, ("t/",), "b"), "x.csv.gz")
    assert got.files["path"].to_pylist() == ["a+b c.parquet", "%zz.parquet"]
    parquet = table_rows(batch, TableRoot(Form.S3_PARQUET, ("t/",), "b"), "x.parquet")
    assert parquet.files["path"].to_pylist()[0] == "a%2Bb+c.parquet"  # not encoded there


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing-manifest", "cannot read inventory file"),
        ("wrong-format", "fileFormat 'JSON'"),
        ("no-key-column", "no key column"),
        ("corrupt-parquet", "is not readable parquet"),
        ("not-inventory-columns", "not a USING INVENTORY table"),
        ("date-without-inventory", "--inventory-date needs --inventory"),
        ("bad-date", "is not an ISO 8601"),
        ("report-for-local-table", "is on local disk"),
        ("bad-manifest-checksum", "manifest.checksum"),
        ("no-md5checksum", "has no MD5checksum"),
    ],
)
def test_bad_inventory_exits_2_naming_it(tmp_path: Path, setup: str, message: str) -> None:
    make_table(tmp_path / "t")
    args = ["orphans", str(tmp_path / "t")]
    manifest = tmp_path / "cfg" / "d" / "manifest.json"
    if setup == "missing-manifest":
        args += ["--inventory", str(manifest)]
    elif setup in ("wrong-format", "no-key-column", "report-for-local-table", "no-md5checksum"):
        manifest = write_report(
            tmp_path / "cfg", Form.S3_CSV, report_rows("lake"), "lake", checksum=False
        )
        doc = json.loads(manifest.read_text())
        if setup == "wrong-format":
            doc["fileFormat"] = "JSON"
        elif setup == "no-key-column":
            doc["fileSchema"] = "Bucket, Size, LastModifiedDate"
        elif setup == "no-md5checksum":
            del doc["files"][0]["MD5checksum"]
        manifest.write_text(json.dumps(doc))
        args += ["--inventory", str(manifest)]
    elif setup == "bad-manifest-checksum":  # manifest.json edited after S3 wrote it
        manifest = write_report(tmp_path / "cfg", Form.S3_CSV, report_rows("lake"), "lake")
        manifest.write_text(manifest.read_text().replace("1767402000000", "1767402000001"))
        args += ["--inventory", str(manifest)]
    elif setup == "corrupt-parquet":
        (tmp_path / "inv").mkdir()
        (tmp_path / "inv" / "part-0.parquet").write_bytes(b"PAR1 this is not parquet")
        args += ["--inventory", str(tmp_path / "inv")]
    elif setup == "not-inventory-columns":
        inv = tmp_path / "inv"
        inv.mkdir()
        pq.write_table(pa.table({"path": ["x"], "size": [1]}), inv / "p.parquet")
        args += ["--inventory", str(inv)]
    elif setup == "date-without-inventory":
        args += ["--inventory-date", "2026-01-01T00:00:00Z"]
    else:
        inv = write_parquet_inventory(walk_rows(tmp_path / "t"), tmp_path / "inv")
        args += ["--inventory", str(inv), "--inventory-date", "yesterday"]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 2, done.output
    assert isinstance(done.exception, SystemExit)  # an exit code, not an exception
    assert message in done.stderr and "Traceback" not in done.output
    assert len(done.stderr.strip().splitlines()) == 1
    if setup in ("missing-manifest", "corrupt-parquet", "wrong-format", "no-key-column",
                 "bad-manifest-checksum", "no-md5checksum"):  # fmt: skip
        assert str(tmp_path) in done.stderr  # names the file


def test_cli_json_and_text_report_the_inventory(tmp_path: Path) -> None:
    make_table(tmp_path / "t")
    inv = write_parquet_inventory(walk_rows(tmp_path / "t"), tmp_path / "inv")
    done = CliRunner().invoke(
        main, ["orphans", str(tmp_path / "t"), "--inventory", str(inv), "--json"]
    )
    assert done.exit_code == 1, done.output
    doc = json.loads(done.stdout)["inventory"]
    assert doc["location"] == str(inv) and doc["listing_skipped"] is True
    assert doc["rows_read"] == doc["rows_under_table"] + 1 and doc["form"] == "parquet-table"
    assert "newest modificationTime" in doc["date_source"]
    text = CliRunner().invoke(main, ["orphans", str(tmp_path / "t"), "--inventory", str(inv)])
    assert "the data files were not listed" in text.stdout, text.stdout


def _report_on_s3(
    client: Any, bucket: str, tmp_path: Path, *, truncated: bool = False
) -> list[dict[str, Any]]:
    """Uploads the table at ``tmp_path/t`` to ``bucket/lake/tbl`` and a CSV report of the
    bucket to ``bucket/inventory/config/``; ``truncated``: its data file then loses half its
    rows (the manifest's MD5checksum unchanged). Returns the report's rows."""
    upload_table(tmp_path / "t", client, bucket, "lake/tbl", workers=8)
    rows = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            rows.append({"Bucket": bucket, "Key": obj["Key"], "Size": str(obj["Size"]),
                         "LastModifiedDate": obj["LastModified"].isoformat(),
                         "IsLatest": "true", "IsDeleteMarker": "false"})  # fmt: skip
    manifest = write_report(tmp_path / "cfg", Form.S3_CSV, rows, bucket, checksum=False)
    if truncated:
        truncate_data_file(manifest, Form.S3_CSV)
    doc = json.loads(manifest.read_text())
    doc["destinationBucket"] = f"arn:aws:s3:::{bucket}"
    doc["files"][0]["key"] = "inventory/config/data/a.csv.gz"
    doc["creationTimestamp"] = str(int(time.time() * 1000))
    client.put_object(Bucket=bucket, Key="inventory/config/data/a.csv.gz",
                      Body=(tmp_path / "cfg/data/a.csv.gz").read_bytes())  # fmt: skip
    body = json.dumps(doc).encode()
    client.put_object(Bucket=bucket, Key="inventory/config/d/manifest.json", Body=body)
    client.put_object(Bucket=bucket, Key="inventory/config/d/manifest.checksum",
                      Body=hashlib.md5(body).hexdigest().encode())  # fmt: skip
    return rows


def test_s3_report_whose_data_file_does_not_match_deletes_nothing(
    localstack: Any, ls_bucket: str, tmp_path: Path, run_cli
) -> None:
    """--delete --yes with a report whose data file lost half its rows since S3 wrote it:
    exit 2, one line naming the data file, and every object still there."""
    make_table(tmp_path / "t")
    client = localstack.endpoint.s3_client()
    _report_on_s3(client, ls_bucket, tmp_path, truncated=True)
    before = {o["Key"] for o in client.list_objects_v2(Bucket=ls_bucket)["Contents"]}
    done = run_cli(
        "orphans", f"s3://{ls_bucket}/lake/tbl", "--endpoint", localstack.endpoint.url,
        "--region", localstack.endpoint.region, "--path-style", "--delete", "--yes",
        "--retention", "0", "--unsafe-retention", "--manifest", str(tmp_path / "m"),
        "--inventory", f"s3://{ls_bucket}/inventory/config/d/manifest.json",
        env={"AWS_ACCESS_KEY_ID": localstack.endpoint.access_key,
             "AWS_SECRET_ACCESS_KEY": localstack.endpoint.secret_key},
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"s3://{ls_bucket}/inventory/config/data/a.csv.gz" in done.stderr
    assert "does not match" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    after = {o["Key"] for o in client.list_objects_v2(Bucket=ls_bucket)["Contents"]}
    assert after == before and not (tmp_path / "m").exists()


@pytest.mark.slow  # 5-10 s: make test-fast stays under 3 minutes
def test_s3_report_lists_nothing_under_the_data_prefix(
    localstack: Any, ls_bucket: str, tmp_path: Path, run_cli
) -> None:
    """A CSV report in the bucket, the table on LocalStack, scanned through the fault proxy:
    not one ListObjects request on the table's data (the log is listed); the listing run
    for comparison lists it, and finds the same candidates."""
    t = make_table(tmp_path / "t")
    t.write_file("p=a b/part-orphan+1.parquet", OLD)
    rows = _report_on_s3(localstack.endpoint.s3_client(), ls_bucket, tmp_path)
    table = f"s3://{ls_bucket}/lake/tbl"
    with FaultProxy(localstack.endpoint, tmp_path, seed=1) as proxy:
        env = {"AWS_ACCESS_KEY_ID": proxy.endpoint.access_key,
               "AWS_SECRET_ACCESS_KEY": proxy.endpoint.secret_key}  # fmt: skip
        common = [table, "--endpoint", proxy.endpoint.url, "--region", proxy.endpoint.region,
                  "--path-style", "--retention", "0", "--json"]  # fmt: skip
        inventory = f"s3://{ls_bucket}/inventory/config/d/manifest.json"
        done = run_cli("orphans", *common, "--inventory", inventory, env=env)
        assert done.returncode == 1, done.stderr
        log = proxy.requests()
        proxy.reset_requests()
        listed = run_cli("orphans", *common, env=env)
        listing_log = proxy.requests()

    def data_lists(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            e
            for e in requests_under(entries, ls_bucket, "lake/tbl/")
            if e["kind"] == "s3 ListObjects" and not e["prefix"].startswith("lake/tbl/_delta_log")
        ]

    assert data_lists(log) == []
    assert any(e["kind"] == "s3 ListObjects" for e in requests_under(log, ls_bucket, "lake/tbl/"))
    assert data_lists(listing_log), "the listing run must list the data files"
    by_inventory = json.loads(done.stdout)
    by_listing = json.loads(listed.stdout)
    files = {f["path"]: f["class"] for f in by_inventory["files"]}
    assert files == {f["path"]: f["class"] for f in by_listing["files"]}
    assert files["p=a b/part-orphan+1.parquet"] == "orphan"
    assert by_inventory["inventory"]["rows_under_table"] == len(rows)  # every key was the table's


def test_report_of_another_bucket_is_refused(
    localstack: Any, ls_bucket: str, tmp_path: Path, run_cli
) -> None:
    make_table(tmp_path / "t")
    client = localstack.endpoint.s3_client()
    upload_table(tmp_path / "t", client, ls_bucket, "lake/tbl", workers=8)
    manifest = write_report(tmp_path / "cfg", Form.S3_CSV, report_rows("elsewhere"), "elsewhere")
    client.put_object(Bucket=ls_bucket, Key="inv/manifest.json", Body=manifest.read_bytes())
    done = run_cli(
        "orphans", f"s3://{ls_bucket}/lake/tbl", "--endpoint", localstack.endpoint.url,
        "--region", localstack.endpoint.region, "--path-style",
        "--inventory", f"s3://{ls_bucket}/inv/manifest.json",
        env={"AWS_ACCESS_KEY_ID": localstack.endpoint.access_key,
             "AWS_SECRET_ACCESS_KEY": localstack.endpoint.secret_key},
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "lists bucket 'elsewhere', not the table's bucket" in done.stderr
    assert "Traceback" not in done.stderr


def test_using_inventory_paths_map_by_bucket_and_prefix_under_any_s3_scheme() -> None:
    store = S3TableStore(None, S3Location("b", "lake/t"))
    source = InventorySource("inv", Form.PARQUET, (), None, "")
    root = table_root(store, source, ["p"], {})
    paths = [
        "s3a://b/lake/t/p=1/x.parquet",
        "s3://b/lake/t/y.parquet",
        "s3n://b/lake/t/p=2/z.parquet",
        "s3://b/lake/t2/sibling.parquet",
        "s3://other/lake/t/w.parquet",
        "lake/t/relative.parquet",
        "abfss://b/lake/t/elsewhere.parquet",
        "s3://b/lake/t//doubled.parquet",
        "s3://b/lake/t/p=1",
    ]
    batch = pa.table(
        {
            "path": paths,
            "length": [1] * len(paths),
            "isDir": [False] * (len(paths) - 1) + [True],
            "modificationTime": list(range(len(paths))),
        }
    )
    got = table_rows(batch, root, "inv")
    assert got.files["path"].to_pylist() == ["p=1/x.parquet", "y.parquet", "p=2/z.parquet"]
    assert (got.rows, got.under) == (len(paths) - 1, 4)  # the directory row is not a file
