"""Example job: raw JSON events in, one Delta table per entity out, written with write_fanout.

Input: a directory (any path Spark reads: local, ``s3a://``, ...) of JSON-lines files, one
file per batch of raw events. Each line is one record with an ``entity`` field (the table it
belongs to: letters, digits, ``_`` and ``-``) and the entity's attributes::

    {"entity": "customer", "id": 7, "name": "Ada"}
    {"entity": "order", "id": 91, "customer_id": 7, "amount": 12.5}

Output: ``<output-root>/<entity>``, a Delta table per entity. Each (file, entity) pair is one
append of the attributes that entity has in that file: an entity that gains an attribute in a
later file evolves its table's schema; an entity seen for the first time creates its table.
Every write runs through :func:`deltaguard.tools.fanout.writer.write_fanout`, keyed by the input
file's name (``txnAppId = <job-id>/<file name>``, ``txnVersion = --run-version``): a re-run of
the same input with the same ``--job-id`` and ``--run-version`` after a crash skips the
appends that already landed and writes the rest, so no row is written twice.

Run it with a deltaguard preset (see docs/guides/fanout.md)::

    deltaguard conf render s3-conditional --table-root s3://lake/entities > lake.properties
    spark-submit --properties-file lake.properties \\
        "$(python -c 'import deltaguard.tools.fanout.example_job as j; print(j.__file__)')" \\
        --input s3a://lake/raw/2026-11-22/ --output-root s3a://lake/entities --run-version 20261122

It ships inside the package so that an installed wheel can run it as is. It prints one JSON
line, ``DELTAGUARD-FANOUT {...}`` (per table: rows, version, attempts, error, and each batch).
Exit code 0 when every write succeeded or was skipped, 1 if any write failed, 2 for bad input
(a message naming the path or record, no traceback).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from deltaguard.tools.fanout.writer import FanoutError, FanoutResult, WriteRequest, write_fanout

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

RESULT_PREFIX = "DELTAGUARD-FANOUT "
_ENTITY = re.compile(r"^[A-Za-z0-9_-]+$")
_SOURCE = "_source_file"


class BadInputError(ValueError):
    """The raw input cannot be read or split into entities; the message says where."""


def read_raw(spark: SparkSession, input_path: str) -> DataFrame:
    """The raw records with the name of the file each came from. FAILFAST: a malformed line
    fails the job instead of becoming a null record."""
    from pyspark.sql import functions as F

    raw = spark.read.option("mode", "FAILFAST").json(input_path)
    if "entity" not in raw.columns:
        raise BadInputError(f"{input_path}: the records have no 'entity' field")
    return raw.withColumn(_SOURCE, F.element_at(F.split(F.input_file_name(), "/"), -1))


def entity_writes(raw: DataFrame, output_root: str) -> Iterator[WriteRequest]:
    """One WriteRequest per (input file, entity), in file order: the entity's records of that
    file with the attributes it has there, to ``<output_root>/<entity>``, keyed by file name."""
    from pyspark.sql import functions as F

    attributes = [c for c in raw.columns if c not in ("entity", _SOURCE)]
    present = raw.groupBy(_SOURCE, "entity").agg(
        *(F.count(F.col(f"`{c}`")).alias(c) for c in attributes)
    )
    for row in present.orderBy(_SOURCE, "entity").collect():
        entity, source = row["entity"], row[_SOURCE]
        if entity is None or not _ENTITY.match(str(entity)):
            raise BadInputError(f"{source}: entity {entity!r} is not a valid table name")
        columns = [c for c in attributes if row[c] > 0]
        df = raw.where((F.col(_SOURCE) == source) & (F.col("entity") == entity)).select(
            *(F.col(f"`{c}`") for c in columns)
        )
        yield WriteRequest(f"{output_root.rstrip('/')}/{entity}", df, key=source)


def run(
    spark: SparkSession,
    input_path: str,
    output_root: str,
    *,
    job_id: str,
    run_version: int,
    workers: int,
) -> FanoutResult:
    """Splits the raw input into entity DataFrames and appends them with write_fanout. Raises
    BadInputError for unreadable input, FanoutError if any write failed."""
    raw = read_raw(spark, input_path).persist()
    try:
        return write_fanout(
            spark,
            entity_writes(raw, output_root),
            job_id=job_id,
            run_version=run_version,
            max_workers=workers,
        )
    finally:
        raw.unpersist()


def _input_problem(exc: BaseException) -> str | None:
    """A readable description if ``exc`` is Spark failing on the input (missing, malformed)."""
    markers = ("PATH_NOT_FOUND", "MALFORMED_RECORD", "UNABLE_TO_INFER")
    for line in str(exc).splitlines():
        if any(marker in line for marker in markers):
            return line.strip()[:500]
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fanout_job.py", description=__doc__.split("\n")[0])
    parser.add_argument("--input", required=True, help="directory of JSON-lines raw files")
    parser.add_argument("--output-root", required=True, help="tables go to <root>/<entity>")
    parser.add_argument("--job-id", default="deltaguard-fanout-example")
    parser.add_argument(
        "--run-version", type=int, required=True, help="txnVersion: same on a re-run, higher later"
    )
    parser.add_argument("--workers", type=int, default=4, help="concurrent writes")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName(f"fanout {args.job_id} {args.run_version}").getOrCreate()
    try:
        result = run(
            spark,
            args.input,
            args.output_root,
            job_id=args.job_id,
            run_version=args.run_version,
            workers=args.workers,
        )
        code = 0
    except FanoutError as exc:
        result, code = exc.result, 1
        problem = _input_problem(exc.result.input_error) if exc.result.input_error else None
        if problem or isinstance(exc.result.input_error, BadInputError):
            print(f"fanout_job: bad input: {problem or exc.result.input_error}", file=sys.stderr)
            code = 2
    except BadInputError as exc:
        print(f"fanout_job: bad input: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        problem = _input_problem(exc)
        if problem is None:
            raise
        print(f"fanout_job: bad input {args.input}: {problem}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    sys.stdout.write(RESULT_PREFIX + json.dumps(result.summary()) + "\n")
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
