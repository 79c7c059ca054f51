"""``steward cluster start|status|stop``: a whole Steward cluster, here or across hosts.

A thin layer over :class:`steward.cluster.local.LocalCluster`. ``start`` exits 1 (after printing
the failing process and its log) when the cluster does not come up; ``status`` exits 1 when a
process is down; user mistakes are ``StewardError``s, one line and exit code 2.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from steward.cli.cluster_node import node
from steward.cli.options import json_option
from steward.cluster.hosts import plan_topology
from steward.cluster.local import (
    READY_TIMEOUT,
    STOP_GRACE,
    TLS_DIR,
    ClusterStatus,
    LocalCluster,
    StartOptions,
)
from steward.cluster.settings import UserSettings
from steward.cluster.workdir import ClusterState, Role, StateDir
from steward.config import Configuration, parse_overrides
from steward.errors import LocalClusterStartError
from steward.tls.certificates import TlsFiles

_workdir_option = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(),
    help="Folder whose .steward/ holds the cluster's state (default: the current one).",
)


@click.group()
def cluster() -> None:
    """Run a whole Steward cluster in the background: here, or across hosts over SSH.

    ZooKeeper (managed, unless high-availability.zookeeper.quorum is configured), JobManagers
    and TaskManagers; state, logs and data under .steward/. Masters and workers files naming
    other hosts start those processes there over SSH (docs/operations.md).
    """


cluster.add_command(node)


@cluster.command()
@_workdir_option
@click.option(
    "--jobmanagers",
    type=click.IntRange(1, 9),
    default=2,
    show_default=True,
    help="How many JobManagers, unless a masters file lists them.",
)
@click.option(
    "--taskmanagers",
    type=click.IntRange(1, 64),
    default=2,
    show_default=True,
    help="How many TaskManagers, unless a workers file lists them.",
)
@click.option("--slots", type=click.IntRange(1, 1024), help="Slots per TaskManager [default: 2].")
@click.option(
    "--masters",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Hosts file of the JobManagers (default: .steward/masters if present).",
)
@click.option(
    "--workers",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Hosts file of the TaskManagers (default: .steward/workers if present).",
)
@click.option(
    "-D", "defines", multiple=True, metavar="KEY=VALUE", help="A setting for the cluster."
)
@click.option(
    "--timeout",
    type=float,
    default=READY_TIMEOUT,
    show_default=True,
    help="Seconds to wait for a leader and every TaskManager.",
)
@click.option(
    "--tls",
    is_flag=True,
    help="Serve HTTPS: make a private CA and a certificate in .steward/tls/ (kept across"
    " starts); commands run in this folder verify with it.",
)
@json_option
@click.pass_context
def start(
    ctx: click.Context,
    *,
    workdir: Path,
    jobmanagers: int,
    taskmanagers: int,
    slots: int | None,
    masters: Path | None,
    workers: Path | None,
    defines: tuple[str, ...],
    timeout: float,
    tls: bool,
    as_json: bool,
) -> None:
    """Start the cluster; return once a leader is elected and every TaskManager registered."""
    root = ctx.find_root()
    own = parse_overrides(defines)
    config: Configuration = ctx.obj
    config.with_overrides(own)  # a bad -D is a one-line error before anything starts
    user = UserSettings.collect(
        root.params.get("config_file"),
        {**parse_overrides(root.params.get("overrides") or ()), **own},
    )
    state_dir = StateDir.of(workdir)
    topology = plan_topology(
        masters or state_dir.masters,
        workers or state_dir.workers,
        jobmanagers=jobmanagers,
        taskmanagers=taskmanagers,
    )
    local = LocalCluster(workdir)
    console = Console(stderr=True, quiet=as_json)
    try:
        with console.status("starting the cluster") as spinner:
            state = local.start(
                StartOptions(topology, user, slots=slots, timeout=timeout, tls=tls),
                progress=spinner.update,
            )
    except LocalClusterStartError as exc:
        click.echo(f"error: {exc}", err=True)
        click.echo("stopped every process this start had started", err=True)
        ctx.exit(1)
    if as_json:
        click.echo(json.dumps(status_document(local.status()), indent=2))
    else:
        _print_started(local.state_dir, state, local.status())


def _print_started(state_dir: StateDir, state: ClusterState, status: ClusterStatus) -> None:
    click.echo(f"cluster {state.cluster_id} started in {state_dir.root}")
    zookeeper = "managed" if state.managed_zookeeper else "configured"
    click.echo(f"  zookeeper     {state.quorum} ({zookeeper})")
    for process in status.processes:
        if process.role is Role.ZOOKEEPER:
            continue
        lead = "  (leader)" if process.leader else ""
        where = f"  {process.address}" if process.address else ""
        host = f" on {process.host}" if process.host else ""
        click.echo(
            f"  {process.role.value:<12}  {process.id}{host}  pid {process.pid}{where}{lead}"
        )
    if any(address.startswith("https://") for address in state.jobmanager_addresses):
        ca = TlsFiles(state_dir.root / TLS_DIR).ca
        click.echo(f"  tls           verify with {ca}" if ca.is_file() else "  tls           on")
    click.echo("submit with: steward submit PIPELINE   (from this folder)")


@cluster.command()
@_workdir_option
@json_option
def status(workdir: Path, as_json: bool) -> None:
    """Show every process of the cluster and which JobManager leads. Exit 1 if any is down."""
    report = LocalCluster(workdir).status()
    if as_json:
        click.echo(json.dumps(status_document(report), indent=2))
    elif report.state is None:
        click.echo(f"no local cluster was started in {report.state_dir.root}")
    else:
        _print_status(report)
    if not report.healthy:
        click.get_current_context().exit(1)


def status_document(report: ClusterStatus) -> dict[str, Any]:
    """``steward cluster status --json``."""
    state = report.state
    return {
        "workdir": str(report.state_dir.root.parent),
        "started": state is not None,
        "cluster_id": state.cluster_id if state else None,
        "quorum": state.quorum if state else None,
        "managed_zookeeper": state.managed_zookeeper if state else None,
        "healthy": report.healthy,
        "leader": report.leader,
        "processes": [{**asdict(p), "role": p.role.value} for p in report.processes],
    }


def _print_status(report: ClusterStatus) -> None:
    assert report.state is not None
    table = Table("role", "id", "host", "pid", "alive", "address", "")
    for p in report.processes:
        note = "leader" if p.leader else (p.mode or "")
        alive = "[green]yes[/]" if p.alive else "[red]no[/]"
        if p.unreachable:
            alive, note = "[yellow]?[/]", "host unreachable"
        host = p.host or "this machine"
        table.add_row(p.role.value, p.id, host, str(p.pid or "-"), alive, p.address or "-", note)
    Console().print(table)
    down = sum(not p.alive for p in report.processes)
    health = "all processes alive" if not down else f"{down} process(es) down"
    leader = f"leader {report.leader}" if report.leader else "no leader"
    click.echo(f"cluster {report.state.cluster_id}: {health}, {leader}")


@cluster.command()
@_workdir_option
@click.option("--timeout", type=float, default=STOP_GRACE, show_default=True, help="SIGKILL after.")
@click.option("--purge", is_flag=True, help="Also delete .steward (jobs, results, logs).")
@json_option
def stop(workdir: Path, timeout: float, purge: bool, as_json: bool) -> None:
    """Stop exactly the processes start started; keep the data unless --purge."""
    local = LocalCluster(workdir)
    stopped = local.stop(timeout=timeout, purge=purge)
    if as_json:
        document = {"stopped": [entry.id for entry in stopped], "purged": purge}
        click.echo(json.dumps(document, indent=2))
    elif stopped:
        click.echo(f"stopped {', '.join(entry.id for entry in stopped)}")
    else:
        click.echo(f"nothing running in {local.state_dir.root}")
    if purge and not as_json:
        click.echo(f"deleted {local.state_dir.root}")
