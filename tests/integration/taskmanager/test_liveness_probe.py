"""Self-fencing on a frozen ZooKeeper (rule 4): the liveness probe notices the silence.

A frozen server (SIGSTOP) resets no connection, so kazoo reports SUSPENDED only after about
2/3 of the session timeout; counting fence-after from then would be too late. Given a
TaskManager with a session timeout of 10 s and fence-after of 2 s running an attempt, when its
only ZooKeeper server freezes, then the attempt is killed and reported ENDED as self-fenced
within about fence-after, starts are refused while frozen, and accepted again after the thaw.

These tests freeze a ZooKeeper of their own module, and always thaw it.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from rig import Rig
from scripted_leader import start_command

from steward.taskmanager.manager import SELF_FENCED_ERROR
from steward.wire.heartbeat import Rejection
from steward.wire.runner_protocol import FailedEvent
from steward.wire.states import AttemptPhase
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

SESSION_TIMEOUT = 10.0
FENCE_AFTER = 2.0
KAZOO_NOTICES_AFTER = SESSION_TIMEOUT * 2 / 3


@pytest.fixture
def zk_quorum(frozen_zk: ManagedEnsemble) -> str:
    """Every session of these tests (leader, TaskManager) uses the freezable server."""
    return frozen_zk.connect_string


def test_a_frozen_zookeeper_fences_before_the_session_could_expire(
    tmp_path: Path, frozen_zk: ManagedEnsemble, rig: Rig
) -> None:
    leader = rig.scripted()
    manager = rig.taskmanager(
        "tm-1",
        **{
            "high-availability.zookeeper.session-timeout": f"{SESSION_TIMEOUT:g}s",
            "taskmanager.fence-after": f"{FENCE_AFTER:g}s",
        },
    )
    gate = str(tmp_path / "never")
    leader.command(start_command(rig.blobs, "job-f", leader.epoch, args=[gate]))
    running = leader.wait_phase("job-f", AttemptPhase.RUNNING)
    runner = manager.attempts.get("job-f", 1)
    assert runner is not None and runner.runner is not None

    frozen_at = time.monotonic()
    frozen_zk.freeze_server(1)

    ended = leader.wait_phase("job-f", AttemptPhase.ENDED, timeout=SESSION_TIMEOUT)
    fenced_after = time.monotonic() - frozen_at
    assert isinstance(ended.outcome, FailedEvent)
    assert ended.outcome.error.type == SELF_FENCED_ERROR
    assert "round trip" in ended.outcome.error.message
    # The deadline runs from the start of the last good round trip, which may be up to one
    # probe period (fence-after / 4) before the freeze: earlier than fence-after is right.
    probe_period = FENCE_AFTER / 4
    assert FENCE_AFTER - probe_period - 0.1 <= fenced_after < KAZOO_NOTICES_AFTER - 1.0, (
        fenced_after
    )
    assert runner.runner.wait_gone(0.1), "the whole group is gone when reported ENDED"
    assert ended.pid == running.pid

    leader.command(start_command(rig.blobs, "job-g", leader.epoch, args=[gate]))
    refused = leader.wait_phase("job-g", AttemptPhase.REJECTED)
    assert refused.rejection is Rejection.FENCED

    frozen_zk.thaw_server(1)

    wait_until(lambda: not manager.fenced, 15, message="fencing lifted after the thaw")
    wait_until(lambda: manager.leases.held("job-f") is None, 15, message="lease released")
    leader.command(start_command(rig.blobs, "job-h", leader.epoch, args=[gate]))
    leader.wait_phase("job-h", AttemptPhase.RUNNING)
