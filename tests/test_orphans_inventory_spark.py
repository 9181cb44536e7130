"""``deltaguard orphans --inventory`` with the Spark engine: the same candidates as the local
engine (Parquet and Delta inventory tables), the same rows of each S3 Inventory report form
(CSV gz, Parquet, ORC; "all versions" reports with delete markers too), a data file that does
not match its MD5checksum refused before any job, and a corrupt inventory file failing with
exit 2. One local Spark
session for the module (local[2])."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from local_spark import local_spark_session
from test_orphans_inventory import (
    ORPHANS,
    candidates,
    make_table,
    report_rows,
    truncate_data_file,
    versioned_rows,
    walk_rows,
    write_parquet_inventory,
    write_report,
)

from deltaguard.tools.cli import main
from deltaguard.tools.orphans import scan
from deltaguard.tools.orphans.inventory import Form, InventoryError, TableRoot
from deltaguard.tools.orphans.inventory_read import open_inventory, read_table_rows
from deltaguard.tools.spark_engine.inventory import inventory_listing_spark
from deltaguard.tools.spark_engine.orphans_scan import scan_spark
from deltaguard.tools.spark_engine.store_spec import StoreSpec
from deltaguard.tools.storage import S3Options, open_table

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with local_spark_session(tmp_path_factory, "orphans-inventory") as session:
        yield session


def test_both_engines_agree_with_an_inventory_table(spark: Any, tmp_path: Path) -> None:
    make_table(tmp_path / "t")
    inventory = write_parquet_inventory(walk_rows(tmp_path / "t"), tmp_path / "inv")
    source = open_inventory(str(inventory), S3Options(), None)
    ours = scan_spark(spark, StoreSpec(str(tmp_path / "t")), str(tmp_path / "r"), inventory=source)
    local = scan(open_table(str(tmp_path / "t")), now_ms=ours.result.now_ms, inventory=source)
    assert candidates(ours.result) == candidates(local)
    assert ORPHANS <= set(candidates(local))
    assert ours.result.inventory == local.inventory
    assert ours.result.hidden_dirs == local.hidden_dirs
    assert ours.result.listed_files == local.listed_files


@pytest.mark.parametrize("versioned", [False, True], ids=["current", "all-versions"])
@pytest.mark.parametrize("form", [Form.S3_CSV, Form.S3_PARQUET, Form.S3_ORC])
def test_spark_reads_each_report_form_like_pyarrow(
    spark: Any, tmp_path: Path, form: Form, versioned: bool
) -> None:
    rows = versioned_rows("lake") if versioned else report_rows("lake")
    manifest = write_report(tmp_path / "config", form, rows, "lake")
    source = open_inventory(str(manifest), S3Options(), None)
    root = TableRoot(form, ("lake/tbl/",), "lake", ("p",))
    read = inventory_listing_spark(spark, source, root)
    try:
        files = sorted(tuple(r) for r in read.listing.files.collect())
    finally:
        read.listing.release()
    local = read_table_rows(source, root, S3Options())
    assert files == sorted(tuple(r.values()) for r in local.files.to_pylist())
    assert (read.report.rows_read, read.report.rows_under_table) == (local.rows, local.under)
    assert read.listing.hidden_dirs == sorted(local.hidden_dirs)
    assert read.report.date_ms == 1767402000000
    if versioned:  # the latest versions that are not delete markers, nothing else
        assert sorted((f[0], f[1]) for f in files) == [("p=x/a.parquet", 7), ("p=x/c.parquet", 9)]


def test_spark_refuses_a_data_file_that_does_not_match_its_md5checksum(
    spark: Any, tmp_path: Path
) -> None:
    manifest = write_report(tmp_path / "config", Form.S3_CSV, report_rows("lake"), "lake")
    data = truncate_data_file(manifest, Form.S3_CSV)
    source = open_inventory(str(manifest), S3Options(), None)
    root = TableRoot(Form.S3_CSV, ("lake/tbl/",), "lake", ("p",))
    jobs = spark.sparkContext.statusTracker().getJobIdsForGroup()
    with pytest.raises(InventoryError, match="does not match") as refused:
        inventory_listing_spark(spark, source, root)
    assert str(data) in str(refused.value)
    assert spark.sparkContext.statusTracker().getJobIdsForGroup() == jobs  # no job ran


def test_spark_engine_cli_with_a_corrupt_inventory_exits_2(spark: Any, tmp_path: Path) -> None:
    make_table(tmp_path / "t")
    inv = tmp_path / "inv"
    inv.mkdir()
    (inv / "part-0.parquet").write_bytes(b"PAR1 this is not parquet")
    done = CliRunner().invoke(
        main, ["orphans", str(tmp_path / "t"), "--engine", "spark", "--inventory", str(inv)]
    )
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output
    assert f"{inv}/part-0.parquet is not readable parquet" in done.stderr  # names the file
