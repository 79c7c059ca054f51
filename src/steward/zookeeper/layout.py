"""Where a managed ZooKeeper server lives: its ports, its directory and its zoo.cfg.

Port scheme, from the base client port P, for server n (1-based) of an ensemble:

    client port   P + (n - 1)          e.g. 2181, 2182, 2183
    quorum port   P + 100 + (n - 1)    e.g. 2281, 2282, 2283   (followers to leader)
    election port P + 200 + (n - 1)    e.g. 2381, 2382, 2383   (leader election)

A standalone server uses only P. Everything binds 127.0.0.1 (or the one address ``host`` a test
gives, for servers in a network namespace of their own): the managed ZooKeeper is for one
machine (quick start, demo, tests), never a production quorum.
"""

from __future__ import annotations

import errno
import random
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from steward.errors import ManagedZooKeeperError, PortInUseError

LOOPBACK = "127.0.0.1"
QUORUM_PORT_OFFSET = 100
ELECTION_PORT_OFFSET = 200
MAX_SERVERS = 9
MAX_PORT = 65535

# Fast ticks so tests see failures quickly; the session bounds still allow the long
# timeouts a production-like configuration asks for.
SERVER_SETTINGS: dict[str, str] = {
    "tickTime": "500",
    "minSessionTimeout": "1000",
    "maxSessionTimeout": "120000",
    "initLimit": "20",
    # A follower that has not heard from the leader for syncLimit ticks (3 s) drops it and
    # the ensemble elects another: with the election, well inside a TaskManager's default
    # fence-after (6 s), so a frozen ZooKeeper leader costs no attempt (issue 15).
    "syncLimit": "6",
    "admin.enableServer": "false",
    "4lw.commands.whitelist": "srvr,stat,ruok,mntr,cons,conf",
    # A demo cluster may run for days: keep its snapshots and logs bounded.
    "autopurge.snapRetainCount": "3",
    "autopurge.purgeInterval": "1",
}


@dataclass(frozen=True)
class ServerPorts:
    """The ports of one server of a managed ensemble."""

    server_id: int
    client_port: int
    quorum_port: int
    election_port: int
    host: str = LOOPBACK
    """The address every port binds (and clients connect to)."""

    def named(self, standalone: bool) -> dict[int, str]:
        """Each port this server binds, with what it is for (for error messages)."""
        ports = {self.client_port: f"client port of server {self.server_id}"}
        if not standalone:
            ports[self.quorum_port] = f"quorum port of server {self.server_id}"
            ports[self.election_port] = f"election port of server {self.server_id}"
        return ports


def plan_ports(
    servers: int, client_port: int, host: str | Sequence[str] = LOOPBACK
) -> list[ServerPorts]:
    """The ports of every server of an ensemble of ``servers`` whose base client port is P,
    all on ``host``, or server n on the n-th of several hosts."""
    if not isinstance(host, str) and len(host) != servers:
        raise ManagedZooKeeperError(f"{servers} server(s) need as many hosts, not {len(host)}")
    if servers < 1 or servers > MAX_SERVERS or servers % 2 == 0:
        raise ManagedZooKeeperError(
            f"servers must be 1 or an odd number up to {MAX_SERVERS}, not {servers}"
        )
    highest = client_port + (ELECTION_PORT_OFFSET if servers > 1 else 0) + servers - 1
    if client_port < 1 or highest > MAX_PORT:
        raise ManagedZooKeeperError(
            f"client port {client_port} leaves no room for {servers} server(s): "
            f"ports up to {highest} are needed, the highest is {MAX_PORT}"
        )
    return [
        ServerPorts(
            server_id=n,
            client_port=client_port + n - 1,
            quorum_port=client_port + QUORUM_PORT_OFFSET + n - 1,
            election_port=client_port + ELECTION_PORT_OFFSET + n - 1,
            host=host if isinstance(host, str) else host[n - 1],
        )
        for n in range(1, servers + 1)
    ]


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    """Whether ``host:port`` can be bound now.

    SO_REUSEADDR like ZooKeeper's own sockets, so a port in TIME_WAIT after a server stopped
    counts as free (the server could bind it) while one with a listener does not.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


# Below Linux's ephemeral range (32768-60999): a port chosen there could be taken by any
# outgoing connection (a kazoo client) between the check and the server's bind, or while the
# server is stopped before it starts again on the same port.
STABLE_PORT_RANGE = (15000, 32000)


def kernel_port(host: str = LOOPBACK) -> int:
    """A TCP port on ``host`` that was free a moment ago, the kernel's choice (the ephemeral
    range included): for a server started at once and never restarted on it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def stable_port(exclude: Sequence[int] = (), tries: int = 200) -> int:
    """A port on loopback that is free now, outside the ephemeral range (a server that may be
    restarted on it keeps it); ``PortInUseError`` if ``tries`` random picks found none."""
    for _ in range(tries):
        port = random.randrange(*STABLE_PORT_RANGE)
        if port not in exclude and port_is_free(port):
            return port
    low, high = STABLE_PORT_RANGE
    raise PortInUseError(f"no free port found between {low} and {high}")


def check_ports_free(plan: list[ServerPorts], standalone: bool) -> None:
    """Raise ``PortInUseError`` naming every port of ``plan`` that is taken."""
    named = {port: what for ports in plan for port, what in ports.named(standalone).items()}
    host = plan[0].host if plan else LOOPBACK
    taken = [f"{port} ({what})" for port, what in named.items() if not port_is_free(port, host)]
    if taken:
        raise PortInUseError(
            f"port in use: {', '.join(taken)}; nothing was started. Stop what uses it "
            "or choose another base port (--port)"
        )


def server_dir(data_dir: Path, server_id: int) -> Path:
    """The directory of server ``server_id``: zoo.cfg, zookeeper.log and data/."""
    return data_dir / f"server-{server_id}"


def write_server_config(data_dir: Path, ports: ServerPorts, plan: list[ServerPorts]) -> Path:
    """Write server ``ports.server_id``'s zoo.cfg and myid; return the zoo.cfg path."""
    directory = server_dir(data_dir, ports.server_id)
    state = directory / "data"
    state.mkdir(parents=True, exist_ok=True)
    (state / "myid").write_text(f"{ports.server_id}\n", encoding="ascii")
    settings = {
        **SERVER_SETTINGS,
        "dataDir": str(state),
        "clientPort": str(ports.client_port),
        "clientPortAddress": ports.host,
    }
    if len(plan) > 1:
        for peer in plan:
            settings[f"server.{peer.server_id}"] = (
                f"{peer.host}:{peer.quorum_port}:{peer.election_port}"
            )
    config = directory / "zoo.cfg"
    lines = [f"{key}={value}" for key, value in settings.items()]
    config.write_text("# Written by steward; rewritten at every start.\n" + "\n".join(lines) + "\n")
    return config
