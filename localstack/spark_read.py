"""What one Spark line's Delta reads of tables on local disk: run with that line's interpreter
(``python -m deltaguard.localstack.spark_read TABLE_DIR [TABLE_DIR ...] SCRATCH_DIR``), it
starts one ``local[1]`` test driver (:func:`deltaguard.localstack.spark_driver.build_test_session`,
``local`` preset) for all the tables, reads each one's rows (which reads every live file and
deletion vector: a missing or broken one fails the read) and prints one JSON line:

``{"spark": VERSION, "hadoop": VERSION, "tables": [TABLE, ...]}``

one ``TABLE`` per ``TABLE_DIR``, in order: ``{"rows": N, "values": [...], "files": [...]}``, or
``{"error": MESSAGE}`` when this line's Delta refused or failed to read that table (the others
are still read). ``values`` are the rows as JSON lists (values JSON cannot hold as strings),
sorted; ``files`` are ``inputFiles()`` as paths relative to ``TABLE_DIR`` (Hadoop ``Path``
strings are the file names on disk, not URI-encoded: only ``file:`` and the table root are
dropped), sorted. The driver failing to start exits non-zero with Spark's error on stderr.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from deltaguard.localstack.spark_driver import build_test_session, small_tables_conf
from deltaguard.logstore.preset_name import PresetName
from deltaguard.spark_conf.storage import LocalStorage


def table_relative(input_file: str, root: Path) -> str:
    """``file:/abs/root/a/b.parquet`` (or ``file:///...``) -> ``a/b.parquet``. Raises
    ValueError for a file outside ``root``."""
    path = input_file.removeprefix("file://").removeprefix("file:")
    return Path(path).relative_to(root).as_posix()


def json_row(values: list[Any]) -> str:
    """A row as the report holds it: JSON, values JSON cannot hold as strings. Also the sort
    key of ``values`` (so callers can put another reader's rows in the same order)."""
    return json.dumps(values, default=str)


def _read_one(spark: Any, root: Path) -> dict[str, Any]:
    """One table's entry of the report (see the module doc); a failed read is its ``error``."""
    try:
        df = spark.read.format("delta").load(str(root))
        values = sorted((json.loads(json_row(list(row))) for row in df.collect()), key=json_row)
        files = sorted(table_relative(f, root) for f in df.inputFiles())
    except Exception as exc:  # the line's refusal is the answer for this table
        return {"error": str(exc)[:8000]}
    return {"rows": len(values), "values": values, "files": files}


def read(roots: list[Path], scratch: Path) -> dict[str, Any]:
    """Spark's rows and live files of each Delta table of ``roots``, one driver for all (see
    the module doc)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = build_test_session(
        LocalStorage(),
        PresetName.LOCAL,
        app_name="deltaguard-spark-read",
        local_dir=scratch,
        extra_conf=small_tables_conf(),
    )
    try:
        tables = [_read_one(spark, root) for root in roots]
        jvm = spark.sparkContext._jvm
        hadoop = str(jvm.org.apache.hadoop.util.VersionInfo.getVersion())  # type: ignore[union-attr]
        return {"spark": spark.version, "hadoop": hadoop, "tables": tables}
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print(
            "usage: python -m deltaguard.localstack.spark_read TABLE_DIR [TABLE_DIR ...] "
            "SCRATCH_DIR",
            file=sys.stderr,
        )
        return 2
    *roots, scratch = (Path(a).resolve() for a in args)
    print(json.dumps(read(roots, scratch)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
