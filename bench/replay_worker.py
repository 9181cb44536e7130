"""One measured load of a table, in its own process so peak RSS belongs to one reader:
``python -m bench.replay_worker deltaguard|delta-rs TABLE [ENDPOINT]``. Prints JSON: wall
seconds of loading the table and listing its live files (imports excluded), the number of
files, and the process's peak RSS in MiB. S3 credentials come from the environment."""

from __future__ import annotations

import json
import sys
import time

from bench.peak_rss import peak_rss_mib


def _deltaguard(table: str, endpoint: str | None) -> int:
    from deltaguard.tools.deltalog import load_snapshot
    from deltaguard.tools.storage import S3Options

    opts = S3Options(endpoint, "us-east-1", path_style=True) if endpoint else None
    return len(load_snapshot(table, s3=opts).live_locations())


def _delta_rs(table: str, endpoint: str | None) -> int:
    import os

    from deltalake import DeltaTable

    options = (
        {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": os.environ["AWS_ACCESS_KEY_ID"],
            "AWS_SECRET_ACCESS_KEY": os.environ["AWS_SECRET_ACCESS_KEY"],
            "AWS_ALLOW_HTTP": "true",
        }
        if endpoint
        else None
    )
    return len(DeltaTable(table, storage_options=options).file_uris())


def main(argv: list[str]) -> int:
    side, table = argv[0], argv[1]
    endpoint = argv[2] if len(argv) > 2 else None
    load = _deltaguard if side == "deltaguard" else _delta_rs
    if side == "deltaguard":
        import deltaguard.tools.deltalog  # noqa: F401  (imports are not part of the load)
    else:
        import deltalake  # noqa: F401
    started = time.perf_counter()
    files = load(table, endpoint)
    wall = time.perf_counter() - started
    rss_mib = peak_rss_mib()
    print(json.dumps({"wall_s": wall, "files": files, "peak_rss_mib": rss_mib}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
