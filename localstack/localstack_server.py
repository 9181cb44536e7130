"""LocalStack in host mode (no Docker), S3 and DynamoDB, on 127.0.0.1.

Installed by ``localstack/install.sh`` into the deltaguard cache. Every environment variable
below is load-bearing on these machines (see docs/reference/testbed.md):

- ``OVERRIDE_IN_DOCKER=0``: the machine has ``/.dockerenv``; otherwise LocalStack writes to
  /var/lib/localstack, /etc/localstack, ...
- ``DNS_ADDRESS=0``: otherwise it starts a DNS server and rewrites /etc/resolv.conf, which a
  SIGKILL would leave broken for pip and Maven.
- ``GATEWAY_SERVER=hypercorn`` + ``GATEWAY_LISTEN=127.0.0.1:<port>``: really bind loopback.
- ``FILESYSTEM_ROOT``: a private directory per server, whose package folder links to the
  pre-filled cache, so DynamoDB Local never downloads anything.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import urllib.request
from pathlib import Path

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.process import ServerProcess, free_port
from deltaguard.spark_conf.jvm_deps import cache_dir

# LocalStack's S3 provider keeps object bodies here whatever FILESYSTEM_ROOT says.
_S3_STORAGE = "/tmp/localstack-s3-storage"


class TestBedNotInstalledError(RuntimeError):
    """LocalStack or DynamoDB Local is not installed in the cache."""


def _installation() -> tuple[Path, Path]:
    venv_python = cache_dir() / "localstack-venv" / "bin" / "python"
    lib = cache_dir() / "localstack-lib"
    if (
        not venv_python.is_file()
        or not (lib / "dynamodb-local" / "2" / "DynamoDBLocal.jar").is_file()
    ):
        raise TestBedNotInstalledError(
            f"LocalStack is not installed in {cache_dir()}: run `make localstack` "
            "(bash localstack/install.sh)."
        )
    return venv_python, lib


class LocalStackServer:
    """A LocalStack process serving S3 and DynamoDB on a free loopback port.

    Use as a context manager; :meth:`stop` terminates it by PID and removes its state.
    """

    def __init__(self, workdir: Path | None = None, services: str = "s3,dynamodb") -> None:
        self.python, self.lib = _installation()
        self.port = free_port()
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="deltaguard-localstack-"))
        self.services = services
        self.endpoint = Endpoint(url=f"http://127.0.0.1:{self.port}")
        self.server: ServerProcess | None = None

    def _env(self) -> dict[str, str]:
        root = self.workdir / "fs"
        var_lib = root / "var" / "lib" / "localstack"
        var_lib.mkdir(parents=True, exist_ok=True)
        link = var_lib / "lib"
        if not link.exists():
            link.symlink_to(self.lib, target_is_directory=True)
        tmp = self.workdir / "tmp"
        tmp.mkdir(exist_ok=True)
        # PYTHONPATH/PYTHONHOME would put another interpreter's packages (or this repository's
        # own `localstack/` folder) in front of LocalStack's venv.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("LOCALSTACK_", "AWS_")) and k not in ("PYTHONPATH", "PYTHONHOME")
        }
        env.update(
            {
                "OVERRIDE_IN_DOCKER": "0",
                "DNS_ADDRESS": "0",
                "GATEWAY_SERVER": "hypercorn",
                "GATEWAY_LISTEN": f"127.0.0.1:{self.port}",
                "FILESYSTEM_ROOT": str(root),
                "SKIP_SSL_CERT_DOWNLOAD": "1",
                "DISABLE_EVENTS": "1",
                "SERVICES": self.services,
                "EAGER_SERVICE_LOADING": "0",
                "TMPDIR": str(tmp),
                "JAVA_TOOL_OPTIONS": f"-Djava.io.tmpdir={tmp}",
                "LOCALSTACK_TELEMETRY_DISABLED": "1",
                "DISABLE_CORS_CHECKS": "1",
            }
        )
        return env

    def _ready(self) -> bool:
        url = f"{self.endpoint.url}/_localstack/health"
        with urllib.request.urlopen(url, timeout=1.0) as response:
            services = json.load(response).get("services", {})
        wanted = self.services.split(",")
        return all(services.get(s) in ("available", "running") for s in wanted)

    def start(self, timeout_s: float = 90.0) -> LocalStackServer:
        self.server = ServerProcess(
            "LocalStack",
            [str(self.python), "-m", "localstack.runtime.main"],
            self.workdir / "localstack.log",
            env=self._env(),
            cwd=self.workdir,
        ).start(self._ready, timeout_s=timeout_s)
        return self

    def _bucket_names(self) -> list[str]:
        try:
            import boto3

            s3 = boto3.client("s3", **self.endpoint.boto3_kwargs())
            return [b["Name"] for b in s3.list_buckets().get("Buckets", [])]
        except Exception:
            return []

    def stop(self) -> None:
        """Stops the server by PID and removes everything it wrote, including the per-bucket
        folders LocalStack's S3 keeps in the fixed /tmp/localstack-s3-storage."""
        buckets = self._bucket_names() if self.server is not None else []
        if self.server is not None:
            self.server.stop()
            self.server = None
        for bucket in buckets:
            shutil.rmtree(Path(_S3_STORAGE) / bucket, ignore_errors=True)
        shutil.rmtree(self.workdir / "fs", ignore_errors=True)

    def __enter__(self) -> LocalStackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
