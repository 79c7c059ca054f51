"""What a local cluster's processes are doing: alive or not, which JobManager leads.

``read_status`` answers ``steward cluster status`` from the recorded processes
(``cluster.json``): each is alive only while it is still the process that was started
(:func:`steward.cluster.launcher.live_process`), a ZooKeeper server's mode comes from its
four-letter word, and the leader from a live JobManager's ``GET /v1/cluster`` or else from
ZooKeeper's ``leader/info``. ``probe`` is also what ``start`` waits on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from pydantic import ValidationError

from steward.cluster import launcher
from steward.cluster.fleet import fleet_for, remote_entries
from steward.cluster.workdir import ClusterState, ProcessEntry, Role, StateDir, load_state
from steward.config import load
from steward.errors import StewardError
from steward.ha.acl import ZooKeeperAccess
from steward.ha.directory import read_directory
from steward.security.credentials import ADMIN_TOKEN_FILE
from steward.tls.contexts import ClientTls, client_tls
from steward.wire.rest import ClusterView
from steward.zookeeper.layout import LOOPBACK
from steward.zookeeper.managed import ManagedEnsemble

log = logging.getLogger(__name__)

_PROBE_TIMEOUT = 1.0


@dataclass(frozen=True)
class ProcessStatus:
    role: Role
    id: str
    pid: int | None
    alive: bool
    address: str | None
    log: str
    leader: bool = False
    mode: str | None = None  # a ZooKeeper server's mode (standalone, leader, follower)
    host: str | None = None  # another host, reached over SSH; None: this machine
    unreachable: bool = False  # its host did not answer: whether it runs is unknown


@dataclass(frozen=True)
class ClusterStatus:
    state_dir: StateDir
    state: ClusterState | None
    processes: list[ProcessStatus] = field(default_factory=list)
    leader: str | None = None

    @property
    def healthy(self) -> bool:
        return self.state is not None and all(process.alive for process in self.processes)


def read_status(state_dir: StateDir) -> ClusterStatus:
    state = load_state(state_dir)
    if state is None:
        return ClusterStatus(state_dir, None)
    processes = _zookeeper_status(state_dir) if state.managed_zookeeper else []
    alive = {
        entry.id: launcher.live_process(entry) is not None
        for entry in workers(state)
        if entry.host is None
    }
    unreachable: set[str] = set()
    remote = remote_entries(workers(state))
    if remote:
        found, failures = fleet_for(state_dir, state).status(remote)
        for entry in remote:
            answer = found.get(entry.id)
            alive[entry.id] = answer is not None and answer.alive
            if entry.host in failures:
                unreachable.add(entry.id)
                log.warning("%s", failures[entry.host])
    zookeeper_down = state.managed_zookeeper and not any(p.alive for p in processes)
    leader = _leader(state_dir, state, alive, ask_zookeeper=not zookeeper_down)
    processes += [
        ProcessStatus(
            role=entry.role,
            id=entry.id,
            pid=entry.pid,
            alive=alive[entry.id],
            address=entry.address,
            log=entry.log,
            leader=entry.id == leader,
            host=entry.host,
            unreachable=entry.id in unreachable,
        )
        for entry in workers(state)
    ]
    processes += [
        ProcessStatus(
            role=entry.role,
            id=entry.id,
            pid=entry.pid,
            alive=launcher.live_process(entry) is not None,
            address=entry.address,
            log=entry.log,
        )
        for entry in state.of_role(Role.HISTORY_SERVER)
    ]
    return ClusterStatus(state_dir, state, processes, leader)


def workers(state: ClusterState) -> list[ProcessEntry]:
    """The JobManagers and TaskManagers (the ZooKeeper servers are the ensemble's own)."""
    return [*state.of_role(Role.JOBMANAGER), *state.of_role(Role.TASKMANAGER)]


def admin_headers(state_dir: StateDir) -> dict[str, str] | None:
    """The cluster's own requests carry its admin token (``.steward/admin.token``)."""
    path = state_dir.root / ADMIN_TOKEN_FILE
    try:
        return {"authorization": f"Bearer {path.read_text(encoding='utf-8').strip()}"}
    except OSError:
        return None


def probe(
    address: str | None, verify: ClientTls, headers: dict[str, str] | None = None
) -> ClusterView | None:
    """``GET /v1/cluster`` of one JobManager (``headers``: the admin token's), or None if it
    does not answer (yet)."""
    if address is None:
        return None
    try:
        response = httpx.get(
            f"{address}/v1/cluster",
            timeout=_PROBE_TIMEOUT,
            verify=verify.context,
            headers=headers,
        )
        if response.status_code != httpx.codes.OK:
            return None
        return ClusterView.model_validate_json(response.content)
    except (httpx.HTTPError, ValidationError):
        return None


def ready(address: str | None, verify: ClientTls) -> bool:
    """Whether one JobManager answers ``/readyz`` 200 (public): recovered if it leads, able to
    take over a crash of the leader at once if it stands by."""
    if address is None:
        return False
    try:
        answer = httpx.get(f"{address}/readyz", timeout=_PROBE_TIMEOUT, verify=verify.context)
    except httpx.HTTPError:
        return False
    return answer.status_code == httpx.codes.OK


def registered(views: Iterable[ClusterView | None]) -> set[str]:
    """The TaskManagers any of ``views`` lists."""
    return {tm.id for view in views if view is not None for tm in view.taskmanagers}


def cluster_tls(config: Path) -> ClientTls:
    """How the cluster's own probes verify its JobManagers: with the ``rest.ssl.*`` of its
    ``steward.toml`` (the system's CAs if it cannot be read)."""
    try:
        return client_tls(load(config).settings.tls)
    except StewardError as exc:
        log.debug("probing with the system's CAs: %s", exc)
        return client_tls()


def _zookeeper_status(state_dir: StateDir) -> list[ProcessStatus]:
    ensemble = ManagedEnsemble(state_dir.zookeeper)
    return [
        ProcessStatus(
            role=Role.ZOOKEEPER,
            id=launcher.process_id(Role.ZOOKEEPER, server.server_id),
            pid=server.pid,
            alive=server.running,
            address=f"{LOOPBACK}:{server.client_port}",
            log=str(ensemble.log_path(server.server_id)),
            mode=server.mode.value if server.mode else ("frozen" if server.frozen else None),
        )
        for server in ensemble.status()
    ]


def _leader(
    state_dir: StateDir, state: ClusterState, alive: dict[str, bool], *, ask_zookeeper: bool
) -> str | None:
    """The leader's id, from a live JobManager, else from ZooKeeper's leader/info."""
    verify = cluster_tls(Path(state.config))
    headers = admin_headers(state_dir)
    for entry in state.of_role(Role.JOBMANAGER):
        view = probe(entry.address, verify, headers) if alive[entry.id] else None
        if view is not None:
            return view.leader.id if view.leader else None
    if not ask_zookeeper:
        return None
    try:
        config = load(Path(state.config))
        root = config.settings.zookeeper.cluster_root
        access = ZooKeeperAccess.for_client(config.settings.zookeeper)
        directory = read_directory(state.quorum, root, timeout=2.0, access=access)
    except StewardError as exc:
        log.debug("no leader info from ZooKeeper: %s", exc)
        return None
    return directory.leader.contender if directory.leader else None
