"""Seed 001's timeline on a 3-server ensemble: the ZooKeeper server the leading JobManager talks
to is lost (crash, or frozen like a long GC pause). In Flink the leader's connection went
SUSPENDED, it gave up leadership, the standby was granted and an old job came back to life.

Here the leader tolerates SUSPENDED (rule 5): its session moves to another server
within the session timeout, it keeps its term and epoch, and no second leader ever appears.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from ha_harness import (
    SESSION_TIMEOUT,
    Contender,
    Monitor,
    Sampler,
    epoch_version,
    start_contenders,
)

from steward.ha.election import Leadership
from steward.ha.session import ConnectionState, Session
from steward.zookeeper.fourletter import ServerMode
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

_PLACEMENT_ATTEMPTS = 30


@pytest.fixture
def root(cluster_id: str) -> str:
    return f"/steward-tests/{cluster_id}"


@pytest.fixture
def contenders() -> Iterator[list[Contender]]:
    made: list[Contender] = []
    yield made
    for contender in made:
        contender.close()


def server_of(contender: Contender, zk3: ManagedEnsemble) -> int:
    """The id of the ensemble server the contender's session is connected to now."""
    peer = contender.session.connected_to
    assert peer is not None, f"{contender.name} is not connected"
    return zk3.server_for_port(peer[1])


def leader_on_a(
    role: ServerMode, zk3: ManagedEnsemble, root: str, monitor: Monitor, made: list[Contender]
) -> tuple[Contender, int]:
    """JM1, connected to a server in ``role``, and that server's id.

    Kazoo picks a server at random; a session that lands elsewhere is closed and opened again,
    so each test exercises the one case it names.
    """
    modes = {status.server_id: status.mode for status in zk3.status()}
    for _ in range(_PLACEMENT_ATTEMPTS):
        jm1 = Contender("jm-1", zk3.connect_string, root, monitor)
        server = server_of(jm1, zk3)
        if modes[server] is role:
            made.append(jm1)
            jm1.start()
            # Its election contends on a thread of its own: JM1 must lead before JM2 contends.
            wait_until(lambda c=jm1: c.election.leadership, 15, message="jm-1 leads")
            return jm1, server
        jm1.session.close()
    raise AssertionError(f"no session of {_PLACEMENT_ATTEMPTS} landed on a {role}")


@dataclass(frozen=True)
class Term:
    """JM1's term and session as they were before the server was lost."""

    name: str
    epoch: int
    leadership: Leadership
    session_id: int


def current_term(jm1: Contender, monitor: Monitor) -> Term:
    # Read while connected: kazoo reports no session id while the connection is suspended.
    name, epoch = monitor.wait_for_leader()
    leadership, session_id = jm1.election.leadership, jm1.session.session_id
    assert name == jm1.name
    assert leadership is not None
    assert session_id is not None
    return Term(name, epoch, leadership, session_id)


def assert_term_survived(
    before: Term,
    jm1: Contender,
    *,
    lost_server: int,
    zk3: ManagedEnsemble,
    monitor: Monitor,
    reconnect_within: float,
) -> None:
    """The checks both kinds of server loss share, from "the server is gone" on."""
    # Then JM1's connection is SUSPENDED and comes back RECONNECTED on another server, with
    # the same session
    wait_until(
        lambda: jm1.states.heard(ConnectionState.SUSPENDED, ConnectionState.RECONNECTED),
        reconnect_within,
        message=f"jm-1 SUSPENDED then RECONNECTED (heard {jm1.states.states})",
    )
    assert jm1.session.session_id == before.session_id
    assert server_of(jm1, zk3) != lost_server
    assert ConnectionState.LOST not in jm1.states.states
    # And it still leads under the same term: same Leadership, same epoch, and the epoch
    # znode did not move (its fence still writes)
    assert jm1.election.leadership is before.leadership
    assert epoch_version(jm1.session) == before.epoch
    path = f"{jm1.session.layout.jobgraphs}/written-after-the-loss"
    before.leadership.fence.transaction().create(path, b"{}").commit()
    # (seen by a client of the servers still up: JM2 may be on the lost one, not knowing yet)
    healthy = ",".join(
        f"127.0.0.1:{port}" for sid, port in zk3.client_ports.items() if sid != lost_server
    )
    with Session(healthy, jm1.session.layout.root, session_timeout=SESSION_TIMEOUT) as observer:
        assert observer.client.exists(path) is not None
        assert epoch_version(observer) == before.epoch
    assert monitor.grants == [(before.name, before.epoch)]
    assert monitor.revocations == []
    # When JM1 steps down gracefully (queued after RECONNECTED, so the election had its say)
    jm1.election.stop()
    # Then JM2's is the very next term: nobody was granted in between
    # (JM2 may itself still be finding its way off the lost server)
    successor = monitor.wait_for_leader(SESSION_TIMEOUT * 3, other_than="jm-1")
    assert successor == ("jm-2", before.epoch + 1)
    assert monitor.revocations == [("jm-1", before.epoch)]


@pytest.mark.parametrize("role", [ServerMode.FOLLOWER, ServerMode.LEADER], ids=str)
@pytest.mark.parametrize("fault", ["crashes", "freezes"])
def test_leader_keeps_its_term_when_its_zookeeper_server_fails(
    zk3: ManagedEnsemble,
    root: str,
    contenders: list[Contender],
    role: ServerMode,
    fault: str,
) -> None:
    # Given JM1 leads, its session on a ZooKeeper server in this role, and JM2 stands by
    monitor = Monitor()
    jm1, server = leader_on_a(role, zk3, root, monitor, contenders)
    (jm2,) = start_contenders(["jm-2"], zk3.connect_string, root, monitor, contenders)
    before = current_term(jm1, monitor)
    with Sampler([jm1, jm2]) as sampler:
        if fault == "crashes":
            # When that server crashes
            zk3.stop_server(server)
            reconnect_within = SESSION_TIMEOUT * 3
        else:
            # When that server freezes (SIGSTOP: its sockets stay open, it answers nothing),
            # kazoo notices only by its read timeout (2/3 of the session timeout), and a
            # frozen ZooKeeper leader is noticed by the followers only after syncLimit ticks
            # (3 s here) before they elect another: allow for both
            zk3.freeze_server(server)
            reconnect_within = SESSION_TIMEOUT * 4
        # Then JM1 moves to another server and keeps its term (see assert_term_survived)
        assert_term_survived(
            before,
            jm1,
            lost_server=server,
            zk3=zk3,
            monitor=monitor,
            reconnect_within=reconnect_within,
        )
    assert sampler.violations == []
    assert sampler.samples > 0
    assert monitor.overlaps == []
