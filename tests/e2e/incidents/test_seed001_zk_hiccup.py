"""Seed 001: a ZooKeeper hiccup under the leader must cost nothing.

In Flink, one ZooKeeper server of three lost its connections; the leading JobManager saw its
connection SUSPENDED, gave up leadership, and during the confused failover an old, finished
job was resurrected beside the real one. Steward's leader tolerates SUSPENDED (its writes are
fenced, rules 2 and 5): it reconnects to another server within its session and keeps
leading with the same epoch; no job is restarted, no finished job comes back, and no two
attempts of a job ever overlap.

The server the leader is connected to is found from the leader's own TCP connections; the
TaskManagers are kept on the other two servers (a TaskManager cut off from ZooKeeper longer
than ``taskmanager.fence-after`` rightly kills its attempts, which is another test's subject).
As in the seed, the server lost is a follower: the JobManagers are given the ensemble's
followers. A frozen ensemble *leader* would cut the TaskManagers off too (their round trips
need it) until the others elect another (syncLimit 3 s and an election), past this cluster's
fence-after (2.4 s at its 4 s session): then the TaskManagers rightly fence, which a starved
test process, slow to see its leader move and thaw the server, once made happen here. The
leader's own term on a failing ensemble leader: tests/integration/test_seed001_zk_server_loss.py.
"""

from __future__ import annotations

import psutil
import pytest

from e2e.incidents import kit
from e2e.incidents.truth import GroundTruth
from e2e.incidents.zkview import ZkView
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.states import JobState
from steward.zookeeper.fourletter import ServerMode
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

LONG = ["long-1", "long-2"]
DONE = "finished-before"
DEADLINE = 60.0
QUORUM_KEY = "high-availability.zookeeper.quorum"


def _modes(ensemble: ManagedEnsemble) -> dict[int, ServerMode | None]:
    """Each server's role, once the whole ensemble serves (a probe a loaded server is slow to
    answer is asked again, not taken for a server that does not serve)."""
    return {status.server_id: status.mode for status in ensemble.wait_serving(DEADLINE)}


def _quorum_of(ensemble: ManagedEnsemble, servers: list[int]) -> str:
    """The connect string of ``servers``."""
    return ",".join(f"127.0.0.1:{ensemble.client_ports[sid]}" for sid in servers)


def _zk_server_of(proc: Proc, ensemble: ManagedEnsemble) -> int | None:
    """The id of the ZooKeeper server ``proc`` holds an established connection to."""
    by_port = {port: sid for sid, port in ensemble.client_ports.items()}
    try:
        connections = psutil.Process(proc.pid).net_connections(kind="tcp")
    except psutil.Error:
        return None
    for conn in connections:
        if conn.status == psutil.CONN_ESTABLISHED and conn.raddr and conn.raddr.port in by_port:
            return by_port[conn.raddr.port]
    return None


@pytest.mark.parametrize("hiccup", ["stop", "freeze"])
def test_leader_keeps_leading_through_its_zookeeper_server_going_away(
    hiccup: str,
    cluster3: ProcessCluster,
    zk3: ManagedEnsemble,
    zk_view3: ZkView,
    truth: GroundTruth,
) -> None:
    # Given: two JobManagers on the ensemble's followers; the leader's server, a follower;
    # TaskManagers on the others.
    followers = [sid for sid, mode in _modes(zk3).items() if mode is ServerMode.FOLLOWER]
    cluster3.settings[QUORUM_KEY] = _quorum_of(zk3, followers)
    cluster3.start_jobmanager("jm-1")
    cluster3.start_jobmanager("jm-2")
    leader = cluster3.wait_ready(taskmanagers=0)
    server = wait_until(lambda: _zk_server_of(leader, zk3), DEADLINE, message="leader's server")
    others = _quorum_of(zk3, [sid for sid in zk3.client_ports if sid != server])
    cluster3.start_taskmanager("tm-1", quorum=others)
    cluster3.start_taskmanager("tm-2", quorum=others)
    cluster3.wait_ready(taskmanagers=2)
    with cluster3.client(timeout=60) as client:
        kit.submit(client, truth, DONE, "--ticks", "2", "--interval", "0.05")
        assert client.wait(DONE, timeout=DEADLINE).state.value == "FINISHED"
        wait_until(lambda: client.result(DONE).cleanup == "CLEAN", DEADLINE)
        for job_id in LONG:
            kit.submit(client, truth, job_id)
        kit.wait_running(client, truth, LONG, DEADLINE)
        epoch = zk_view3.epoch()

        # When: the leader's server, still a follower, stops, or freezes and is thawed later.
        modes = _modes(zk3)
        assert modes[server] is ServerMode.FOLLOWER, modes
        if hiccup == "stop":
            zk3.stop_server(server)
        else:
            zk3.freeze_server(server)

        def elsewhere() -> int | None:
            now = _zk_server_of(leader, zk3)
            return now if now not in (None, server) else None

        moved = wait_until(
            elsewhere, DEADLINE, interval=0.05, message="leader reconnected to another server"
        )
        if hiccup == "freeze":
            zk3.thaw_server(server)
        assert moved != server

        # Then: the same leader leads, with the same epoch; nothing was restarted.
        ready = cluster3.wait_ready(taskmanagers=2, timeout=DEADLINE)
        assert ready.id == leader.id
        assert kit.role(leader) == "leader"
        assert zk_view3.epoch() == epoch
        view = client.cluster()
        assert view.leader is not None and view.leader.epoch == epoch
        for job_id in LONG:
            job = client.job(job_id)
            assert job.state is JobState.RUNNING, job
            assert job.attempt_count == 1, job
            truth.assert_started_once(job_id)
            truth.assert_no_overlap(job_id)
        # The finished job stays finished: no pointer, no resurrection.
        assert client.job(DONE).state is JobState.FINISHED
        assert not zk_view3.pointer(DONE)
        assert len(truth.starts(DONE)) == 1, truth.runs(DONE)
        assert "leadership revoked" not in leader.log_text()
    cluster3.check_alive()
