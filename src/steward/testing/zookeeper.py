"""Managed ZooKeeper servers for tests, the chaos suite and benchmarks.

:func:`start_ensemble` starts a standalone server or an ensemble on free loopback ports
(another process may take a port between the check and the bind: nothing was started then,
so it tries another block), :func:`running_ensemble` one stopped at the end of a block;
:func:`heal_ensemble` undoes a test's fault injection; :func:`restart_server` starts one
stopped server again once its port is released. The servers themselves are
:class:`steward.zookeeper.managed.ManagedEnsemble`, the product's own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from steward.errors import PortInUseError
from steward.testing.ports import free_zookeeper_port
from steward.testing.waiting import wait_until
from steward.zookeeper.layout import port_is_free
from steward.zookeeper.managed import ManagedEnsemble

START_TIMEOUT = 60.0
START_ATTEMPTS = 3
_PORT_RELEASE_TIMEOUT = 10.0


def start_ensemble(
    data_dir: Path,
    servers: int = 1,
    *,
    timeout: float = START_TIMEOUT,
    attempts: int = START_ATTEMPTS,
) -> ManagedEnsemble:
    """Start a ``servers``-server managed ZooKeeper on free ports under ``data_dir`` and wait
    until it serves; a port taken meanwhile costs one of ``attempts``."""
    ensemble = ManagedEnsemble(data_dir)
    for attempt in range(1, attempts + 1):
        try:
            ensemble.start(servers, free_zookeeper_port(servers), timeout=timeout)
            return ensemble
        except PortInUseError:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable: attempts must be at least 1")


@contextmanager
def running_ensemble(data_dir: Path, servers: int = 1) -> Iterator[ManagedEnsemble]:
    """:func:`start_ensemble`'s ensemble, stopped when the block ends."""
    ensemble = start_ensemble(data_dir, servers)
    try:
        yield ensemble
    finally:
        ensemble.stop()


def heal_ensemble(ensemble: ManagedEnsemble, timeout: float = START_TIMEOUT) -> None:
    """Undo a test's fault injection: thaw frozen servers, restart stopped ones, wait."""
    for status in ensemble.status():
        if status.frozen:
            ensemble.thaw_server(status.server_id)
        elif not status.running:
            ensemble.start_server(status.server_id, wait=False)
    ensemble.wait_serving(timeout=timeout)


def restart_server(ensemble: ManagedEnsemble, server_id: int) -> None:
    """Start a stopped server again and wait until it serves."""
    # A killed JVM can hold its client port for a moment after it has been reaped.
    port = ensemble.client_ports[server_id]
    wait_until(lambda: port_is_free(port), _PORT_RELEASE_TIMEOUT, f"port {port} released")
    ensemble.start_server(server_id)
