"""The Spark engine: the table listing, the log's reference sets and the deletes run as Spark
jobs, so neither the listing nor the reference sets have to fit in one process. It serves
``deltaguard orphans --engine spark`` and ``deltaguard audit --engine spark``.

* :mod:`.session`, :mod:`.store_spec`, :mod:`.hadoop_s3`: the session (from a preset), the
  table's store as executors open it, and the one S3 I/O stack (S3A's settings).
* :mod:`.table_lister`: the table listed by executors on the JVM side, by the Java class
  ``io.deltaguard.orphans.TableLister``, whose source root is the engine's own,
  ``logstore/src/spark-engine/java``; it ships in the plugin jar, which Spark's executors
  already have on their class path.
  :mod:`.listing` is the Python fallback (directories kept as an RDD), :mod:`.key_ranges` cuts
  a large S3 directory into key ranges, :mod:`.inventory` reads an S3 Inventory instead.
* :mod:`.log_refs`: the reference sets of the latest snapshot, read by Spark (checkpoint
  parquet and sidecars, the JSON commits) and parsed by the local engine's action parser.
* :mod:`.classify_sql`: the local engine's classification rule as Spark columns.
* :mod:`.orphans_scan`: the orphans scan (anti-join, classification, the report table).
* :mod:`.orphans_cleanup`: the re-read of the log and the deletes in executors.
* :mod:`.orphans_engine`: the orphans engine (:mod:`deltaguard.tools.orphans.engine`) over
  the two above, run by the one orchestrator :mod:`deltaguard.tools.orphans.run`.
* :mod:`.audit_files`: the audit's file check.

The spark-submit entry point is :mod:`deltaguard.tools.spark_job`. The rules (hidden names,
retention, classes, what the re-read spares, containment, the manifest) are the local
engine's, imported, never restated here.
"""
