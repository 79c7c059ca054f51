"""A frozen ZooKeeper server costs a TaskManager (or JobManager) a reconnect, not its attempts.

The liveness probe fences after ``fence_after`` without a round trip (rule 4). A frozen server
answers nothing and resets nothing, and kazoo would notice only by its own ping, which the
probe's steady requests put off: the probe itself must leave the silent server, well inside
``fence_after``, for another server of the ensemble, with the same session (issue 15, seed
001's complaint moved to the TaskManager). A real 3-server ensemble; the session is placed on
a follower (a frozen leader is the campaigns' business: the ensemble must elect another).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from steward import clock
from steward.ha.liveness import LivenessProbe
from steward.ha.session import Session
from steward.zookeeper.fourletter import ServerMode
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

SESSION_TIMEOUT = 4.0
FENCE_AFTER = 2.4  # the default share (0.6) of the session timeout
_PLACEMENT_ATTEMPTS = 30


@pytest.fixture
def on_a_follower(zk3: ManagedEnsemble, cluster_id: str) -> Iterator[tuple[Session, int]]:
    """A session connected to a follower of the ensemble, and that server's id."""
    followers = {s.server_id for s in zk3.status() if s.mode is ServerMode.FOLLOWER}
    for _ in range(_PLACEMENT_ATTEMPTS):
        session = Session(
            zk3.connect_string, f"/steward-tests/{cluster_id}", session_timeout=SESSION_TIMEOUT
        ).start()
        peer = session.connected_to
        if peer is not None and zk3.server_for_port(peer[1]) in followers:
            server = zk3.server_for_port(peer[1])
            try:
                yield session, server
            finally:
                zk3.thaw_server(server)
                session.close()
            return
        session.close()
    raise AssertionError(f"no session of {_PLACEMENT_ATTEMPTS} landed on a follower")


def test_a_frozen_server_is_left_for_another_before_fencing(
    zk3: ManagedEnsemble, on_a_follower: tuple[Session, int]
) -> None:
    session, server = on_a_follower
    fenced: list[str] = []
    probe = LivenessProbe(session, FENCE_AFTER, fenced.append).start()
    try:
        before = session.session_id
        frozen_at = clock.now()
        zk3.freeze_server(server)  # SIGSTOP: its sockets stay open, it answers nothing

        # A round trip succeeds after the moment the probe would have fenced, on another server
        wait_until(
            lambda: probe.last_success > frozen_at + FENCE_AFTER,
            FENCE_AFTER * 4,
            message="the probe answered again after fence-after",
        )
        assert fenced == []
        assert probe.fences == 0
        assert probe.failovers == 1
        peer = session.connected_to
        assert peer is not None and zk3.server_for_port(peer[1]) != server
        assert session.session_id == before  # the same session: its leases survive
    finally:
        probe.stop()
