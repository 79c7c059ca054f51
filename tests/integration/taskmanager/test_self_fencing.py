"""Self-fencing (rule 4): a TaskManager cut off from ZooKeeper for longer than
``fence-after`` kills its attempts well before its session could expire; a shorter outage
costs nothing.

These tests stop the session's shared standalone server, and always restart it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from steward.ha.election import Leadership
from steward.ha.session import ConnectionState, Session
from steward.store.leases import ExecutionLeases
from steward.taskmanager.execution import Executions
from steward.taskmanager.self_fencing import SelfFencing
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper


class Fences:
    """Records when on_fence was called, and kills the TaskManager's attempts like it would."""

    def __init__(self, executions: Executions) -> None:
        self.executions = executions
        self.reasons: list[str] = []
        self.at: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, reason: str) -> None:
        with self._lock:
            self.reasons.append(reason)
            self.at.append(time.monotonic())
        self.executions.kill_all(reason)


@pytest.fixture
def server(zookeeper: ManagedEnsemble) -> Iterator[ManagedEnsemble]:
    """The shared server, serving again after the test whatever the test did to it."""
    yield zookeeper
    zookeeper.start_server(1, wait=False)
    zookeeper.wait_serving(timeout=60.0)


def start_taskmanager(
    tm_session: Callable[..., Session], session_timeout: float, fence_after: float
) -> tuple[Session, ExecutionLeases, Executions, Fences, SelfFencing]:
    session = tm_session("tm-1", session_timeout=session_timeout)
    leases = ExecutionLeases(session, "tm-1")
    executions = Executions(leases, poll_interval=0.05).start_monitor()
    fences = Fences(executions)
    fencing = SelfFencing(session, fence_after, fences).start()
    return session, leases, executions, fences, fencing


def test_a_long_suspension_kills_the_attempts_before_the_session_expires(
    server: ManagedEnsemble, leader: Leadership, tm_session: Callable[..., Session]
) -> None:
    # The session outlives the outage (the server's restart included, a JVM start that takes
    # seconds on a loaded machine), so the lease comes back to the same session.
    session_timeout, fence_after = 10.0, 1.5
    _session, leases, executions, fences, fencing = start_taskmanager(
        tm_session, session_timeout, fence_after
    )
    try:
        group = executions.start("job-a", 0, leader.epoch, ["sleep", "1000"]).group

        stopped_at = time.monotonic()
        server.stop_server(1)
        wait_until(lambda: fences.at, timeout=session_timeout, message="self-fenced")
        assert group.wait_gone(5.0)
        gone_at = time.monotonic()

        assert fences.at[0] - stopped_at >= fence_after * 0.9
        assert gone_at - stopped_at < session_timeout - 2.0, "killed well before expiry"
        assert "suspended" in fences.reasons[0]
        assert group.returncode is not None

        server.start_server(1)
        # Back in touch: the monitor gives the lease of the dead attempt back.
        wait_until(lambda: leases.held("job-a") is None, timeout=30, message="lease released")
        assert fencing.fences == 1
    finally:
        fencing.stop()
        executions.kill_all("test over")
        executions.close()


def test_a_short_suspension_costs_nothing(
    server: ManagedEnsemble, leader: Leadership, tm_session: Callable[..., Session]
) -> None:
    # fence_after leaves room for the restarted server's JVM (about 0.5 s) and kazoo's
    # reconnect, which now and then takes several seconds after the server is back (seen:
    # over 6 s on a loaded 2-core CI machine, and a JVM start of over 20 s on one shared by
    # several test runs). The test waits only as long as it takes, so a generous bound costs
    # nothing when the machine is quick.
    session_timeout, fence_after = 90.0, 60.0
    session, leases, executions, fences, fencing = start_taskmanager(
        tm_session, session_timeout, fence_after
    )
    try:
        execution = executions.start("job-a", 0, leader.epoch, ["sleep", "1000"])
        session_id = session.session_id

        stopped_at = time.monotonic()
        server.stop_server(1)
        wait_until(lambda: fencing.armed, timeout=5, message="suspension noticed")
        server.start_server(1)
        wait_until(
            lambda: session.state is ConnectionState.RECONNECTED,
            timeout=fence_after,
            message="same session reconnected",
        )
        assert time.monotonic() - stopped_at < fence_after, "the outage was short enough"

        # The session's state changes on kazoo's thread; listeners hear of it on the
        # session's dispatch thread, a moment later: wait for the disarm, do not race it.
        wait_until(lambda: not fencing.armed, timeout=5, message="disarmed on RECONNECTED")
        assert fences.reasons == []
        assert execution.group.alive()
        assert session.session_id == session_id
        assert leases.held("job-a") == execution.lease
    finally:
        fencing.stop()
        executions.kill_all("test over")
        executions.close()


def test_a_lost_session_fences_at_once(
    leader: Leadership, tm_session: Callable[..., Session]
) -> None:
    session, _leases, executions, fences, fencing = start_taskmanager(tm_session, 6.0, 1.5)
    try:
        group = executions.start("job-a", 0, leader.epoch, ["sleep", "1000"]).group

        session.close()  # LOST without any suspension first

        wait_until(lambda: fences.reasons, timeout=5, message="fenced on LOST")
        assert "lost" in fences.reasons[0]
        assert group.wait_gone(5.0)
    finally:
        fencing.stop()
        executions.kill_all("test over")
        executions.close()
