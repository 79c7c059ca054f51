"""``steward zookeeper start|status|stop``: the managed ZooKeeper from the command line.

A thin layer over ``steward.zookeeper.managed.ManagedEnsemble``; errors are ``StewardError``s,
which ``steward.cli.main`` prints as one line.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from steward.cli.options import json_option
from steward.zookeeper.managed import DEFAULT_CLIENT_PORT, ManagedEnsemble, ServerStatus

logger = logging.getLogger(__name__)

DEFAULT_DATA_DIR = Path(".steward/zookeeper")

_data_dir_option = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DATA_DIR,
    show_default=True,
    help="Where the servers keep their config, data, logs and ensemble.json.",
)


@click.group()
def zookeeper() -> None:
    """Run a managed ZooKeeper on 127.0.0.1: standalone, or an ensemble of 3."""


@zookeeper.command()
@click.option(
    "--servers",
    type=click.IntRange(1, 9),
    default=1,
    show_default=True,
    help="1 for a standalone server, 3 for an ensemble.",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=DEFAULT_CLIENT_PORT,
    show_default=True,
    help="Client port of server 1; server n uses port+n-1, quorum port+100.., election port+200..",
)
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Seconds to wait.")
@_data_dir_option
def start(servers: int, port: int, timeout: float, data_dir: Path) -> None:
    """Start the servers in the background and wait until they serve.

    Prints the connect string, then one line per server. If this data directory's ensemble
    already runs with the same shape, restarts any server of it that is down and reports it.
    """
    ensemble = ManagedEnsemble(data_dir)
    was_running = ensemble.is_running()
    statuses = ensemble.start(servers, port, timeout=timeout)
    if was_running:
        click.echo(f"already running in {ensemble.data_dir}", err=True)
    click.echo(ensemble.connect_string)
    for status in statuses:
        click.echo(_line(status))


@zookeeper.command()
@json_option
@_data_dir_option
def status(as_json: bool, data_dir: Path) -> None:
    """Say which servers run, which serve, and who leads. Exit code 1 unless all serve."""
    ensemble = ManagedEnsemble(data_dir)
    statuses = ensemble.status()
    if as_json:
        click.echo(json.dumps(_document(ensemble, statuses), indent=2))
    elif not statuses:
        click.echo(f"no managed ZooKeeper was started in {ensemble.data_dir}")
    else:
        _print_table(ensemble, statuses)
    if not statuses or not all(s.serving for s in statuses):
        click.get_current_context().exit(1)


@zookeeper.command()
@click.option("--timeout", type=float, default=10.0, show_default=True, help="SIGKILL after.")
@_data_dir_option
def stop(timeout: float, data_dir: Path) -> None:
    """Stop the servers this data directory started (and nothing else)."""
    ensemble = ManagedEnsemble(data_dir)
    was_running = ensemble.is_running()
    ensemble.stop(timeout=timeout)
    click.echo("stopped" if was_running else f"nothing running in {ensemble.data_dir}")


def _line(status: ServerStatus) -> str:
    mode = status.mode or ("frozen" if status.frozen else "not serving")
    pid = status.pid if status.running else "-"
    return f"server {status.server_id}  port {status.client_port}  pid {pid}  {mode}"


def _leader(statuses: list[ServerStatus]) -> int | None:
    leaders = [s.server_id for s in statuses if s.mode in ("leader", "standalone")]
    return leaders[0] if len(leaders) == 1 else None


def _document(ensemble: ManagedEnsemble, statuses: list[ServerStatus]) -> dict[str, Any]:
    return {
        "data_dir": str(ensemble.data_dir),
        "started": bool(statuses),
        "connect_string": ensemble.connect_string if statuses else None,
        "serving": bool(statuses) and all(s.serving for s in statuses),
        "leader": _leader(statuses),
        "servers": [asdict(s) for s in statuses],
    }


def _print_table(ensemble: ManagedEnsemble, statuses: list[ServerStatus]) -> None:
    table = Table("server", "client port", "pid", "running", "mode")
    for s in statuses:
        mode = s.mode or ("frozen" if s.frozen else "-")
        table.add_row(str(s.server_id), str(s.client_port), str(s.pid or "-"), str(s.running), mode)
    Console().print(table)
    serving = sum(s.serving for s in statuses)
    leader = _leader(statuses)
    if len(statuses) == 1:
        who = "standalone"
    else:
        who = f"server {leader} leads" if leader is not None else "no leader"
    click.echo(f"{serving}/{len(statuses)} serving, {who}; connect: {ensemble.connect_string}")
