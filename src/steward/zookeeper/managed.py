"""The managed ZooKeeper: a standalone server or an ensemble on loopback, run from the installed
Apache ZooKeeper for the quick start, the demo and the tests.

``ManagedEnsemble`` owns one data directory::

    <data_dir>/ensemble.json            ports, pids and start times (see state.py)
    <data_dir>/server-<n>/zoo.cfg       rewritten at every start (see layout.py for the ports)
    <data_dir>/server-<n>/data/         ZooKeeper's dataDir with its myid; kept across restarts
    <data_dir>/server-<n>/zookeeper.log the JVM's stdout and stderr, appended

Starting is all or nothing: every port is checked before any JVM starts, and a start that does
not end with every server serving stops what it started. ``start`` on an ensemble that already
runs with the same shape is not an error: it restarts any of its servers that is down, waits
until all serve and returns their status; a different shape must be stopped first.

The fault-injection methods (``stop_server``, ``start_server``, ``freeze_server``,
``thaw_server``) exist for tests that take servers away on purpose.
"""

from __future__ import annotations

import fcntl
import logging
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from steward.errors import ManagedZooKeeperError
from steward.supervisor.detached import find_live, is_frozen, log_tail, spawn, terminate
from steward.zookeeper.class_archive import with_class_archive
from steward.zookeeper.fourletter import ServerMode, connected_clients, serving_mode
from steward.zookeeper.install import ZooKeeperInstall, locate_install
from steward.zookeeper.layout import (
    LOOPBACK,
    ServerPorts,
    check_ports_free,
    kernel_port,
    plan_ports,
    server_dir,
    write_server_config,
)
from steward.zookeeper.state import STATE_FILE, EnsembleState, ServerRecord, load_state, save_state

logger = logging.getLogger(__name__)

DEFAULT_CLIENT_PORT = 2181
_POLL_INTERVAL = 0.1


@dataclass(frozen=True)
class ServerStatus:
    """What one server of the ensemble is doing now."""

    server_id: int
    client_port: int
    pid: int | None  # None when not running
    running: bool
    frozen: bool  # stopped by SIGSTOP (freeze_server): running, but answers nothing
    mode: ServerMode | None  # None when not answering or not part of a quorum

    @property
    def serving(self) -> bool:
        """Whether it answers clients."""
        return self.mode is not None


class ManagedEnsemble:
    """A ZooKeeper standalone server or ensemble whose processes this data directory records."""

    def __init__(
        self,
        data_dir: Path | str,
        *,
        command_prefix: Sequence[str] | Callable[[int], Sequence[str]] = (),
    ) -> None:
        """``command_prefix`` runs each server inside something, e.g. ``ip netns exec NS``
        (the test suites' hosts), the same for every server or one per server id; its ports
        are then not checked from here (they are in another network namespace)."""
        self.data_dir = Path(data_dir).absolute()
        self.command_prefix = command_prefix
        # Popen handle by server id of the servers this object started: their exit is
        # collected here (no zombies, no "still running" warnings), and an unreaped child's
        # pid cannot have been reused, so stopping it never depends on the identity check.
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # -- what it is ---------------------------------------------------------------------------

    @property
    def connect_string(self) -> str:
        """The kazoo ``hosts`` string, e.g. ``127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183``."""
        ports = self._require_state().servers
        return ",".join(f"{record.ports.host}:{record.ports.client_port}" for record in ports)

    @property
    def client_ports(self) -> dict[int, int]:
        """Client port by server id."""
        return {r.ports.server_id: r.ports.client_port for r in self._require_state().servers}

    def log_path(self, server_id: int) -> Path:
        """The log file of server ``server_id``."""
        return server_dir(self.data_dir, server_id) / "zookeeper.log"

    def is_running(self) -> bool:
        """Whether any recorded server process still runs."""
        state = load_state(self.data_dir)
        return state is not None and any(_live(record) for record in state.servers)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(
        self,
        servers: int = 1,
        client_port: int = DEFAULT_CLIENT_PORT,
        *,
        timeout: float = 60.0,
        host: str | Sequence[str] = LOOPBACK,
    ) -> list[ServerStatus]:
        """Start ``servers`` servers (1: standalone) and wait until all serve.

        Raises ``EnvironmentMissingError`` without Java or ZooKeeper, ``PortInUseError`` if a
        port is taken (nothing started), ``ManagedZooKeeperError`` if the servers do not serve
        within ``timeout`` (everything started is stopped again).
        """
        plan = plan_ports(servers, client_port, host)
        return self._start(plan, server_install(), timeout)

    def _start(
        self, plan: list[ServerPorts], install: ZooKeeperInstall, timeout: float
    ) -> list[ServerStatus]:
        with self._locked():
            state = self._resume_or_new(plan)
            down = [r.ports for r in state.servers if _live(r) is None]
            if not down:
                logger.info("already running data_dir=%s", self.data_dir)
            if not self._prefix(1):
                check_ports_free(down, standalone=len(plan) == 1)
            self._launch(state, down, install, timeout)
        return self.status()

    def stop(self, *, timeout: float = 10.0) -> None:
        """Stop every recorded server: SIGTERM, SIGKILL after ``timeout``. Idempotent."""
        if not (self.data_dir / STATE_FILE).exists():
            return
        with self._locked():
            state = load_state(self.data_dir)
            if state is not None:
                ids = [record.ports.server_id for record in state.servers]
                self._stop_servers(state, ids, graceful=True, timeout=timeout)
        logger.info("stopped data_dir=%s", self.data_dir)

    def status(self, *, probe_timeout: float = 1.0) -> list[ServerStatus]:
        """The status of every server, or [] if nothing was ever started here."""
        state = load_state(self.data_dir)
        if state is None:
            return []
        return [_status(record, probe_timeout) for record in state.servers]

    def wait_serving(self, timeout: float = 60.0) -> list[ServerStatus]:
        """Wait until the whole ensemble serves (one leader, the others followers)."""
        state = self._require_state()
        return self._await(state, [r.ports.server_id for r in state.servers], timeout)

    # -- fault injection ----------------------------------------------------------------------

    def stop_server(self, server_id: int, *, graceful: bool = False, timeout: float = 10.0) -> None:
        """Stop one server: SIGKILL (a crash) by default, SIGTERM if ``graceful``."""
        with self._locked():
            state = self._require_state()
            state.server(server_id)  # unknown id: a clear error, not a silent no-op
            self._stop_servers(state, [server_id], graceful=graceful, timeout=timeout)

    def start_server(self, server_id: int, *, wait: bool = True, timeout: float = 60.0) -> None:
        """Start a stopped server again with its config; wait until it serves if ``wait``."""
        with self._locked():
            state = self._require_state()
            record = state.server(server_id)
            if _live(record) is not None:
                return
            if not self._prefix(1):
                check_ports_free([record.ports], standalone=len(state.servers) == 1)
            state = self._spawn(state, record.ports, server_install())
            if wait:
                self._await_or_kill(state, [server_id], timeout)

    def freeze_server(self, server_id: int) -> None:
        """SIGSTOP one server: it keeps its sockets but answers nothing, like a long GC pause."""
        self._require_live(server_id).suspend()
        logger.info("froze server=%d", server_id)

    def thaw_server(self, server_id: int) -> None:
        """SIGCONT a frozen server."""
        self._require_live(server_id).resume()
        logger.info("thawed server=%d", server_id)

    def server_for_port(self, client_port: int) -> int:
        """The id of the server whose client port is ``client_port``."""
        for server_id, port in self.client_ports.items():
            if port == client_port:
                return server_id
        raise ManagedZooKeeperError(f"no server of this ensemble has client port {client_port}")

    def server_for_client(self, address: tuple[str, int]) -> int | None:
        """The id of the server a client is connected to, given the client's local
        (host, port), asked of the servers with ``cons``; None if no server lists it."""
        for status in self.status():
            host = self._require_state().server(status.server_id).ports.host
            if status.serving and address in connected_clients(status.client_port, host=host):
                return status.server_id
        return None

    # -- internals ----------------------------------------------------------------------------

    def _resume_or_new(self, plan: list[ServerPorts]) -> EnsembleState:
        state = load_state(self.data_dir)
        if state is None or not any(_live(record) for record in state.servers):
            return EnsembleState(plan[0].client_port, tuple(ServerRecord(p) for p in plan))
        if [record.ports for record in state.servers] == plan:
            return state
        raise ManagedZooKeeperError(
            f"a managed ZooKeeper with {len(state.servers)} server(s) on port "
            f"{state.client_port} already runs in {self.data_dir}; stop it first "
            f"(steward zookeeper stop --data-dir {self.data_dir})"
        )

    def _launch(
        self,
        state: EnsembleState,
        down: list[ServerPorts],
        install: ZooKeeperInstall,
        timeout: float,
    ) -> None:
        started: list[int] = []
        try:
            for ports in down:
                state = self._spawn(state, ports, install)
                started.append(ports.server_id)
        except BaseException:
            self._stop_servers(state, started, graceful=False, timeout=10.0)
            raise
        every = [record.ports.server_id for record in state.servers]
        self._await_or_kill(state, every, timeout, kill=started)

    def _spawn(
        self, state: EnsembleState, ports: ServerPorts, install: ZooKeeperInstall
    ) -> EnsembleState:
        plan = [record.ports for record in state.servers]
        config = write_server_config(self.data_dir, ports, plan)
        command = [*self._prefix(ports.server_id), *install.server_command(config)]
        child, record = spawn(command, self.log_path(ports.server_id), marker=str(config))
        previous = self._children.pop(ports.server_id, None)
        if previous is not None:
            previous.poll()  # a server that died on its own: settle its old handle
        self._children[ports.server_id] = child
        # Recorded at once, so a start interrupted from here on can still be stopped.
        state = state.with_process(ports.server_id, record)
        save_state(self.data_dir, state)
        logger.info("server starting server=%d port=%d", ports.server_id, ports.client_port)
        return state

    def _prefix(self, server_id: int) -> list[str]:
        prefix = self.command_prefix
        return list(prefix(server_id) if callable(prefix) else prefix)

    def _await_or_kill(
        self,
        state: EnsembleState,
        ids: list[int],
        timeout: float,
        kill: list[int] | None = None,
    ) -> None:
        try:
            self._await(state, ids, timeout)
        except BaseException:
            self._stop_servers(state, ids if kill is None else kill, graceful=False, timeout=10.0)
            raise

    def _await(self, state: EnsembleState, ids: list[int], timeout: float) -> list[ServerStatus]:
        """Poll until every server in ``ids`` serves in the right role; fail fast on an exit."""
        deadline = time.monotonic() + timeout
        whole = len(ids) == len(state.servers)
        while True:
            statuses = [_status(state.server(i), probe_timeout=0.5) for i in ids]
            for status in statuses:
                if not status.running:
                    raise ManagedZooKeeperError(self._failure(status.server_id, "is not running"))
            if _roles_settled(statuses, standalone=len(state.servers) == 1, whole=whole):
                return statuses
            if time.monotonic() >= deadline:
                sid = next((s.server_id for s in statuses if not s.serving), ids[0])
                raise ManagedZooKeeperError(self._failure(sid, f"did not serve within {timeout}s"))
            time.sleep(_POLL_INTERVAL)

    def _failure(self, server_id: int, what: str) -> str:
        path = self.log_path(server_id)
        return f"ZooKeeper server {server_id} {what}; last lines of {path}:\n{log_tail(path)}"

    def _stop_servers(
        self, state: EnsembleState, ids: list[int], *, graceful: bool, timeout: float
    ) -> EnsembleState:
        live = [p for p in (self._process(state.server(i)) for i in ids) if p is not None]
        terminate(live, graceful=graceful, timeout=timeout)
        for server_id in ids:
            child = self._children.pop(server_id, None)
            if child is not None:
                child.poll()  # already reaped by psutil: this just settles the handle
        for server_id in ids:
            state = state.with_process(server_id, None)
        save_state(self.data_dir, state)
        logger.info("servers stopped ids=%s pids=%s", ids, [p.pid for p in live])
        return state

    def _process(self, record: ServerRecord) -> psutil.Process | None:
        """The server's process: the recorded one if it passes the identity check, else
        the child this object started for it, if that still runs."""
        process = _live(record)
        child = self._children.get(record.ports.server_id)
        if process is None and child is not None and child.poll() is None:
            process = psutil.Process(child.pid)
        return process

    def _require_state(self) -> EnsembleState:
        state = load_state(self.data_dir)
        if state is None:
            raise ManagedZooKeeperError(f"no managed ZooKeeper was started in {self.data_dir}")
        return state

    def _require_live(self, server_id: int) -> psutil.Process:
        process = _live(self._require_state().server(server_id))
        if process is None:
            raise ManagedZooKeeperError(f"ZooKeeper server {server_id} is not running")
        return process

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise changes to one data directory (two CLIs, or a CLI and a test)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with (self.data_dir / ".lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield


def server_install() -> ZooKeeperInstall:
    """This machine's ZooKeeper, its servers mapping the class archive (recorded first if
    there is none yet: see class_archive.py)."""
    return with_class_archive(locate_install(), _train)


def _train(install: ZooKeeperInstall) -> None:
    """One standalone server of ``install`` in a throwaway folder, run until it serves and
    stopped gracefully: the class archive's training run."""
    with tempfile.TemporaryDirectory(prefix="steward-zookeeper-classes-") as folder:
        ensemble = ManagedEnsemble(folder)
        try:
            ensemble._start(plan_ports(1, kernel_port()), install, timeout=60.0)
        finally:
            ensemble.stop()


def _live(record: ServerRecord) -> psutil.Process | None:
    return None if record.process is None else find_live(record.process)


def _status(record: ServerRecord, probe_timeout: float) -> ServerStatus:
    ports = record.ports
    process = _live(record)
    if process is None:
        return ServerStatus(ports.server_id, ports.client_port, None, False, False, None)
    frozen = is_frozen(process)
    # A frozen server would only make the probe wait for its timeout.
    mode = (
        None if frozen else serving_mode(ports.client_port, host=ports.host, timeout=probe_timeout)
    )
    return ServerStatus(ports.server_id, ports.client_port, process.pid, True, frozen, mode)


def _roles_settled(statuses: list[ServerStatus], *, standalone: bool, whole: bool) -> bool:
    """Standalone: it serves. Whole ensemble: one leader, the rest followers. A subset (a
    restarted server): each serves, whatever its role."""
    if not all(status.serving for status in statuses):
        return False
    if standalone:
        return all(status.mode is ServerMode.STANDALONE for status in statuses)
    if not whole:
        return True
    leaders = sum(status.mode is ServerMode.LEADER for status in statuses)
    followers = sum(status.mode is ServerMode.FOLLOWER for status in statuses)
    return leaders == 1 and followers == len(statuses) - 1
