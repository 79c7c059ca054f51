"""A standby that answers ``/readyz`` can take over a crash at once (issue 22's regression).

``benchmarks/spark_peer.py`` kills the leader as soon as every JobManager answers ``/readyz``.
A standby started after a graceful handoff used to answer it before it had joined the
election or its crash detector had seen the leader accept a probe; the detector then (rightly)
ignored the dead leader's refusals and the takeover waited for the whole session timeout.

The session timeout is 20 s here, so a takeover in under 8 s can only come from the crash
detector of a standby that was really ready: the test fails when ``/readyz`` says ready early.
(A takeover by the detector takes about a second; at a load of 12 it once took 4.45 s, so the
session is long enough to leave that margin.)
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.testing.processes import Proc, ProcessCluster
from support import wait_until

pytestmark = pytest.mark.zookeeper

SESSION_TIMEOUT = 20.0


@pytest.fixture
def cluster(tmp_path: Path, zk_quorum: str, cluster_id: str) -> Iterator[ProcessCluster]:
    with ProcessCluster(
        tmp_path, zk_quorum, cluster_id, session_timeout=f"{SESSION_TIMEOUT:.0f}s"
    ) as cluster:
        yield cluster


def _ready(cluster: ProcessCluster, proc: Proc) -> bool:
    cluster.check_alive()
    return cluster.is_ready(proc)


def test_a_standby_restarted_after_a_handoff_takes_over_a_crash_as_soon_as_it_says_ready(
    cluster: ProcessCluster,
) -> None:
    # Given a leader that took over from a gracefully stopped one
    first = cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    second = cluster.start_jobmanager("jm-2")
    wait_until(lambda: _ready(cluster, second), 30, "jm-2 ready")
    first.signal(signal.SIGTERM)
    first.popen.wait(30)
    cluster.forget_stopped()
    leader = cluster.wait_ready(taskmanagers=0, timeout=30)
    assert leader.id == "jm-2"
    # And a standby started after the handoff, watched closely for its first "ready"
    standby = cluster.start_jobmanager("jm-3")
    wait_until(lambda: _ready(cluster, standby), 30, "jm-3 says ready", interval=0.005)
    # When the leader's process dies the moment the standby says ready
    killed = time.monotonic()
    leader.signal(signal.SIGKILL)
    leader.popen.wait(10)
    cluster.forget_stopped()
    new_leader = cluster.wait_ready(taskmanagers=0, timeout=SESSION_TIMEOUT * 3)
    took = time.monotonic() - killed
    # Then the standby leads long before the dead leader's session could expire
    assert new_leader.id == "jm-3"
    assert took < SESSION_TIMEOUT * 0.4, f"takeover took {took:.2f}s"
    assert "refuses connections" in new_leader.log_text()
