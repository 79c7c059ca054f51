"""The chaos cluster on hosts of its own: one network namespace per member, on one bridge.

``campaign --network`` runs every JobManager and TaskManager in a namespace of its own, and
each server of the 3-server ZooKeeper ensemble in one too (``zk1``..``zk3``, so that a
follower can be cut off from its leader), all wired to a bridge
(tests/e2e/partition/network.py). The campaign's own thread moves into the bridge's
namespace first, so that everything it starts and asks afterwards (the workload's client, the
nemesis' probes, the checker's ZooKeeper reads) is on that network, as an operator's machine
would be; :meth:`Hosts.close` moves it back.

What this adds to the nemesis: the network faults (``chaos.nemesis.NETWORK_KINDS``). Each
member keeps its address across restarts, so a restarted member is the same host.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from e2e.partition.network import Network, NetworkUnavailableError, enter_namespace
from steward.testing.ports import free_zookeeper_port
from steward.zookeeper.managed import ManagedEnsemble

ZK_HOSTS = ("zk1", "zk2", "zk3")
"""The host of ZooKeeper server n is ZK_HOSTS[n - 1]."""
JM_PORT = 8081


class Hosts:
    """The namespaces of one campaign; the calling thread is on their network until close."""

    def __init__(self) -> None:
        if os.geteuid() != 0:
            raise NetworkUnavailableError("network namespaces need root (CAP_NET_ADMIN)")
        self.network = Network()
        thread = threading.get_native_id()
        self._home = os.open(f"/proc/{os.getpid()}/task/{thread}/ns/net", os.O_RDONLY)
        try:
            enter_namespace(f"/run/netns/{self.network.hub}")
        except OSError:
            self.network.close()
            os.close(self._home)
            raise
        self.zookeeper_addresses = [self.network.add(name) for name in ZK_HOSTS]

    def add(self, name: str) -> str:
        """A new host ``name`` (its address), or the address it already has."""
        return self.network.members.get(name) or self.network.add(name)

    def prefix(self, name: str) -> list[str]:
        return self.network.exec_prefix(name)

    def start_ensemble(self, data_dir: Path, timeout: float) -> ManagedEnsemble:
        """Three ZooKeeper servers, server n on host ``ZK_HOSTS[n - 1]``."""
        ensemble = ManagedEnsemble(
            data_dir, command_prefix=lambda server: self.prefix(ZK_HOSTS[server - 1])
        )
        ensemble.start(3, free_zookeeper_port(3), timeout=timeout, host=self.zookeeper_addresses)
        return ensemble

    def close(self) -> None:
        """Back to the namespace this thread came from; every namespace deleted."""
        with contextlib.suppress(OSError):
            enter_namespace(f"/proc/self/fd/{self._home}")
        with contextlib.suppress(OSError):
            os.close(self._home)
        self.network.close()
