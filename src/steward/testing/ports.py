"""Free loopback ports for the servers tests and benchmarks start.

:func:`free_port` is the kernel's choice (any free port, ephemeral range included): for a
server started at once and never restarted. :func:`stable_port` stays below Linux's ephemeral
range (what the product's local cluster chooses), so no outgoing
connection takes the port of a JobManager that a test or benchmark restarts on it.
:func:`free_zookeeper_port` finds a block for a managed ZooKeeper ensemble.
"""

from __future__ import annotations

import random

from steward.zookeeper.layout import (
    ELECTION_PORT_OFFSET,
    STABLE_PORT_RANGE,
    plan_ports,
    port_is_free,
    stable_port,
)
from steward.zookeeper.layout import kernel_port as free_port

__all__ = ["free_port", "free_zookeeper_port", "stable_port"]

# Below Linux's ephemeral range, as :func:`stable_port`, with room for the election ports.
_ZOOKEEPER_PORT_RANGE = (STABLE_PORT_RANGE[0], STABLE_PORT_RANGE[1] - ELECTION_PORT_OFFSET - 10)
_PORT_TRIES = 200


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
