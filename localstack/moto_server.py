"""A moto server (``moto[server]``, from the project venv) on 127.0.0.1.

moto answers single conditional requests correctly but its check-and-store is not atomic under
races, so tests use it for protocol behaviour only, never to prove mutual exclusion.

With ``check_store_delay_s`` the server sleeps between its If-None-Match check and the store
(``S3Backend.put_object`` is wrapped), which widens that race: a ready-made "store that claims
conditional writes but is not atomic", for ``deltaguard probe`` to catch.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.process import ServerProcess, free_port, http_ok


class MotoServer:
    """``moto_server`` on a free loopback port; a context manager stopped by PID."""

    def __init__(self, workdir: Path | None = None, check_store_delay_s: float = 0.0) -> None:
        self.check_store_delay_s = check_store_delay_s
        self.port = free_port()
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="deltaguard-moto-"))
        self.endpoint = Endpoint(url=f"http://127.0.0.1:{self.port}")
        self.server: ServerProcess | None = None

    def start(self, timeout_s: float = 30.0) -> MotoServer:
        self.server = ServerProcess(
            "moto",
            [
                sys.executable,
                "-m",
                "deltaguard.localstack.moto_server",
                "--port",
                str(self.port),
                "--check-store-delay",
                str(self.check_store_delay_s),
            ],
            self.workdir / "moto.log",
        ).start(lambda: http_ok(f"{self.endpoint.url}/moto-api/"), timeout_s=timeout_s)
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def __enter__(self) -> MotoServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    import argparse
    import functools
    import time

    import moto.server
    from moto.s3.models import S3Backend

    parser = argparse.ArgumentParser(prog="python -m deltaguard.localstack.moto_server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--check-store-delay", type=float, default=0.0)
    args = parser.parse_args(argv)
    if args.check_store_delay > 0:
        original = S3Backend.put_object

        @functools.wraps(original)
        def delayed_put_object(self: S3Backend, *a: Any, **kw: Any) -> Any:
            time.sleep(args.check_store_delay)  # between the If-None-Match check and the store
            return original(self, *a, **kw)

        S3Backend.put_object = delayed_put_object  # type: ignore[method-assign]
    moto.server.main(["-H", "127.0.0.1", "-p", str(args.port)])


if __name__ == "__main__":
    main()
