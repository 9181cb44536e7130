"""The readers' verdict on a Delta table, independent of deltaguard's code: delta-rs and Spark
read the table as a user's job would, and nothing of deltaguard (its snapshot loader, its
listing, its findings) decides what they see.

A table "reads" when the reader returns every row without an error: the row count is compared
with what the undamaged table holds (the caller's ``expected_rows``: the undamaged table's rows,
minus the rows of the files a repair removed), because a reader that silently skips rows (a
checkpoint of another version, say) fails the user as surely as one that raises.

:func:`audit_names` tells whether the output of ``deltaguard audit`` / ``repair`` names a file:
the finding's ``file`` field or any text of it (the JSON report, or the one line on stderr).

Used by ``test_healthy_means_readable.py`` (the damage matrix) and ``test_deltalog_fuzz.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reading:
    """What one reader got: ``rows`` read (None when the read failed) or its ``error`` (the
    exception's type and first line), and the ``version`` it read (delta-rs only; None when it failed)."""

    reader: str
    rows: int | None
    version: int | None
    error: str | None

    def reads(self, expected_rows: int) -> bool:
        """Whether the reader returned exactly ``expected_rows`` rows without an error."""
        return self.error is None and self.rows == expected_rows

    def why(self, expected_rows: int) -> str:
        """What went wrong, for an assertion message ("" when it reads)."""
        if self.error is not None:
            return f"{self.reader} failed: {self.error}"
        if self.rows != expected_rows:
            return (
                f"{self.reader} read {self.rows} rows of {expected_rows} (version {self.version})"
            )
        return ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def read_delta_rs(table: str, storage_options: dict[str, str] | None = None) -> Reading:
    """Reads every row of the latest version of ``table`` (a local path or ``s3://`` URI) with
    delta-rs (``DeltaTable(...).to_pyarrow_table()``: every live file is opened). Any failure,
    a Rust panic included (``PanicException`` is a ``BaseException``), is a failed reading."""
    from deltalake import DeltaTable

    try:
        dt = DeltaTable(table, storage_options=storage_options)
        data = dt.to_pyarrow_table()
        return Reading("delta-rs", data.num_rows, dt.version(), None)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        return Reading("delta-rs", None, None, _first_line(exc))


def read_spark(spark: Any, table: str) -> Reading:
    """Reads every row of the latest version of ``table`` with Spark Delta, collecting all
    rows (a ``count()`` could be answered from the log's statistics without opening a file)."""
    try:
        rows = spark.read.format("delta").load(table).collect()
        return Reading("spark", len(rows), None, None)
    except Exception as exc:
        return Reading("spark", None, None, _first_line(exc))


def spark_rows_per_file(spark: Any, table: str) -> dict[str, int]:
    """The rows Spark reads from each live file of ``table`` (deletion vectors applied), by
    the file's absolute path (``input_file_name()``, ``file:`` dropped, URL-decoded)."""
    from urllib.parse import unquote

    counts = (
        spark.read.format("delta")
        .load(table)
        .selectExpr("input_file_name() AS f")
        .groupBy("f")
        .count()
        .collect()
    )
    return {unquote(r.f.removeprefix("file://").removeprefix("file:")): int(r[1]) for r in counts}


def delta_rs_live_files(table: str, storage_options: dict[str, str] | None = None) -> set[str]:
    """delta-rs' live files of the latest version of ``table``, relative to it, as stored."""
    from deltalake import DeltaTable

    base = table.rstrip("/") + "/"
    uris = DeltaTable(table, storage_options=storage_options).file_uris()
    return {u.removeprefix("file://").removeprefix(base) for u in uris}


def spark_live_files(spark: Any, table: str) -> set[str]:
    """Spark's live files of the latest version of ``table`` (``inputFiles()``: Hadoop paths,
    not URI-encoded), relative to it."""
    base = table.rstrip("/") + "/"
    files = spark.read.format("delta").load(table).inputFiles()
    return {f.removeprefix("file://").removeprefix("file:").removeprefix(base) for f in files}


def audit_texts(stdout: str, stderr: str) -> list[str]:
    """The texts of a ``--json`` report (each finding's file and message) and of stderr; the
    raw stdout when it is not JSON."""
    texts = [stderr]
    try:
        doc = json.loads(stdout)
    except ValueError:
        return [*texts, stdout]
    for finding in doc.get("findings", []) if isinstance(doc, dict) else []:
        texts += [str(finding.get("file") or ""), str(finding.get("message") or "")]
    for item in doc.get("dangling", []) if isinstance(doc, dict) else []:
        texts.append(json.dumps(item, ensure_ascii=False))
    return texts


def audit_names(stdout: str, stderr: str, rel_path: str) -> bool:
    """Whether the output names ``rel_path`` (a path relative to the table root, as stored; a
    file of ``_delta_log/`` may be named by its name there)."""
    name = rel_path.removeprefix("_delta_log/")
    return any(rel_path in text or name in text for text in audit_texts(stdout, stderr))
