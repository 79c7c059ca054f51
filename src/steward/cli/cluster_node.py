"""``steward cluster node receive|start|status|stop``: a host's share of a cluster over SSH.

Run on another host by ``steward cluster start|status|stop`` through SSH
(:mod:`steward.cluster.remote`), not by people: hidden from ``--help``. Each prints one JSON
document; a user error is one ``error:`` line on stderr and exit code 2, as everywhere.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from steward.cluster.node import Node
from steward.cluster.workdir import Role
from steward.errors import LocalClusterError

_workdir = click.option(
    "--workdir", required=True, type=click.Path(file_okay=False, path_type=Path)
)
_host = click.option("--host", required=True, help="This host's name in the hosts files.")


@click.group(hidden=True)
def node() -> None:
    """This host's processes of a cluster started over SSH (run by `steward cluster`)."""


@node.command()
@_workdir
@_host
@click.option("--shared", help="A path written in the HA storage, to find here.")
def receive(workdir: Path, host: str, shared: str | None) -> None:
    """Write the files sent on stdin (a JSON object: path under .steward/ -> base64)."""
    try:
        files = json.loads(sys.stdin.buffer.read() or b"{}")
    except ValueError as exc:
        raise LocalClusterError(f"the files sent are not JSON: {exc}") from exc
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise LocalClusterError("the files sent must be a JSON object of base64 strings")
    visible = Node(workdir, host).receive(files, shared)
    click.echo(json.dumps({"shared": visible, "python": sys.version.split()[0]}))


@node.command()
@_workdir
@_host
@click.option(
    "--role", required=True, type=click.Choice([Role.JOBMANAGER.value, Role.TASKMANAGER.value])
)
@click.option("--number", required=True, type=click.IntRange(1, 999))
@click.option("--port", type=click.IntRange(1, 65535))
@click.option("--scheme", type=click.Choice(["http", "https"]), default="http")
def start(
    *, workdir: Path, host: str, role: str, number: int, port: int | None, scheme: str
) -> None:
    """Start one JobManager or TaskManager here, in the background."""
    entry = Node(workdir, host).start(Role(role), number, port=port, scheme=scheme)
    click.echo(entry.model_dump_json())


@node.command()
@_workdir
@_host
@click.option("--tail", is_flag=True, help="With the last lines of each log.")
def status(workdir: Path, host: str, tail: bool) -> None:
    """The processes started here, alive or not."""
    processes = Node(workdir, host).status(tail=tail)
    click.echo(json.dumps([process.model_dump() for process in processes]))


@node.command()
@_workdir
@_host
@click.option("--timeout", type=float, default=10.0)
def stop(workdir: Path, host: str, timeout: float) -> None:
    """Stop the processes started here (SIGTERM, SIGKILL after --timeout)."""
    click.echo(json.dumps(Node(workdir, host).stop(timeout=timeout)))
