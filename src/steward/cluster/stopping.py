"""Which of a local cluster's recorded processes still run, and stopping them: on this machine
(by the pid and start time ``cluster.json`` recorded, never by name), on the cluster's other
hosts (through :mod:`steward.cluster.fleet`), its history server and its managed ZooKeeper.

Only processes a ``steward cluster start`` recorded are ever signalled.
"""

from __future__ import annotations

import contextlib
import logging

from steward.cluster import history_server, launcher
from steward.cluster.fleet import fleet_for, local_entries, remote_entries
from steward.cluster.status import workers
from steward.cluster.workdir import ClusterState, ProcessEntry, Role, StateDir
from steward.errors import LocalClusterError, StewardError
from steward.zookeeper.managed import ManagedEnsemble

log = logging.getLogger(__name__)


def running(state_dir: StateDir, previous: ClusterState) -> list[str]:
    """The recorded processes of ``previous`` that still run, named for an error message;
    raises :class:`LocalClusterError` when a host cannot tell."""
    alive = [entry for entry in local_entries(workers(previous)) if launcher.live_process(entry)]
    names = [f"{entry.id} (pid {entry.pid})" for entry in alive]
    names += history_server.running(previous)
    remote = remote_entries(workers(previous))
    if remote:
        found, failures = fleet_for(state_dir, previous).status(remote)
        if failures:
            raise LocalClusterError(
                "cannot tell whether the cluster's processes still run there: "
                + "; ".join(failures.values())
            )
        up = {proc_id for proc_id, process in found.items() if process.alive}
        names += [f"{e.where} (pid {e.pid})" for e in remote if e.id in up]
    if previous.managed_zookeeper and ManagedEnsemble(state_dir.zookeeper).is_running():
        names.append("ZooKeeper")
    return names


def stop(
    state_dir: StateDir, state: ClusterState, *, timeout: float
) -> tuple[list[ProcessEntry], dict[str, str]]:
    """Stop every process ``state`` recorded: those that ran, and the hosts that could not
    be reached (host: why)."""
    stopped = launcher.stop(local_entries(workers(state)), timeout=timeout)
    stopped += history_server.stop(state, timeout=timeout)
    failures: dict[str, str] = {}
    remote = remote_entries(workers(state))
    if remote:
        elsewhere, failures = fleet_for(state_dir, state).stop(remote, timeout=timeout)
        stopped += elsewhere
    ensemble = ManagedEnsemble(state_dir.zookeeper)
    if state.managed_zookeeper and ensemble.is_running():
        ensemble.stop(timeout=timeout)
        stopped += state.of_role(Role.ZOOKEEPER)
    return stopped, failures


def abort(state_dir: StateDir, state: ClusterState, *, timeout: float) -> None:
    """Stop what a failed start started, logging what could not be stopped rather than
    raising: the start's own error is the one to report."""
    with contextlib.suppress(StewardError):
        launcher.stop(local_entries(workers(state)), timeout=timeout)
        history_server.stop(state, timeout=timeout)
    remote = remote_entries(workers(state))
    if remote:
        _stopped, failures = fleet_for(state_dir, state).stop(remote, timeout=timeout)
        for failure in failures.values():
            log.error("could not stop what this start started there: %s", failure)
    if state.managed_zookeeper:
        with contextlib.suppress(StewardError):
            ManagedEnsemble(state_dir.zookeeper).stop(timeout=timeout)
