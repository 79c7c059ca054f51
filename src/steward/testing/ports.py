"""Free loopback ports for the servers tests and benchmarks start.

:func:`free_port` is the kernel's choice (any free port, ephemeral range included): for a
server started at once and never restarted. :func:`stable_port` stays below Linux's ephemeral
range (the product's own choice, :func:`steward.cluster.launcher.free_port`), so no outgoing
connection takes the port of a JobManager that a test or benchmark restarts on it.
:func:`free_zookeeper_port` finds a block for a managed ZooKeeper ensemble.
"""

from __future__ import annotations

import random
import socket

from steward.cluster.launcher import free_port as stable_port
from steward.zookeeper.layout import ELECTION_PORT_OFFSET, LOOPBACK, plan_ports, port_is_free

__all__ = ["free_port", "free_zookeeper_port", "stable_port"]

# Below Linux's ephemeral range (32768-60999): a port handed out there could be taken by any
# outgoing connection (a kazoo client) between our check and the server's bind, or while a
# test has that server stopped.
_ZOOKEEPER_PORT_RANGE = (15000, 32000 - ELECTION_PORT_OFFSET - 10)
_PORT_TRIES = 200


def free_port() -> int:
    """A TCP port on loopback that was free a moment ago (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def free_zookeeper_port(servers: int = 1) -> int:
    """A base client port P for which every port of a ``servers``-server managed ensemble
    (P.., P+100.., P+200..) is free now."""
    for _ in range(_PORT_TRIES):
        base = random.randrange(*_ZOOKEEPER_PORT_RANGE)
        ports = [
            port
            for server in plan_ports(servers, base)
            for port in (server.client_port, server.quorum_port, server.election_port)
        ]
        if all(port_is_free(port) for port in ports):
            return base
    raise AssertionError(f"no free port block for {servers} ZooKeeper server(s)")
