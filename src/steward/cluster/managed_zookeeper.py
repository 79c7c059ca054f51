"""The local cluster's own ZooKeeper: one managed standalone server on this machine.

Started when no quorum is configured, on the port it had before if that is free (a stable
connect string across starts), else on a free one; its server is recorded in ``cluster.json``
beside the JobManagers and TaskManagers (the ensemble's own record stays in
``.steward/zookeeper/``).
"""

from __future__ import annotations

from steward.cluster import launcher
from steward.cluster.workdir import ClusterState, ProcessEntry, Role, StateDir, save_state
from steward.errors import PortInUseError
from steward.zookeeper.layout import LOOPBACK, port_is_free
from steward.zookeeper.managed import ManagedEnsemble
from steward.zookeeper.state import load_state as load_ensemble_state

_PORT_ATTEMPTS = 3


def start_managed_zookeeper(
    state_dir: StateDir, state: ClusterState, timeout: float
) -> ClusterState:
    """Start the server (waiting up to ``timeout``); ``state`` with its quorum and process."""
    ensemble = ManagedEnsemble(state_dir.zookeeper)
    previous = load_ensemble_state(state_dir.zookeeper)
    port = previous.client_port if previous and port_is_free(previous.client_port) else None
    for attempt in range(_PORT_ATTEMPTS):
        try:
            ensemble.start(1, port or launcher.free_port(), timeout=timeout)
            break
        except PortInUseError:
            # Taken between our check and the start; nothing was started.
            if attempt == _PORT_ATTEMPTS - 1:
                raise
            port = None
    entries = _entries(ensemble)
    state = state.model_copy(
        update={"quorum": ensemble.connect_string, "processes": [*state.processes, *entries]}
    )
    save_state(state_dir, state)
    return state


def _entries(ensemble: ManagedEnsemble) -> list[ProcessEntry]:
    recorded = load_ensemble_state(ensemble.data_dir)
    servers = recorded.servers if recorded else ()
    return [
        ProcessEntry(
            role=Role.ZOOKEEPER,
            id=launcher.process_id(Role.ZOOKEEPER, server.ports.server_id),
            pid=server.process.pid,
            create_time=server.process.create_time,
            marker=server.process.marker,
            address=f"{LOOPBACK}:{server.ports.client_port}",
            log=str(ensemble.log_path(server.ports.server_id)),
        )
        for server in servers
        if server.process is not None
    ]
