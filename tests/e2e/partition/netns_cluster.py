"""A ZooKeeper server and a Steward cluster whose processes each live in their own namespace.

ZooKeeper runs from the installed Apache ZooKeeper exactly as ``ManagedEnsemble`` runs it
(same JVM command, same server settings), but with its own zoo.cfg that listens on the
namespace's address instead of loopback. JobManagers listen on 0.0.0.0 and advertise their
namespace address, so TaskManagers and the test (through the :class:`Observer`) reach them
across the bridge. Everything the test asks the cluster goes through ``call``.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

from e2e.partition.network import Network, Observer
from steward.client import Client
from steward.supervisor.detached import spawn, terminate
from steward.testing.processes import Proc, ProcessCluster
from steward.zookeeper.fourletter import four_letter_word
from steward.zookeeper.layout import SERVER_SETTINGS
from steward.zookeeper.managed import server_install
from support import wait_until

T = TypeVar("T")

ZK_PORT = 2181
JM_PORT = 8081
ZK = "zk"


class NamespacedZooKeeper:
    """One standalone ZooKeeper server inside member ``zk`` of ``network``."""

    def __init__(self, network: Network, observer: Observer, data_dir: Path) -> None:
        self.address = network.add(ZK)
        state = data_dir / "data"
        state.mkdir(parents=True, exist_ok=True)
        settings = {
            **SERVER_SETTINGS,
            "dataDir": str(state),
            "clientPort": str(ZK_PORT),
            "clientPortAddress": "0.0.0.0",
        }
        config = data_dir / "zoo.cfg"
        config.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        command = [*network.exec_prefix(ZK), *server_install().server_command(config)]
        self.log = data_dir / "zookeeper.log"
        self._child, _record = spawn(command, self.log, marker=str(config))
        self._observer = observer

        def serving() -> bool:
            if self._child.poll() is not None:
                raise AssertionError(f"ZooKeeper exited:\n{self.log.read_text()[-3000:]}")
            answer = observer.run(lambda: four_letter_word(ZK_PORT, "srvr", host=self.address))
            return "Mode: standalone" in answer

        wait_until(serving, 60, interval=0.2, message="namespaced ZooKeeper serving")

    @property
    def connect_string(self) -> str:
        return f"{self.address}:{ZK_PORT}"

    def stop(self) -> None:
        import psutil

        with contextlib.suppress(psutil.NoSuchProcess):
            terminate([psutil.Process(self._child.pid)], graceful=False, timeout=10)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._child.wait(5)


class NetnsCluster(ProcessCluster):
    """``ProcessCluster`` whose JobManagers and TaskManagers each get a namespace."""

    def __init__(
        self,
        workdir: Path,
        network: Network,
        observer: Observer,
        quorum: str,
        cluster_id: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(workdir, quorum, cluster_id, **kwargs)
        self.network = network
        self.observer = observer

    def call(self, work: Callable[[], T]) -> T:
        """Run ``work`` (anything that opens sockets to the cluster) on the private network."""
        return self.observer.run(work)

    def start_jobmanager(self, jm_id: str) -> Proc:
        self.call(self.register_admin_token)  # ZooKeeper is on the private network
        address = self._host(jm_id)
        argv = self.command(
            "jobmanager",
            jm_id,
            {
                "jobmanager.port": str(JM_PORT),
                "jobmanager.bind-host": "0.0.0.0",
                "jobmanager.advertised-address": f"http://{address}:{JM_PORT}",
            },
        )
        proc = self.spawn("jobmanager", jm_id, [*self.network.exec_prefix(jm_id), *argv])
        proc.address = f"http://{address}:{JM_PORT}"
        return proc

    def start_taskmanager(self, tm_id: str, slots: int = 2) -> Proc:
        self._host(tm_id)
        argv = self.command("taskmanager", tm_id, {"taskmanager.numberOfTaskSlots": str(slots)})
        return self.spawn("taskmanager", tm_id, [*self.network.exec_prefix(tm_id), *argv])

    def _host(self, name: str) -> str:
        """The address of member ``name``: the one a test made (and perhaps blocked from some
        servers) before starting its process, or a new one."""
        return self.network.members.get(name) or self.network.add(name)

    # Every query of the base class opens sockets: run it on the private network.

    def cluster_view(self) -> dict[str, Any] | None:
        return self.call(super().cluster_view)

    def leader(self) -> Proc | None:
        return self.call(super().leader)

    def wait_ready(self, taskmanagers: int, timeout: float = 60.0) -> Proc:
        return self.call(lambda: super(NetnsCluster, self).wait_ready(taskmanagers, timeout))

    def role(self, proc: Proc) -> str | None:
        """``leader`` or ``standby`` as ``proc`` itself says (/healthz), None if unreachable."""

        def ask() -> str | None:
            try:
                return str(httpx.get(proc.address + "/healthz", timeout=2).json()["role"])
            except (httpx.HTTPError, ValueError, KeyError):
                return None

        return self.call(ask)

    def with_client(self, work: Callable[[Client], T], timeout: float = 30.0) -> T:
        """Run ``work(client)`` on the private network with a fresh client."""

        def run() -> T:
            with self.client(timeout=timeout) as client:
                return work(client)

        return self.call(run)

    def kill_all(self) -> None:
        for proc in self.procs:
            proc.signal(signal.SIGKILL)
