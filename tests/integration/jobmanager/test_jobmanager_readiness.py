"""A standby's ``/readyz``: 503 with the reason until it could take over a crash at once.

In-process JobManagers on a real ZooKeeper. The leader here is a stand-in whose published
REST address is a socket this test controls: bound but not listening (a connect is refused,
as for a leader this standby never saw alive), then listening (it accepts).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from jobmanager_harness import JobManagerCluster

from steward.jobmanager.manager import JobManager
from steward.wire.records import LeaderInfo
from support import wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def leader_port() -> Iterator[socket.socket]:
    """A bound socket (refusing until the test calls ``listen``)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock


def _publish_stand_in_leader(
    cluster: JobManagerCluster, port: int, host: str = "127.0.0.1"
) -> None:
    """A contender first in line whose ``leader/info`` names ``port``, on a session of its own."""
    holder = cluster.fake_latch_holder()
    info = LeaderInfo(contender="jm-squatter", address=f"http://{host}:{port}", epoch=1)
    holder.create(cluster.layout.leader_info, info.to_json(), ephemeral=True, makepath=True)


def _readyz(cluster: JobManagerCluster, manager: JobManager) -> tuple[int, str]:
    answer = cluster.get(manager, "/readyz")
    return answer.status_code, answer.json().get("message", "")


def test_a_standby_is_not_ready_until_its_crash_detector_saw_the_leader_alive(
    cluster: JobManagerCluster, leader_port: socket.socket
) -> None:
    # Given a leader whose published port refuses (never seen alive from here)
    _publish_stand_in_leader(cluster, leader_port.getsockname()[1])
    standby = cluster.start("jm-2")
    wait_until(lambda: standby.leader() is not None, 10, message="jm-2 knows the leader")
    wait_until(lambda: standby.election.in_line, 10, message="jm-2 in line")
    detector = standby.crash_detector
    assert detector is not None
    probes = detector.probes
    wait_until(lambda: detector.probes >= probes + 3, 10, message="jm-2 probed the leader")
    # Then the standby says it is not ready, and why
    status, message = _readyz(cluster, standby)
    assert status == 503
    assert "crash detector has not yet seen leader jm-squatter" in message
    # When the leader's port accepts a probe
    leader_port.listen(16)
    # Then the standby is ready
    wait_until(lambda: _readyz(cluster, standby)[0] == 200, 10, message="jm-2 ready")
    assert cluster.get(standby, "/readyz").json()["role"] == "standby"


def test_a_standby_out_of_line_is_not_ready(
    cluster: JobManagerCluster, leader_port: socket.socket
) -> None:
    # Given a ready standby of a live leader
    leader_port.listen(16)
    _publish_stand_in_leader(cluster, leader_port.getsockname()[1])
    standby = cluster.start("jm-2")
    wait_until(lambda: _readyz(cluster, standby)[0] == 200, 10, message="jm-2 ready")
    # When it leaves the election (no latch of its own: a release would never reach it)
    standby.election.stop()
    # Then it is not ready, and says why
    status, message = _readyz(cluster, standby)
    assert status == 503
    assert message == "not yet in line for leadership (no latch node)"


def test_a_standby_of_a_leader_advertising_a_wildcard_is_ready_once_in_line(
    cluster: JobManagerCluster, leader_port: socket.socket
) -> None:
    # Given a leader that advertises a wildcard: no detector can ever probe it
    _publish_stand_in_leader(cluster, leader_port.getsockname()[1], host="0.0.0.0")
    standby = cluster.start("jm-2")
    # Then its standby is ready once in line with the leader known (never ready would take a
    # working standby out of every load balancer; a crash waits for the session either way)
    wait_until(lambda: _readyz(cluster, standby)[0] == 200, 10, message="jm-2 ready")
    detector = standby.crash_detector
    assert detector is not None
    leader = standby.leader()
    assert leader is not None
    assert not detector.armed_for(leader)
