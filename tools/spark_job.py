"""The Spark engine as a ``spark-submit`` application, an entry point like :mod:`.cli`: the
``deltaguard orphans`` command line with ``--engine spark``, in the session spark-submit
started (its preset and cluster settings come from ``--properties-file``/``--conf``)::

    spark-submit --properties-file spark_conf/presets/s3-conditional.properties \\
      "$(python -c 'import deltaguard.tools.spark_job as j; print(j.__file__)')" \\
      s3a://lake/events --json
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Runs ``deltaguard orphans ARGS --engine spark`` and exits with its code."""
    from deltaguard.tools.cli import main as cli

    cli([*["orphans"], *(sys.argv[1:] if argv is None else argv), "--engine", "spark"])


if __name__ == "__main__":
    main()
