"""What a failed Spark job says, as deltaguard's one-line error."""

from __future__ import annotations

import re

_ERROR = re.compile(r"deltaguard\.tools\.[\w.]+\.(\w+Error): (.+)")
#: Spark's error for a file a job could not read (a log line that is not JSON, a truncated
#: parquet), and the causes below it in a Java stack trace.
_READ_FILE = re.compile(r"Encountered error while reading file (\S+?)\.?\s+SQLSTATE")
_CAUSE = re.compile(r"^Caused by: [\w.$]+: (?:\[[\w.]+\] )?(.+)$", re.M)


def spark_failure(exc: Exception) -> str | None:
    """The deltaguard error a Spark job failed with (``CorruptLogError: file:line: ...``), or
    the file a job could not read with the innermost cause (``cannot read F: why``), or None
    if the failure is neither."""
    text = str(exc)
    match = _ERROR.search(text)
    if match:
        return f"{match.group(1)}: {match.group(2)}"
    read = _READ_FILE.search(text)
    if read is None:
        return None
    causes = _CAUSE.findall(text)
    return f"cannot read {read.group(1)}: {causes[-1].strip() if causes else 'unreadable'}"


def job_failure(exc: Exception) -> str | None:
    """The one line for a PySpark or Py4J exception (:func:`spark_failure`, else its first
    line), None for any other exception."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    if not isinstance(exc, (PySparkException, Py4JError)):
        return None
    return spark_failure(exc) or str(exc).strip().splitlines()[0]
