"""``steward doctor``: check a cluster's HA state against every invariant it stands on.

By default it asks a JobManager (``GET /v1/doctor``; any JobManager answers, a standby too,
with the same credentials as every command). ``--offline`` reads ZooKeeper and the blob
storage itself with this machine's settings (the local cluster's ``.steward/steward.toml``,
or ``-c``/``-D``: the quorum, ``high-availability.zookeeper.digest-file`` and
``high-availability.storage-dir``), for when no JobManager runs.

Exit codes: 0 when every invariant holds, 1 when there is a finding, 2 when the doctor could
not read the state (no JobManager answered, ZooKeeper unreachable, a bad setting).
"""

from __future__ import annotations

import click
from rich.console import Console
from rich.markup import escape

from steward.config import Configuration
from steward.doctor import examine
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.wire.doctor import DoctorReport, Severity

EXIT_FINDINGS = 1


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON document.")
@click.option(
    "--offline",
    is_flag=True,
    help="Read ZooKeeper and the blob storage directly instead of asking a JobManager.",
)
@click.option(
    "--verify-blobs",
    is_flag=True,
    help="Also read every job graph and checkpoint blob back and check its checksum (one read"
    " per blob; without it, blobs are looked for in the storage's listing).",
)
@click.pass_obj
def doctor(config: Configuration, as_json: bool, offline: bool, verify_blobs: bool) -> int:
    """Check the cluster's HA state: one line per finding, with what to do.

    Checks that a job graph pointer exists iff the job must be recovered and its blob reads
    back, that every lease belongs to a live TaskManager and every running attempt holds its
    lease, that cleanups finish, that no blob is orphaned, that epochs are consistent, and the
    ZooKeeper servers (versions with known data-loss bugs, session timeout bounds). Exit code
    0: every invariant holds; 1: findings; 2: the state could not be read.
    """
    report = _offline(config, verify_blobs) if offline else _ask(config, verify_blobs)
    if as_json:
        click.echo(report.model_dump_json(indent=2))
    else:
        _print(report)
    return EXIT_FINDINGS if report.findings else 0


def _ask(config: Configuration, verify_blobs: bool) -> DoctorReport:
    from steward.cli.jobs import open_client

    with open_client(config) as client:
        return client.doctor(verify_blobs=verify_blobs)


def _offline(config: Configuration, verify_blobs: bool) -> DoctorReport:
    settings = config.settings
    with Session.from_config(config, name="doctor").start() as session:
        return examine(
            session,
            BlobStore(settings.storage.storage_dir),
            settings.zookeeper.cluster_id,
            verify_blobs=verify_blobs,
        )


def _print(report: DoctorReport) -> None:
    console = Console(highlight=False, soft_wrap=True)
    for finding in report.findings:
        style = "bold red" if finding.severity is Severity.ERROR else "yellow"
        console.print(
            f"[{style}]{finding.severity.value:<7}[/{style}] [bold]{finding.check}[/bold]"
            f" {escape(finding.subject)}: {escape(finding.message)}."
            f" [dim]Do: {escape(finding.action)}.[/dim]"
        )
    for server in report.servers:
        state = (
            f"ZooKeeper {server.version or '?'} ({server.mode or 'mode unknown'})"
            if server.answered
            else "no answer"
        )
        console.print(f"[dim]server {escape(server.address)}: {escape(state)}[/dim]")
    where = f" (asked {report.served_by})" if report.served_by else " (offline)"
    if report.findings:
        errors = sum(f.severity is Severity.ERROR for f in report.findings)
        console.print(
            f"{len(report.findings)} finding(s), {errors} error(s), {report.jobs} job(s)"
            f" checked at epoch {report.epoch}{where}"
        )
    else:
        console.print(
            f"[green]every invariant holds[/green]: {report.jobs} job(s) checked at epoch"
            f" {report.epoch}{where}"
        )
