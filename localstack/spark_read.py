"""What one Spark line's Delta reads of a table on local disk: run with that line's interpreter
(``python -m deltaguard.localstack.spark_read TABLE_DIR SCRATCH_DIR``), it starts a ``local[1]``
test driver (:func:`deltaguard.localstack.spark_driver.build_test_session`, ``local`` preset),
counts the table's rows (which reads every live file and deletion vector: a missing or broken
one fails the read) and prints one JSON line:

``{"spark": VERSION, "hadoop": VERSION, "rows": N, "files": [...]}``

``files`` are ``inputFiles()`` as paths relative to ``TABLE_DIR`` (Hadoop ``Path`` strings are
the file names on disk, not URI-encoded: only ``file:`` and the table root are dropped), sorted.
A failed read exits non-zero with Spark's error on stderr.
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


def read(root: Path, scratch: Path) -> dict[str, Any]:
    """Spark's row count and live files of the Delta table at ``root`` (see the module doc)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = build_test_session(
        LocalStorage(),
        PresetName.LOCAL,
        app_name="deltaguard-spark-read",
        local_dir=scratch,
        extra_conf=small_tables_conf(),
    )
    try:
        df = spark.read.format("delta").load(str(root))
        rows = df.count()
        files = sorted(table_relative(f, root) for f in df.inputFiles())
        jvm = spark.sparkContext._jvm
        hadoop = str(jvm.org.apache.hadoop.util.VersionInfo.getVersion())  # type: ignore[union-attr]
        return {"spark": spark.version, "hadoop": hadoop, "rows": rows, "files": files}
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(
            "usage: python -m deltaguard.localstack.spark_read TABLE_DIR SCRATCH_DIR",
            file=sys.stderr,
        )
        return 2
    root, scratch = (Path(a).resolve() for a in args)
    print(json.dumps(read(root, scratch)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
