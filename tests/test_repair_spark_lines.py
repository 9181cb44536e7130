"""Issue 42, "readers agree afterwards", on every Spark line: one Spark-written table with
deletion vectors (a copy of the session's ``dv_cdc``) loses a data file, another is truncated
and a third file's deletion vector file is deleted; the CLI,
``deltaguard repair --check footers --yes``, removes the three, and a fourth file keeps a
deletion vector every reader must apply.
Then delta-rs and deltaguard's replay, and each older Spark line (its own cached virtualenv:
one ``local[1]`` driver in a subprocess, :mod:`deltaguard.localstack.spark_read`), read the
table with the same live files and the same row count. (The installed Spark 4.2 line:
tests/test_repair_spark.py; S3 and the commit protocols: test_repair_s3.py.)
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from deltalake import DeltaTable, QueryBuilder
from test_spark_lines_e2e import OTHER_LINES, line_python  # noqa: F401  (a fixture)

from deltaguard.localstack.multi_driver import driver_env
from deltaguard.localstack.spark_read import table_relative
from deltaguard.localstack.table_copies import copy_table
from deltaguard.spark_conf.spark_lines import by_name
from deltaguard.tools.commands.audit import audit_exit_code
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.audit import audit_table

pytestmark = pytest.mark.spark

#: The lines read here besides the installed one: each starts its own JVM (16.5 s for 3.5 at a
#: load average of 2-4, 67-78 s a line at 12, on the shared 2-core machine, 2026-11-27), so
#: ``make test`` reads with the oldest line (Spark 3.5 / Delta 3.3, Hadoop 3.3.4: the one most
#: unlike the 4.2 writer) and ``make soak`` with the others too.
LINES = [
    OTHER_LINES[0],
    *(pytest.param(name, marks=pytest.mark.long) for name in [*OTHER_LINES[1:], "3.5-hadoop3.4"]),
]


@dataclass(frozen=True)
class Repaired:
    root: Path
    #: the live files (table-relative) deltaguard's replay and delta-rs both list
    files: frozenset[str]
    #: delta-rs's row count (deletion vectors applied)
    rows: int


@pytest.fixture(scope="module")
def repaired(spark_tables, run_cli, tmp_path_factory: pytest.TempPathFactory) -> Repaired:
    root = copy_table(spark_tables.path("dv_cdc"), tmp_path_factory.mktemp("repair-lines") / "t")
    snap = load_snapshot(str(root))
    with_dv = sorted(snap.adds.deletion_vectors(), key=lambda entry: entry[0])
    plain = sorted(set(snap.adds.paths()) - {path for path, _ in with_dv})
    # two entries with deletion vectors (one loses its DV file, one stays: readers must apply
    # its DV alike) and two without (one deleted, one truncated)
    assert len(with_dv) >= 2 and len(plain) >= 2, (with_dv, plain)
    (dv_file, dv), kept_dv_file = with_dv[0], with_dv[1][0]
    deleted, truncated = plain[0], plain[1]
    (root / dv.file_path()).unlink()
    (root / deleted).unlink()
    data = (root / truncated).read_bytes()
    (root / truncated).write_bytes(data[: len(data) // 2])

    dry = run_cli("repair", str(root), "--check", "footers")
    assert dry.returncode == 1, dry.stdout + dry.stderr
    done = run_cli("repair", str(root), "--check", "footers", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert audit_exit_code(audit_table(str(root))) == 0

    replay = {table_relative(loc, root) for loc in load_snapshot(str(root)).live_locations()}
    assert replay == set(snap.adds.paths()) - {dv_file, deleted, truncated}
    assert kept_dv_file in replay
    table = DeltaTable(str(root))
    assert {table_relative(uri, root) for uri in table.file_uris()} == replay
    counted = QueryBuilder().register("t", table).execute("SELECT count(*) AS n FROM t")
    rows = int(counted.read_all().column("n")[0].as_py())
    assert rows > 0
    return Repaired(root, frozenset(replay), rows)


# proves: docs/guides/repair.md "repair: one commit that removes exactly the broken entries; every
# reader can read the table again"
@pytest.mark.parametrize("line", LINES)
def test_line_reads_the_repaired_table_like_delta_rs_and_the_replay(
    line,
    line_python,  # noqa: F811
    repaired,
    tmp_path,
):
    python = line_python(line)
    proc = subprocess.run(
        [python, "-m", "deltaguard.localstack.spark_read", str(repaired.root), str(tmp_path)],
        env=driver_env(python=python),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, (
        f"Spark line {line} could not read the table:\n{proc.stderr[-4000:]}"
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = by_name(line)
    assert report["spark"].startswith(expected.spark + ".") and report["hadoop"] == expected.hadoop
    (table,) = report["tables"]
    assert set(table["files"]) == repaired.files, report
    assert table["rows"] == repaired.rows, report
