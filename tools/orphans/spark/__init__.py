"""``deltaguard orphans --engine spark``: the same scan and cleanup as the local engine, run as
a Spark job so neither the listing nor the reference sets have to fit in one process.

* :mod:`.listing`: the table listed by executors, one directory level per round, directories
  kept as an RDD (the driver never holds the path list).
* :mod:`.log_refs`: the reference sets of the latest snapshot, read by Spark (checkpoint
  parquet and sidecars, the JSON commits) and parsed by the local engine's action parser.
* :mod:`.scan`: the anti-join and the classification (the local engine's
  :func:`~deltaguard.tools.orphans.classify.data_candidate`, in executors); the report table.
* :mod:`.cleanup`: the local engine's cleanup rules with deletes in executors and a manifest
  table.
* :mod:`.session`, :mod:`.run`, :mod:`.job`: the session (from a preset), the CLI, spark-submit.

The rules (hidden names, retention, classes, what the re-read spares, containment) are the
local engine's, imported, never restated here.
"""
