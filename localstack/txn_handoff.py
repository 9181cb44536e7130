"""One Spark driver of two that take turns committing idempotent writes (``txnAppId`` /
``txnVersion``) of the same application id to one S3 table: does each driver see the other's
``txnVersion``, and is every ``N.crc`` a driver reads exact about it?

``python -m deltaguard.localstack.txn_handoff TABLE ENDPOINT`` (run with a line's interpreter)
starts a driver (the test bed's session, ``s3-conditional`` preset,
``spark.databricks.delta.checksum.mismatch.fatal=true``) and answers one JSON line (prefixed
:data:`~deltaguard.localstack.multi_driver.RESULT_PREFIX`) per command on stdin:

- ``create``: creates the table (one blind write);
- ``txn APP VERSION``: appends :data:`ROWS` rows tagged ``APP/VERSION`` with ``txnAppId=APP``,
  ``txnVersion=VERSION`` (Delta skips the write if the table records ``VERSION`` or later for
  ``APP``);
- ``blind``: one plain append (deltaguard's store derives its ``N.crc`` itself, carrying the
  ``setTransactions`` of ``(N-1).crc``: ``CommitChecksums.java``);
- ``rows``: the table's rows per tag, as this driver reads them;
- ``quit`` (or the end of stdin).

Each answer gives the table's version before and after the command as the log says (deltaguard's
own listing through boto3: what landed, not what the driver believes), the ``txn`` actions of the
versions the command added, and for the newest version three views of its ``setTransactions``:
the log replayed without Spark (:func:`~deltaguard.tools.deltalog.snapshot.load_snapshot`, the
truth), Delta's computed state in this driver (``Snapshot.setTransactions``: the state
reconstruction), and the stored ``N.crc`` (``None`` if the file or the field is absent). With
the fatal setting, Delta's own check of that checksum against its computed state
(``validateChecksum``) raises on any mismatch; the answer says whether it ran.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.multi_driver import RESULT_PREFIX
from deltaguard.logstore.s3_location import S3Location
from deltaguard.tools.deltalog.listing import list_log
from deltaguard.tools.deltalog.snapshot import load_snapshot
from deltaguard.tools.storage import open_table

FATAL = "spark.databricks.delta.checksum.mismatch.fatal"
ROWS = 3


def _txns_of(actions: list[dict[str, Any]]) -> dict[str, int]:
    return {a["txn"]["appId"]: int(a["txn"]["version"]) for a in actions if "txn" in a}


class Driver:
    """The driver's session and the table, with the checks of the module docstring."""

    def __init__(self, table: str, endpoint_url: str, local_dir: Path) -> None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from deltaguard.localstack.spark_driver import build_test_session, small_tables_conf
        from deltaguard.logstore.preset_name import PresetName

        endpoint = Endpoint(url=endpoint_url)
        self.spark = build_test_session(
            endpoint.s3_storage(),
            PresetName.S3_CONDITIONAL,
            extra_conf={**small_tables_conf(), FATAL: "true"},
            local_dir=local_dir,
        )
        self.table = table
        self.s3 = endpoint.s3_client()
        self.store = open_table(table, client=self.s3)

    def _version(self) -> int:
        return max(list_log(self.store).commits, default=-1)

    def _actions(self, version: int) -> list[dict[str, Any]]:
        loc = S3Location.parse(self.table)
        key = f"{loc.key.rstrip('/')}/_delta_log/{version:020d}.json"
        body = self.s3.get_object(Bucket=loc.bucket, Key=key)["Body"].read()
        return [json.loads(line) for line in body.decode().splitlines() if line.strip()]

    def _stored_checksum_txns(self, version: int) -> dict[str, int] | None:
        loc = S3Location.parse(self.table)
        key = f"{loc.key.rstrip('/')}/_delta_log/{version:020d}.crc"
        try:
            body = self.s3.get_object(Bucket=loc.bucket, Key=key)["Body"].read()
        except self.s3.exceptions.NoSuchKey:
            return None
        txns = json.loads(body).get("setTransactions")
        return None if txns is None else {t["appId"]: int(t["version"]) for t in txns}

    def _delta_view(self) -> dict[str, Any]:
        """Delta's computed ``setTransactions`` of the newest snapshot this driver loads, and
        Delta's check of the checksum it read against the computed state."""
        self.spark.read.format("delta").load(self.table).limit(0).collect()
        jvm = self.spark.sparkContext._jvm
        assert jvm is not None, "a classic (py4j) Spark session has a JVM gateway"
        log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
            self.spark._jsparkSession, self.table
        )
        snapshot = log.unsafeVolatileSnapshot()
        computed = snapshot.setTransactions()
        txns = {}
        for i in range(computed.size()):
            t = computed.apply(i)
            txns[str(t.appId())] = int(t.version())
        validated = bool(snapshot.checksumOpt().isDefined())
        if validated:
            # Raises (checksum.mismatch.fatal) if the checksum disagrees with the state.
            snapshot.validateChecksum(getattr(snapshot, "validateChecksum$default$1")())
        return {"version": int(snapshot.version()), "txns": txns, "validated": validated}

    def run(self, command: list[str]) -> dict[str, Any]:
        before = self._version()
        rows = self.spark.range(ROWS).selectExpr("id", "'blind' AS tag")
        writer = rows.write.format("delta")
        if command[0] == "create":
            writer.save(self.table)
        elif command[0] == "blind":
            writer.mode("append").save(self.table)
        elif command[0] == "txn":
            app, version = command[1], int(command[2])
            tagged = self.spark.range(ROWS).selectExpr("id", f"'{app}/{version}' AS tag")
            tagged.write.format("delta").mode("append").option("txnAppId", app).option(
                "txnVersion", version
            ).save(self.table)
        else:
            raise ValueError(f"unknown command {command!r}")
        after = self._version()
        added = {v: _txns_of(self._actions(v)) for v in range(before + 1, after + 1)}
        truth = {app: t.version for app, t in load_snapshot(self.store, after).txns.items()}
        return {
            "command": command,
            "before": before,
            "after": after,
            "added_txns": {str(v): t for v, t in added.items()},
            "log_txns": truth,
            "stored_checksum_txns": self._stored_checksum_txns(after),
            "delta": self._delta_view(),
        }

    def rows_by_tag(self) -> dict[str, int]:
        data = self.spark.read.format("delta").load(self.table).groupBy("tag").count().collect()
        return {str(r["tag"]): int(r["count"]) for r in data}


def main(argv: list[str]) -> int:
    table, endpoint_url = argv
    with tempfile.TemporaryDirectory(prefix="deltaguard-txn-") as tmp:
        driver = Driver(table, endpoint_url, Path(tmp))
        try:
            sys.stdout.write(RESULT_PREFIX + json.dumps({"ready": driver.spark.version}) + "\n")
            sys.stdout.flush()
            for line in sys.stdin:
                command = line.split()
                if not command or command[0] == "quit":
                    break
                if command[0] == "rows":
                    answer: dict[str, Any] = {"rows": driver.rows_by_tag()}
                else:
                    answer = driver.run(command)
                sys.stdout.write(RESULT_PREFIX + json.dumps(answer) + "\n")
                sys.stdout.flush()
        finally:
            driver.spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
