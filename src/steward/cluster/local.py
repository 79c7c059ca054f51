"""``LocalCluster``: start, inspect and stop a whole Steward cluster on this machine.

``start`` runs a managed standalone ZooKeeper (unless the user configured a quorum), N
JobManagers and M TaskManagers in the background, records every process in ``cluster.json``
as it starts it, and returns once a leader is elected and every TaskManager is registered.
If anything fails first, it stops everything it started and raises
:class:`LocalClusterStartError` naming the process and the tail of its log.

Starting over a cluster whose processes are all gone (it crashed, or was stopped) reuses its
cluster id, its ZooKeeper data and its storage, so the new leader recovers its jobs. Starting
while any of its processes is alive is an error. ``stop`` signals exactly the processes
``start`` started and keeps the data; ``stop(purge=True)`` also deletes ``.steward``.
"""

from __future__ import annotations

import logging
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from steward.cluster import history_server, launcher, stopping
from steward.cluster.fleet import TLS_DIR, Fleet, fleet_for
from steward.cluster.hosts import Topology, require_shared_zookeeper
from steward.cluster.managed_zookeeper import start_managed_zookeeper
from steward.cluster.settings import (
    CLIENT_ACL,
    CLUSTER_ID,
    DIGEST_FILE,
    QUORUM,
    UserSettings,
    cluster_settings,
    write_toml,
)
from steward.cluster.status import (
    ClusterStatus,
    admin_headers,
    probe,
    read_status,
    ready,
)
from steward.cluster.status import registered as registered_in
from steward.cluster.workdir import (
    ClusterState,
    ProcessEntry,
    Role,
    StateDir,
    load_state,
    save_state,
)
from steward.config import Configuration, load
from steward.errors import LocalClusterError, LocalClusterStartError
from steward.ha.acl import AclMode, create_digest_file
from steward.security.credentials import INTERNAL_KEY
from steward.security.provision import ensure_files, register_admin_token
from steward.supervisor.detached import log_tail
from steward.tls.certificates import TlsFiles, ensure_local_tls, local_hosts
from steward.tls.contexts import ClientTls, client_tls
from steward.tls.contexts import scheme as tls_scheme
from steward.zookeeper.layout import LOOPBACK

log = logging.getLogger(__name__)

__all__ = ["TLS_DIR", "ClusterStatus", "LocalCluster", "StartOptions"]

READY_TIMEOUT = 60.0
DEFAULT_REMOTE_PORT = 8081
"""A JobManager's REST port on another host when neither its masters line nor
``jobmanager.port`` gives one."""
STOP_GRACE = 10.0
_POLL_INTERVAL = 0.2

Progress = Callable[[str], None]


@dataclass(frozen=True)
class StartOptions:
    topology: Topology
    user: UserSettings
    slots: int | None = None
    timeout: float = READY_TIMEOUT
    tls: bool = False
    """Serve HTTPS with a private CA made in ``.steward/tls/`` (``--tls``)."""


class LocalCluster:
    """The cluster whose state lives in ``<workdir>/.steward``."""

    def __init__(self, workdir: Path) -> None:
        self.state_dir = StateDir.of(workdir)
        # Handles of the processes this object started, so that their exit is collected.
        self._children: list[subprocess.Popen[bytes]] = []

    # ------------------------------------------------------------------ start

    def start(self, options: StartOptions, progress: Progress = lambda _m: None) -> ClusterState:
        deadline = time.monotonic() + options.timeout
        with self.state_dir.locked():
            previous = load_state(self.state_dir)
            if previous is not None:
                self._refuse_if_running(previous)
            require_shared_zookeeper(options.topology, options.user.configured(QUORUM))
            state = self._new_state(options.user, previous)
            try:
                state = self._start_all(state, previous, options, deadline, progress)
            except BaseException:
                self._abort(load_state(self.state_dir) or state)
                raise
        return state

    def _new_state(self, user: UserSettings, previous: ClusterState | None) -> ClusterState:
        quorum = user.configured(QUORUM)
        cluster_id = user.configured(CLUSTER_ID) or (
            previous.cluster_id if previous else f"local-{secrets.token_hex(4)}"
        )
        return ClusterState(
            cluster_id=cluster_id,
            quorum=quorum or "",
            managed_zookeeper=quorum is None,
            config=str(self.state_dir.config),
            started_at=time.time(),
        )

    def _start_all(
        self,
        state: ClusterState,
        previous: ClusterState | None,
        options: StartOptions,
        deadline: float,
        progress: Progress,
    ) -> ClusterState:
        topology = options.topology
        local_ports = launcher.choose_ports(
            [p for i, p in enumerate(topology.jobmanager_ports) if not topology.jobmanager_host(i)],
            _ports(previous),
        )
        if state.managed_zookeeper:
            progress("starting ZooKeeper")
            state = start_managed_zookeeper(self.state_dir, state, _left(deadline))
        settings = cluster_settings(
            options.user,
            state_root=self.state_dir.root,
            quorum=state.quorum,
            cluster_id=state.cluster_id,
            slots=options.slots,
            digest_file=self._zookeeper_credential(options.user),
        )
        if options.tls:  # what the user set wins (their own certificate, say)
            settings = {**TlsFiles(self.state_dir.root / TLS_DIR).settings(), **settings}
        credentials = ensure_files(self.state_dir.root)  # what the user set wins here too
        settings = {INTERNAL_TOKEN_FILE: str(credentials.internal_file), **settings}
        write_toml(self.state_dir.config, settings, header=_TOML_HEADER)
        config = load(self.state_dir.config)  # the processes will read it so: fail here first
        if config.settings.security.auth_enabled:
            progress("registering the admin token")
            register_admin_token(config, credentials.admin_token)
        host = _reachable_host(config.settings.jobmanager.bind_host)
        if options.tls:
            progress("making the private CA and certificate")
            named = [host, *(h for h in topology.jobmanager_hosts if h)]
            ensure_local_tls(
                self.state_dir.root / TLS_DIR, local_hosts(named), name=state.cluster_id
            )
        verify = client_tls(config.settings.tls)
        scheme = tls_scheme(config.settings.tls)
        for directory in (self.state_dir.storage, self.state_dir.work, self.state_dir.logs):
            directory.mkdir(parents=True, exist_ok=True)
        fleet = Fleet.of(config, self.state_dir)
        if topology.remote_hosts:
            progress(f"preparing {len(topology.remote_hosts)} other host(s) over SSH")
            fleet.prepare(topology.remote_hosts, config.settings.storage.storage_dir)
        remote_port = config.settings.jobmanager.port or DEFAULT_REMOTE_PORT
        for index, port in enumerate(topology.jobmanager_ports):
            number, remote = index + 1, topology.jobmanager_host(index)
            if remote is None:
                state = self._launch(
                    state,
                    Role.JOBMANAGER,
                    number,
                    port=local_ports.pop(0),
                    host=host,
                    scheme=scheme,
                )
            else:
                progress(f"starting jm-{number} on {remote}")
                entry = fleet.launch(
                    remote, Role.JOBMANAGER, number, port=port or remote_port, scheme=scheme
                )
                state = self._record(state, entry)
        for index in range(topology.taskmanagers):
            number, remote = index + 1, topology.taskmanager_host(index)
            if remote is None:
                state = self._launch(state, Role.TASKMANAGER, number)
            else:
                progress(f"starting tm-{number} on {remote}")
                entry = fleet.launch(remote, Role.TASKMANAGER, number, port=None, scheme=scheme)
                state = self._record(state, entry)
        state = self._start_history_server(state, config, progress)
        self._await_ready(state, deadline, options.timeout, progress, verify)
        return state

    def _record(self, state: ClusterState, entry: ProcessEntry) -> ClusterState:
        state = state.model_copy(update={"processes": [*state.processes, entry]})
        save_state(self.state_dir, state)  # at once: an interrupted start can still be stopped
        return state

    def _start_history_server(
        self, state: ClusterState, config: Configuration, progress: Progress
    ) -> ClusterState:
        if not config.settings.history.server_enabled:
            return state
        progress("starting the Spark History Server")
        child, entry = history_server.start(self.state_dir, config)
        self._children.append(child)
        return self._record(state, entry)

    def _zookeeper_credential(self, user: UserSettings) -> Path | None:
        """The cluster's ZooKeeper credential file, made at the first start and kept (its
        state in ZooKeeper is protected by it); None if the user chose their own, or open."""
        if user.configured(DIGEST_FILE) or user.configured(CLIENT_ACL) == AclMode.OPEN:
            return None
        create_digest_file(self.state_dir.zookeeper_digest)
        return self.state_dir.zookeeper_digest

    def _launch(
        self,
        state: ClusterState,
        role: Role,
        number: int,
        *,
        port: int | None = None,
        host: str = LOOPBACK,
        scheme: str = "http",
    ) -> ClusterState:
        child, entry = launcher.launch(
            self.state_dir, role, number, port=port, host=host, scheme=scheme
        )
        self._children.append(child)
        return self._record(state, entry)

    def _await_ready(
        self,
        state: ClusterState,
        deadline: float,
        timeout: float,
        progress: Progress,
        verify: ClientTls,
    ) -> None:
        jobmanagers = state.of_role(Role.JOBMANAGER)
        wanted = {entry.id for entry in state.of_role(Role.TASKMANAGER)}
        while True:
            for entry in [*jobmanagers, *state.of_role(Role.TASKMANAGER)]:
                if entry.host is None and launcher.live_process(entry) is None:
                    raise LocalClusterStartError(self._failure(entry, "exited while starting"))
            views = {
                entry.id: probe(entry.address, verify, admin_headers(self.state_dir))
                for entry in jobmanagers
            }
            leader = next((v.leader for v in views.values() if v and v.leader), None)
            registered = registered_in(views.values()) & wanted
            answering = sum(view is not None for view in views.values())
            progress(
                f"{answering}/{len(jobmanagers)} JobManagers answering,"
                f" leader: {leader.id if leader else 'none yet'},"
                f" {len(registered)}/{len(wanted)} TaskManagers registered"
            )
            # Every JobManager ready too: a standby that could not yet take over a crash at
            # once would make the first kill of the leader wait for the session timeout.
            unready = [e for e in jobmanagers if views[e.id] is None or leader is None]
            unready = unready or [e for e in jobmanagers if not ready(e.address, verify)]
            if not unready and registered == wanted:
                return
            if time.monotonic() >= deadline:
                laggard = next(iter(unready), None)
                laggard = laggard or next(
                    e for e in state.of_role(Role.TASKMANAGER) if e.id not in registered
                )
                raise LocalClusterStartError(
                    self._failure(laggard, f"was not ready within {timeout:g}s")
                )
            time.sleep(_POLL_INTERVAL)

    def _abort(self, state: ClusterState) -> None:
        """Stop whatever this start started (a failed or interrupted start)."""
        log.info("start failed; stopping what it started cluster=%s", state.cluster_id)
        stopping.abort(self.state_dir, state, timeout=STOP_GRACE)

    def _refuse_if_running(self, previous: ClusterState) -> None:
        names = stopping.running(self.state_dir, previous)
        if names:
            raise LocalClusterError(
                f"the local cluster in {self.state_dir.root} is running: {', '.join(names)};"
                " `steward cluster status` shows it, `steward cluster stop` stops it"
            )

    # ------------------------------------------------------------------ status

    def status(self) -> ClusterStatus:
        return read_status(self.state_dir)

    # ------------------------------------------------------------------ stop

    def stop(self, *, timeout: float = STOP_GRACE, purge: bool = False) -> list[ProcessEntry]:
        """Stop every process ``start`` started (and nothing else); returns those that ran.

        The data is kept (a later start recovers the jobs) unless ``purge``.
        """
        stopped: list[ProcessEntry] = []
        with self.state_dir.locked():
            state = load_state(self.state_dir)
            failures: dict[str, str] = {}
            if state is not None:
                stopped, failures = stopping.stop(self.state_dir, state, timeout=timeout)
        if failures:
            done = ", ".join(e.where for e in stopped) or "nothing"
            raise LocalClusterError(
                f"stopped {done}; could not reach "
                + "; ".join(failures.values())
                + " (its processes may still run: `steward cluster stop` again once it is back)"
            )
        if purge and self.state_dir.root.exists():
            shutil.rmtree(self.state_dir.root)
        return stopped

    def _failure(self, entry: ProcessEntry, what: str) -> str:
        head = f"{entry.role.value} {entry.where} (pid {entry.pid}) {what}"
        if entry.host is None:
            return f"{head}; last lines of {entry.log}:\n{log_tail(Path(entry.log))}"
        state = load_state(self.state_dir)
        assert state is not None
        found, failures = fleet_for(self.state_dir, state).status([entry], tail=True)
        process = found.get(entry.id)
        if process is None or process.log_tail is None:
            why = failures.get(entry.host, "its host did not answer")
            return f"{head}; its log is {entry.log} on {entry.host} ({why})"
        return f"{head}; last lines of {entry.log} on {entry.host}:\n{process.log_tail}"


INTERNAL_TOKEN_FILE = INTERNAL_KEY
"""``security.internal.token-file``: ``.steward/internal.token`` unless the user set one."""

_TOML_HEADER = """Written by `steward cluster start` at every start: edit the -D's you pass instead.
Every process of the local cluster reads this file, and so does every steward command run in
the folder that holds .steward/ when it is given no other configuration."""


def _reachable_host(bind_host: str) -> str:
    return LOOPBACK if bind_host in ("", "0.0.0.0", "::") else bind_host


def _ports(previous: ClusterState | None) -> list[int]:
    """The REST ports the JobManagers had in the previous run, in order."""
    if previous is None:
        return []
    urls = [
        httpx.URL(entry.address) for entry in previous.of_role(Role.JOBMANAGER) if entry.address
    ]
    return [url.port for url in urls if url.port is not None]


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 1.0)
