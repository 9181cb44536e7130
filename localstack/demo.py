"""``make demo``: concurrent Spark drivers appending to one Delta table on embedded S3.

Starts LocalStack (host mode) and the fault proxy, then runs the same multi-driver append job
twice on fresh tables: with Delta's default S3 LogStore and with deltaguard's conditional-write
LogStore, and ends with ``deltaguard audit`` of the table the last run wrote. The proxy holds one commit PUT until another driver has written the same version,
the race that loses commits in production when one PUT is slow. Prints, per LogStore, the data
commits and rows expected and found, and what was lost. Exit code 1 if deltaguard lost anything.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import boto3
from rich.console import Console
from rich.table import Table

from deltaguard.localstack.endpoints import Endpoint
from deltaguard.localstack.fault_proxy import FaultProxy
from deltaguard.localstack.localstack_server import LocalStackServer
from deltaguard.localstack.multi_driver import MultiDriverResult, driver_env, run_multi_driver
from deltaguard.localstack.race import hold_one_commit_put
from deltaguard.logstore.probe import print_report, run_probe
from deltaguard.spark_conf.presets import PresetName, PresetOptions, render, to_properties
from deltaguard.spark_conf.session import LOGSTORE_CLASSES
from deltaguard.tools.deltalog import load_snapshot
from deltaguard.tools.deltalog.audit import audit_table
from deltaguard.tools.deltalog.render import print_audit
from deltaguard.tools.orphans import CleanupOptions, execute, scan
from deltaguard.tools.orphans.run import print_report as print_orphans
from deltaguard.tools.storage import open_table

BUCKET = "deltaguard-demo"


def _store_name(choice: PresetName) -> str:
    store_class = LOGSTORE_CLASSES[choice] or "none"
    owner = "deltaguard" if store_class.startswith("io.deltaguard.") else "Delta's default"
    return f"{store_class.rsplit('.', 1)[-1]} ({owner})"


def render_results(results: list[MultiDriverResult], console: Console) -> None:
    table = Table(title="Concurrent Spark drivers appending to one Delta table on S3 (LocalStack)")
    for column in (
        "LogStore",
        "drivers",
        "commits expected",
        "found",
        "lost",
        "duplicated",
        "rows expected",
        "found",
        "lost",
        "wall s",
    ):
        table.add_column(column, justify="left" if column == "LogStore" else "right")
    for r in results:
        s = r.summary()
        lost_style = "bold red" if s["commits_lost"] else "green"
        table.add_row(
            _store_name(PresetName(r.logstore)),
            str(s["writers"]),
            str(s["data_commits_claimed_by_writers"]),
            str(s["data_commits_found"]),
            f"[{lost_style}]{s['commits_lost']}[/]",
            str(s["commits_duplicated"]),
            str(s["rows_expected"]),
            str(s["rows_found"]),
            f"[{lost_style}]{s['rows_lost']}[/]",
            str(s["wall_s"]),
        )
    console.print(table)


def orphans_step(endpoint: Endpoint, workdir: Path, console: Console) -> bool:
    """Runs a Spark job that fails half way on a fresh table, shows the files it left with
    :func:`deltaguard.tools.orphans.scan` and removes them with
    :func:`deltaguard.tools.orphans.execute`. True if the table is intact afterwards."""
    table = f"s3a://{BUCKET}/orphans_demo"
    log = workdir / "fail-half-way.log"
    console.print(f"[bold]a Spark append to {table} whose last task fails[/] ...")
    with log.open("w") as err:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "deltaguard.localstack.failed_job",
                "fail-half-way",
                table,
                "--endpoint",
                endpoint.url,
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=driver_env(),
            check=False,
        )
    if proc.returncode != 0:
        console.print(f"[bold red]the job did not fail as planned; log {log}[/]")
        return False
    store = open_table(table, client=endpoint.s3_client())
    console.print("With the table's retention (7 days) its files are too young to touch:")
    print_orphans(scan(store), console, max_files=0)
    console.print("Nothing else writes this table, so the demo may look at files of any age:")
    result = scan(store, retention_ms=0)
    print_orphans(result, console, max_files=10)
    done = execute(
        store,
        result,
        manifest_path=workdir / "orphans-manifest",
        options=CleanupOptions(unsafe_retention=True, given_retention=True),
    )
    snapshot = load_snapshot(store)
    intact = all(store.stat(p) is not None for p in snapshot.adds.paths())
    console.print(
        f"deleted {done.counts['deleted']} files in {done.manifest['requests']} DeleteObjects "
        f"request(s); manifest {workdir / 'orphans-manifest'}; table version "
        f"{snapshot.version}, every live file present: {intact}"
    )
    return intact and not done.counts["failed"] and bool(done.counts["deleted"])


def audit_written_table(
    results: list[MultiDriverResult], localstack: LocalStackServer, console: Console
) -> bool:
    """Step 5 (the last): ``deltaguard audit`` (the library call) of the table the last run wrote. Returns
    False if the audit finds errors or warnings."""
    table = results[-1].extra["table"]
    console.rule(f"5. deltaguard audit {table}")
    report = audit_table(open_table(table, client=localstack.endpoint.s3_client()))
    print_audit(report, console)
    return report.healthy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deltaguard.localstack.demo", description=__doc__
    )
    parser.add_argument("--drivers", type=int, default=4)
    parser.add_argument("--appends", type=int, default=10, help="appends per driver")
    parser.add_argument(
        "--only",
        choices=[PresetName.S3_SINGLE_DRIVER.value, PresetName.S3_CONDITIONAL.value],
        help="run one LogStore only",
    )
    args = parser.parse_args(argv)
    console = Console(width=max(Console().width, 150))
    workdir = Path(tempfile.mkdtemp(prefix="deltaguard-demo-"))
    choices = (
        [PresetName(args.only)]
        if args.only
        else [PresetName.S3_SINGLE_DRIVER, PresetName.S3_CONDITIONAL]
    )
    results = []
    with (
        LocalStackServer(workdir / "localstack") as localstack,
        FaultProxy(localstack.endpoint, workdir) as proxy,
    ):
        console.print(
            f"LocalStack (S3) on {localstack.endpoint.url}, "
            f"PID {localstack.server.pid if localstack.server else '?'}; "
            f"fault proxy on {proxy.endpoint.url}"
        )
        boto3.client("s3", **localstack.endpoint.boto3_kwargs()).create_bucket(Bucket=BUCKET)
        console.rule("1. probe: does this endpoint honour conditional writes, atomically?")
        report = run_probe(f"s3://{BUCKET}/", proxy.endpoint.s3_client, writers=8, rounds=10)
        print_report(report, console)
        if report.recommended_preset is not PresetName.S3_CONDITIONAL:
            console.print("[bold red]the probe does not recommend s3-conditional here: stopping[/]")
            return 1
        console.rule("2. the preset the drivers run with (spark-submit --properties-file)")
        preset = render(
            PresetName.S3_CONDITIONAL,
            PresetOptions(
                table_root=f"s3://{BUCKET}/",
                endpoint=proxy.endpoint.url,
                path_style=True,
                jars="none",
            ),
        )
        console.print(
            to_properties(preset, "jars come from the local cache (spark.driver.extraClassPath)"),
            markup=False,
            highlight=False,
        )
        console.rule("3. concurrent drivers, Delta's default store vs deltaguard's")
        for choice in choices:
            console.print(
                f"[bold]{args.drivers} drivers x {args.appends} appends with "
                f"{_store_name(choice)}[/] (one commit PUT held until another driver "
                "writes the same version) ..."
            )
            proxy.set_rules([hold_one_commit_put()])
            table = f"s3a://{BUCKET}/events_{choice.value.replace('-', '_')}"
            result = run_multi_driver(
                table,
                writer_endpoint_url=proxy.endpoint.url,
                reader_endpoint_url=localstack.endpoint.url,
                logstore=choice,
                writers=args.drivers,
                appends=args.appends,
                workdir=workdir,
            )
            result.extra["held_puts"] = proxy.fired()[0]
            result.extra["table"] = table
            results.append(result)
            s = result.summary()
            console.print(
                f"  {s['data_commits_found']}/{s['data_commits_claimed_by_writers']} "
                f"commits found, {s['commits_lost']} lost, rows {s['rows_found']}/"
                f"{s['rows_expected']}"
            )
        render_results(results, console)
        console.rule("4. orphans: a Spark job fails half way; find and remove what it left")
        if not orphans_step(localstack.endpoint, workdir, console):
            return 1
        audited = audit_written_table(results, localstack, console)
    ours = [r for r in results if r.logstore == PresetName.S3_CONDITIONAL.value]
    if any(r.lost_tags or r.duplicated_tags or r.expected_rows != r.found_rows for r in ours):
        console.print("[bold red]deltaguard lost or duplicated commits: this is a bug.[/]")
        return 1
    console.print(f"Logs and Spark scratch space: {workdir}")
    return 0 if audited else 1


if __name__ == "__main__":
    sys.exit(main())
