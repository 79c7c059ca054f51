"""Leader election against a real ZooKeeper: one leader at a time, epochs that only grow,
fast graceful handover, and the SUSPENDED-tolerance rule (rules 1 and 5).

Every test shares a :class:`Monitor` between its contenders: the grant and revoke callbacks
count holders under one lock, so two contenders holding leadership at once is caught at the
instant it happens; a sampler thread checks the contenders' own flags in between.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from ha_harness import (
    SESSION_TIMEOUT,
    Contender,
    Monitor,
    Sampler,
    epoch_version,
    expire_session,
    leader_info,
    restart_server,
    restart_tolerant,
    start_contenders,
)

from steward.errors import FencedError
from steward.ha.election import in_line
from steward.ha.session import ConnectionState, Session
from steward.wire.records import ContenderInfo
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def root(cluster_id: str) -> str:
    return f"/steward-tests/{cluster_id}"


@pytest.fixture
def monitor() -> Monitor:
    return Monitor()


@pytest.fixture
def contenders() -> Iterator[list[Contender]]:
    """Every contender a test makes; all stopped and closed after it."""
    made: list[Contender] = []
    yield made
    for contender in made:
        contender.close()


@pytest.fixture
def observer(zk_quorum: str, root: str) -> Iterator[Session]:
    session = Session(zk_quorum, root, session_timeout=SESSION_TIMEOUT, name="observer").start()
    yield session
    session.close()


# ---------------------------------------------------------------- election


def test_three_contenders_elect_exactly_one_leader_named_in_leader_info(
    zk_quorum: str, root: str, monitor: Monitor, contenders: list[Contender], observer: Session
) -> None:
    # Given three contenders started together
    trio = start_contenders(["jm-1", "jm-2", "jm-3"], zk_quorum, root, monitor, contenders)
    with Sampler(trio) as sampler:
        # When the election settles
        name, epoch = monitor.wait_for_leader()
        # Then exactly one leads, and leader/info names it and its epoch
        wait_until(lambda: leader_info(observer) is not None, 5, message="leader/info written")
        info = leader_info(observer)
        assert info is not None
        assert (info.contender, info.epoch, info.address) == (name, epoch, f"http://{name}:8081")
        assert epoch == epoch_version(observer) == 1
        leaders = [c for c in trio if c.election.is_leader]
        assert [c.name for c in leaders] == [name]
        leadership = leaders[0].election.leadership
        assert leadership is not None
        assert (leadership.contender, leadership.epoch) == (name, epoch)

        # And every contender has one latch (each joins on its own thread: the last may join
        # after the first has been elected)
        def latches() -> list[str]:
            return list(observer.client.get_children(observer.layout.leader_latch))

        wait_until(lambda: len(latches()) >= 3, 5, message="three latches")
        assert len(latches()) == 3
        wait_until(lambda: sampler.samples > 50, 5, message="sampler ran")
    assert sampler.violations == []
    assert monitor.overlaps == []
    assert monitor.grants == [(name, 1)]


def test_expired_leader_session_elects_another_contender_with_a_higher_epoch(
    zk_quorum: str, root: str, monitor: Monitor, contenders: list[Contender], observer: Session
) -> None:
    # Given three contenders with a settled leader
    trio = start_contenders(["jm-1", "jm-2", "jm-3"], zk_quorum, root, monitor, contenders)
    first, first_epoch = monitor.wait_for_leader()
    leader = next(c for c in trio if c.name == first)
    old_session = leader.session.session_id
    with Sampler(trio) as sampler:
        # When the leader's ZooKeeper session expires
        expire_session(leader.session)
        # Then another contender is granted with a higher epoch and leader/info names it
        second, second_epoch = monitor.wait_for_leader(other_than=first)
        assert second_epoch > first_epoch
        wait_until(
            lambda: (info := leader_info(observer)) and info.contender == second,
            5,
            message="leader/info names the new leader",
        )
        info = leader_info(observer)
        assert info is not None
        assert info.epoch == second_epoch == epoch_version(observer)
        # And the old leader heard LOST, was revoked, and contends again on a new session
        wait_until(lambda: (first, first_epoch) in monitor.revocations, 10, message="revoked")
        wait_until(lambda: leader.states.heard(ConnectionState.LOST, ConnectionState.CONNECTED), 10)
        assert leader.session.session_id != old_session
        assert not leader.election.is_leader
        wait_until(
            lambda: len(observer.client.get_children(observer.layout.leader_latch)) == 3,
            10,
            message="the old leader contends again",
        )
    # A leader whose session ZooKeeper expired learns so only when it next reaches ZooKeeper,
    # and a tolerant one keeps leading while merely SUSPENDED: the next leader's grant may come
    # first. That overlap is what rule 5 accepts, because the old epoch is fenced (see
    # test_fencing.py). It must only ever be the expired leader's old term against the new one.
    assert all(sorted(pair) == sorted([first, second]) for pair in sampler.violations)
    assert set(monitor.overlaps) <= {
        f"{second} granted epoch {second_epoch} while {{'{first}': {first_epoch}}}"
    }
    assert monitor.grants == [(first, first_epoch), (second, second_epoch)]


def test_graceful_stop_hands_over_well_before_the_session_timeout(
    zk_quorum: str, root: str, monitor: Monitor, contenders: list[Contender], observer: Session
) -> None:
    # Given a leader and two standbys
    trio = start_contenders(["jm-1", "jm-2", "jm-3"], zk_quorum, root, monitor, contenders)
    first, first_epoch = monitor.wait_for_leader()
    leader = next(c for c in trio if c.name == first)
    with Sampler(trio) as sampler:
        # When the leader stops gracefully
        started = time.monotonic()
        leader.election.stop()
        # Then a standby's leader/info appears long before a session timeout could pass
        info = wait_until(
            lambda: (info := leader_info(observer)) and info.contender != first and info,
            SESSION_TIMEOUT,
            interval=0.005,
            message="the next leader's info",
        )
        handover = time.monotonic() - started
        assert handover < SESSION_TIMEOUT / 4, f"handover took {handover:.3f}s"
        assert info.epoch == first_epoch + 1
        # And the stopped contender is revoked, no longer contends, and its session lives on
        assert (first, first_epoch) in monitor.revocations
        assert leader.session.connected
        latches = observer.client.get_children(observer.layout.leader_latch)
        assert len(latches) == 2
    assert sampler.violations == []
    assert monitor.overlaps == []


def test_standby_stop_leaves_the_leader_alone(
    zk_quorum: str, root: str, monitor: Monitor, contenders: list[Contender], observer: Session
) -> None:
    # Given a leader and a standby
    pair = start_contenders(["jm-1", "jm-2"], zk_quorum, root, monitor, contenders)
    name, epoch = monitor.wait_for_leader()
    standby = next(c for c in pair if c.name != name)
    # When the standby stops
    standby.election.stop()
    # Then its latch is gone and the leader keeps its term
    wait_until(
        lambda: len(observer.client.get_children(observer.layout.leader_latch)) == 1,
        5,
        message="standby latch deleted",
    )
    assert monitor.leader() == (name, epoch)
    assert monitor.revocations == []
    assert epoch_version(observer) == epoch


def test_leader_whose_latch_is_deleted_steps_down(
    zk_quorum: str, root: str, monitor: Monitor, contenders: list[Contender], observer: Session
) -> None:
    # Given a leader and a standby
    pair = start_contenders(["jm-1", "jm-2"], zk_quorum, root, monitor, contenders)
    first, first_epoch = monitor.wait_for_leader()
    leader = next(c for c in pair if c.name == first)

    # (the standby's latch must exist first, or the old leader could win again alone)
    def both_latches() -> list[str] | None:
        names = in_line(observer.client.get_children(observer.layout.leader_latch))
        return names if len(names) == 2 else None

    latches = wait_until(both_latches, 5, message="both latches created")
    old_term = leader.election.leadership
    assert old_term is not None
    # When an operator deletes the leader's latch
    observer.client.delete(f"{observer.layout.leader_latch}/{latches[0]}")
    # Then the standby is granted the next epoch and the old leader is revoked. The two
    # sessions hear the deletion independently, so the grant may come first: what keeps
    # them safe is the epoch, which fences every write of the old term from the grant on.
    second, second_epoch = monitor.wait_for_leader(other_than=first)
    assert (second, second_epoch) == (next(c.name for c in pair if c is not leader), 2)
    with pytest.raises(FencedError):
        old_term.fence.transaction().create(f"{observer.layout.leader_latch}-stale", b"").commit()
    wait_until(lambda: (first, first_epoch) in monitor.revocations, 5, message="old leader revoked")
    # And the old leader contends again behind it
    wait_until(
        lambda: len(observer.client.get_children(observer.layout.leader_latch)) == 2,
        5,
        message="old leader re-contends",
    )
    assert not leader.election.is_leader
    # (an overlap of callbacks, if any, is only the new term granted before the old one
    # heard, never an older epoch granted after a newer one)
    assert all(f"granted epoch {second_epoch} while" in o for o in monitor.overlaps)


def test_contender_adopts_its_latch_left_by_a_create_whose_reply_was_lost(
    zk_quorum: str, root: str, monitor: Monitor, contenders: list[Contender], observer: Session
) -> None:
    # Given a leader, and a second process whose session already holds a latch with its data:
    # what a latch create leaves when the connection drops before its reply arrives
    (leader,) = start_contenders(["jm-1"], zk_quorum, root, monitor, contenders)
    first, first_epoch = monitor.wait_for_leader()
    late = Contender("jm-2", zk_quorum, root, monitor)
    contenders.append(late)
    orphan = late.session.client.create(
        f"{late.session.layout.leader_latch}/latch-",
        ContenderInfo(contender="jm-2", address=late.address).to_json(),
        ephemeral=True,
        sequence=True,
    )
    # When it contends, and the leader steps down
    late.start()
    leader.election.stop()
    # Then it takes over through that latch instead of queueing behind its own node forever
    assert monitor.wait_for_leader(timeout=5, other_than=first) == ("jm-2", first_epoch + 1)
    assert observer.client.get_children(observer.layout.leader_latch) == [orphan.rsplit("/")[-1]]


def test_epochs_strictly_increase_across_many_terms(
    zk_quorum: str, root: str, monitor: Monitor, contenders: list[Contender], observer: Session
) -> None:
    # Given two contenders, and a new one joining every time the leader steps down
    live = start_contenders(["jm-0", "jm-1"], zk_quorum, root, monitor, contenders)
    terms = 8
    for term in range(terms):
        name, epoch = monitor.wait_for_leader()
        leader = next(c for c in live if c.name == name)
        # When the leader steps down and a newcomer joins
        leader.election.stop()
        live.remove(leader)
        live += start_contenders([f"jm-{term + 2}"], zk_quorum, root, monitor, contenders)
        wait_until(
            lambda e=epoch: (leader := monitor.leader()) is not None and leader[1] > e,
            10,
            message=f"a term after epoch {epoch}",
        )
    # Then every grant had a higher epoch than the one before, one step at a time
    epochs = monitor.granted_epochs()
    assert len(epochs) == terms + 1
    assert epochs == sorted(set(epochs))
    assert epochs == list(range(1, terms + 2))
    assert epoch_version(observer) == epochs[-1]
    assert monitor.overlaps == []


def test_epoch_continues_after_the_whole_cluster_restarts(
    zk_quorum: str, root: str, monitor: Monitor, contenders: list[Contender], observer: Session
) -> None:
    # Given a cluster that went through a few terms
    first_run = start_contenders(["jm-1", "jm-2"], zk_quorum, root, monitor, contenders)
    for _ in range(3):
        name, epoch = monitor.wait_for_leader()
        leader = next(c for c in first_run if c.name == name)
        expire_session(leader.session)
        wait_until(
            lambda e=epoch: (leader := monitor.leader()) is not None and leader[1] > e,
            10,
            message=f"a term after epoch {epoch}",
        )
    _name, last_epoch = monitor.wait_for_leader()
    # When every process goes away at once (sessions closed, as on a crash of the hosts)
    for contender in first_run:
        contender.session.close()
    wait_until(lambda: monitor.leader() is None, 10, message="everybody revoked")
    wait_until(
        lambda: leader_info(observer) is None, 10, message="leader/info gone with the leader"
    )
    # And a new cluster starts on new sessions
    second_run = start_contenders(["jm-a", "jm-b", "jm-c"], zk_quorum, root, monitor, contenders)
    name, epoch = monitor.wait_for_leader()
    # Then the epoch continues from where the first run left it
    assert epoch == last_epoch + 1
    assert name in {c.name for c in second_run}
    wait_until(lambda: (info := leader_info(observer)) and info.epoch == epoch, 5)
    assert epoch_version(observer) == epoch
    epochs = monitor.granted_epochs()
    assert epochs == sorted(set(epochs))


# ---------------------------------------------------------------- SUSPENDED tolerance


def test_tolerant_leader_keeps_its_term_through_a_server_restart(
    stoppable_zookeeper: ManagedEnsemble, root: str, monitor: Monitor, contenders: list[Contender]
) -> None:
    # Given a leader and a standby that both tolerate SUSPENDED
    quorum = restart_tolerant(stoppable_zookeeper.connect_string)
    pair = start_contenders(["jm-1", "jm-2"], quorum, root, monitor, contenders)
    name, epoch = monitor.wait_for_leader()
    leader = next(c for c in pair if c.name == name)
    standby = next(c for c in pair if c.name != name)
    leadership = leader.election.leadership
    session_id = leader.session.session_id
    with Sampler(pair) as sampler:
        # When the ZooKeeper server stops and comes back within the session timeout
        stoppable_zookeeper.stop_server(1)
        wait_until(lambda: leader.states.heard(ConnectionState.SUSPENDED), 10, message="SUSPENDED")
        wait_until(lambda: standby.states.heard(ConnectionState.SUSPENDED), 10)
        # (while suspended, the leader still leads)
        assert leader.election.leadership is leadership
        restart_server(stoppable_zookeeper, 1)
        for contender in pair:
            wait_until(
                lambda c=contender: c.states.heard(ConnectionState.RECONNECTED),
                10,
                message=f"{contender.name} RECONNECTED",
            )
        # Then the leader kept its session, its term and its epoch
        assert leader.session.session_id == session_id
        # Its fence still writes: the epoch did not move while it was away
        assert leadership is not None
        leadership.fence.transaction().create(f"{root}/after-restart", b"1").commit()
        # A graceful stop now is the first revocation, and hands over to the very next epoch
        leader.election.stop()
        monitor.wait_for_leader(other_than=name)
    assert sampler.violations == []
    assert monitor.overlaps == []
    assert monitor.grants == [(name, epoch), (standby.name, epoch + 1)]
    assert monitor.revocations == [(name, epoch)]
    assert ConnectionState.LOST not in leader.states.states


def test_tolerant_leader_is_revoked_only_when_its_session_is_lost(
    zk_quorum: str, root: str, monitor: Monitor, contenders: list[Contender], observer: Session
) -> None:
    # Given a tolerant leader and a tolerant standby
    pair = start_contenders(["jm-1", "jm-2"], zk_quorum, root, monitor, contenders)
    first, first_epoch = monitor.wait_for_leader()
    leader = next(c for c in pair if c.name == first)
    # When the leader's session expires (the connection drops, then the session is gone)
    expire_session(leader.session)
    # Then the other contender is granted with a higher epoch
    second, second_epoch = monitor.wait_for_leader(other_than=first)
    assert second != first
    assert second_epoch > first_epoch
    wait_until(lambda: (first, first_epoch) in monitor.revocations, 10, message="old revoked")
    # And the old leader's revocation came after it heard LOST, not at SUSPENDED
    revoked_at = monitor.index((first, f"revoked {first_epoch}"))
    lost_at = monitor.index((first, str(ConnectionState.LOST)))
    assert lost_at < revoked_at, monitor.timeline
    assert epoch_version(observer) == second_epoch


def test_tolerant_leader_cut_off_past_its_session_timeout_leads_until_it_hears_lost(
    zk3: ManagedEnsemble, root: str, monitor: Monitor, contenders: list[Contender]
) -> None:
    # Given a tolerant leader that can only reach ZooKeeper server 1, and a standby that can
    # reach all three servers
    only_server_1 = f"127.0.0.1:{zk3.client_ports[1]}"
    (leader,) = start_contenders(["jm-1"], only_server_1, root, monitor, contenders)
    first, first_epoch = monitor.wait_for_leader()
    (standby,) = start_contenders(["jm-2"], zk3.connect_string, root, monitor, contenders)
    # When server 1 goes away for longer than the session timeout
    zk3.stop_server(1)
    wait_until(lambda: leader.states.heard(ConnectionState.SUSPENDED), 10, message="SUSPENDED")
    # Then the ensemble expires the leader's session and grants the standby a higher epoch
    second, second_epoch = monitor.wait_for_leader(SESSION_TIMEOUT * 4, other_than=first)
    assert (second, second_epoch) == (standby.name, first_epoch + 1)
    # And the cut-off leader, still SUSPENDED, has not been revoked: it cannot know yet, and
    # its stale epoch is fenced (rule 5)
    assert leader.election.is_leader
    assert monitor.revocations == []
    # When server 1 comes back
    restart_server(zk3, 1)
    # Then the old leader hears LOST and only then is revoked
    wait_until(lambda: (first, first_epoch) in monitor.revocations, 15, message="revoked")
    lost_at = monitor.index((first, str(ConnectionState.LOST)))
    assert lost_at < monitor.index((first, f"revoked {first_epoch}")), monitor.timeline
    assert not leader.election.is_leader
    assert monitor.leader() == (second, second_epoch)


def test_intolerant_leader_is_revoked_on_suspension_and_a_later_term_follows(
    stoppable_zookeeper: ManagedEnsemble, root: str, monitor: Monitor, contenders: list[Contender]
) -> None:
    # Given a leader and a standby that do not tolerate SUSPENDED
    quorum = restart_tolerant(stoppable_zookeeper.connect_string)
    pair = start_contenders(
        ["jm-1", "jm-2"], quorum, root, monitor, contenders, tolerate_suspended=False
    )
    first, first_epoch = monitor.wait_for_leader()
    with Sampler(pair) as sampler:
        # When the ZooKeeper server stops
        stoppable_zookeeper.stop_server(1)
        # Then the leader is revoked at once, while the server is still down
        wait_until(lambda: (first, first_epoch) in monitor.revocations, 10, message="revoked")
        assert not stoppable_zookeeper.status()[0].running
        assert monitor.leader() is None
        # When the server comes back
        restart_server(stoppable_zookeeper, 1)
        # Then a leader (maybe another one) is granted with a higher epoch, and leader/info
        # and the epoch znode name the newest term. Under load a second connection blip after
        # the restart (its SUSPENDED heard by the monitor before the election acts on it) may
        # end a term just granted and start another, as an intolerant contender should: the
        # wait follows the newest term rather than the first one seen.
        monitor.wait_for_leader()
        checker = Session(quorum, root, session_timeout=SESSION_TIMEOUT).start()
        try:
            name, epoch = wait_until(
                lambda: (
                    (leader := monitor.leader())
                    and (info := leader_info(checker))
                    and info.epoch == leader[1]
                    and epoch_version(checker) == leader[1]
                    and leader
                ),
                10,
                message="leader/info and the epoch name the newest term",
            )
        finally:
            checker.close()
        assert epoch > first_epoch
    assert name in {c.name for c in pair}
    assert sampler.violations == []
    assert monitor.overlaps == []
