"""Helpers shared by Steward's tests: deadlines instead of sleeps, and free ports.

Import as ``from support import wait_until`` (tests/ is on sys.path through its conftest).
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable
from typing import TypeVar

from steward.zookeeper.layout import ELECTION_PORT_OFFSET, plan_ports, port_is_free

T = TypeVar("T")

# Every test's ZooKeeper nodes live under /steward-tests/<cluster_id> (the cluster_id fixture).
ZK_TEST_ROOT = "/steward-tests"

# Below Linux's ephemeral range (32768-60999): a port handed out there could be taken by any
# outgoing connection (a kazoo client) between our check and the server's bind, or while a
# test has that server stopped.
_PORT_RANGE = (15000, 32000 - ELECTION_PORT_OFFSET - 10)


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    interval: float = 0.02,
    message: str = "",
) -> T:
    """Call ``predicate`` until it returns something truthy, and return that.

    Raises AssertionError (with ``message`` and the last value) once ``timeout`` seconds have
    passed. Exceptions from the predicate propagate: catch them inside it if they are expected.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            what = message or getattr(predicate, "__name__", "condition")
            raise AssertionError(f"{what}: not true within {timeout}s (last value: {value!r})")
        time.sleep(min(interval, remaining))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def free_zookeeper_port(servers: int = 1) -> int:
    """A base client port P for which every port of a ``servers``-server managed ensemble
    (P.., P+100.., P+200..) is free now."""
    for _ in range(200):
        base = random.randrange(*_PORT_RANGE)
        ports = [
            port
            for server in plan_ports(servers, base)
            for port in (server.client_port, server.quorum_port, server.election_port)
        ]
        if all(port_is_free(port) for port in ports):
            return base
    raise AssertionError(f"no free port block for {servers} ZooKeeper server(s)")
