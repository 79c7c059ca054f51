"""Leader retrieval against a real ZooKeeper: who leads, its address and epoch, and "nobody"."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from ha_harness import SESSION_TIMEOUT, expire_session

from steward.ha.election import LeaderElection
from steward.ha.retrieval import LeaderRetrieval
from steward.ha.session import ConnectionState, Session
from steward.wire.records import LeaderInfo
from support import wait_until

pytestmark = pytest.mark.zookeeper

OpenSession = Callable[[str], Session]


class LeaderLog:
    """A retrieval listener that records every report, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reports: list[LeaderInfo | None] = []

    def __call__(self, info: LeaderInfo | None) -> None:
        with self._lock:
            self._reports.append(info)

    @property
    def reports(self) -> list[LeaderInfo | None]:
        with self._lock:
            return list(self._reports)

    def named(self) -> list[tuple[str, str, int] | None]:
        return [(i.contender, i.address, i.epoch) if i else None for i in self.reports]


def reported(log: LeaderLog) -> list[tuple[str, str, int]]:
    """The leaders ``log`` heard of, in order: its listener is called after
    ``wait_for_leader`` may have returned, so a test waits for a report, never reads it at once."""
    return [report for report in log.named() if report is not None]


@pytest.fixture
def root(cluster_id: str) -> str:
    return f"/steward-tests/{cluster_id}"


@pytest.fixture
def sessions(zk_quorum: str, root: str) -> Iterator[list[Session]]:
    """Every session a test opens, closed after it."""
    opened: list[Session] = []
    yield opened
    for session in opened:
        session.close()


@pytest.fixture
def new_session(zk_quorum: str, root: str, sessions: list[Session]) -> OpenSession:
    """Opens a started session named after its process; closed after the test."""

    def open_session(name: str) -> Session:
        session = Session(zk_quorum, root, session_timeout=SESSION_TIMEOUT, name=name).start()
        sessions.append(session)
        return session

    return open_session


@pytest.fixture
def elections() -> Iterator[list[LeaderElection]]:
    started: list[LeaderElection] = []
    yield started
    for election in started:
        election.stop()


Contend = Callable[[str], LeaderElection]


@pytest.fixture
def contend(new_session: OpenSession, elections: list[LeaderElection]) -> Contend:
    """Starts contender ``name`` (address ``http://<name>:8081``) on a session of its own."""

    def _contend(name: str) -> LeaderElection:
        election = LeaderElection(new_session(name), name, f"http://{name}:8081").start()
        elections.append(election)
        return election

    return _contend


def following(new_session: OpenSession) -> tuple[LeaderRetrieval, LeaderLog]:
    """A started retrieval on the session "client", and the log of what it reports."""
    log = LeaderLog()
    return LeaderRetrieval(new_session("client"), log).start(), log


def test_reports_the_leader_with_its_address_and_epoch_and_follows_changes(
    new_session: OpenSession, contend: Contend
) -> None:
    # Given a retrieval and two contenders
    retrieval, log = following(new_session)
    first = contend("jm-1")
    wait_until(lambda: first.is_leader, 10, message="jm-1 leads")
    contend("jm-2")
    # When the leader is known
    info = retrieval.wait_for_leader(5)
    # Then it is reported with its address and epoch
    assert info is not None
    assert (info.contender, info.address, info.epoch) == ("jm-1", "http://jm-1:8081", 1)
    assert retrieval.leader == info
    # When the leader hands over
    first.stop()
    # Then the new leader and its epoch are reported
    info = retrieval.wait_for_leader(5, lambda i: i.contender == "jm-2")
    assert info is not None
    assert (info.contender, info.address, info.epoch) == ("jm-2", "http://jm-2:8081", 2)
    both = [("jm-1", "http://jm-1:8081", 1), ("jm-2", "http://jm-2:8081", 2)]
    wait_until(lambda: reported(log) == both, 5, message=f"{both} reported")


def test_reports_none_while_nobody_leads_then_the_next_leader(
    new_session: OpenSession, contend: Contend
) -> None:
    # Given a retrieval following the only contender
    retrieval, log = following(new_session)
    only = contend("jm-1")
    assert retrieval.wait_for_leader(10) is not None
    # When it stops gracefully
    only.stop()
    # Then "no leader" is reported
    wait_until(lambda: log.reports and log.reports[-1] is None, 5, message="None reported")
    assert retrieval.leader is None
    assert retrieval.wait_for_leader(0.2) is None
    # When another contender starts
    contend("jm-2")
    # Then it is reported, with the next epoch
    info = retrieval.wait_for_leader(10)
    assert info is not None
    assert (info.contender, info.epoch) == ("jm-2", 2)
    reports = [("jm-1", "http://jm-1:8081", 1), None, ("jm-2", "http://jm-2:8081", 2)]
    wait_until(lambda: log.named() == reports, 5, message=f"{reports} reported")


def test_started_before_any_leader_reports_the_first_one(
    new_session: OpenSession, contend: Contend
) -> None:
    # Given a retrieval on a cluster with no leader yet
    retrieval, log = following(new_session)
    assert retrieval.leader is None
    # When a contender is elected
    contend("jm-1")
    # Then the retrieval reports it
    info = retrieval.wait_for_leader(10)
    assert info is not None
    assert info.contender == "jm-1"
    first = [("jm-1", "http://jm-1:8081", 1)]
    wait_until(lambda: reported(log) == first, 5, message=f"{first} reported")


def test_wait_for_leader_waits_for_the_predicate(
    new_session: OpenSession, contend: Contend
) -> None:
    # Given a retrieval following jm-1 at epoch 1
    retrieval = LeaderRetrieval(new_session("client")).start()
    first = contend("jm-1")
    assert retrieval.wait_for_leader(10) is not None
    # When nothing changes, waiting for a later epoch times out with the current leader
    current = retrieval.wait_for_leader(0.3, lambda info: info.epoch >= 2)
    assert current is not None
    assert current.epoch == 1
    # When the term changes
    contend("jm-2")
    first.stop()
    # Then the wait returns the leader of the later epoch
    later = retrieval.wait_for_leader(10, lambda info: info.epoch >= 2)
    assert later is not None
    assert (later.contender, later.epoch) == ("jm-2", 2)


def test_unreadable_leader_info_is_no_leader_and_does_not_stop_the_watch(
    new_session: OpenSession,
) -> None:
    # Given a retrieval, and leader/info written by something that is not a Steward leader
    operator = new_session("operator")
    retrieval, _ = following(new_session)
    operator.client.create(operator.layout.leader_info, b"\x80 not json")
    # Then no leader is reported
    assert retrieval.wait_for_leader(0.3) is None
    # When a valid leader/info replaces it
    valid = LeaderInfo(contender="jm-9", address="http://jm-9:8081", epoch=4)
    operator.client.set(operator.layout.leader_info, valid.to_json())
    # Then it is reported: the watch survived the bad payload
    assert retrieval.wait_for_leader(5) == valid


def test_finds_the_leader_again_after_its_own_session_expires(
    new_session: OpenSession, contend: Contend
) -> None:
    # Given a retrieval that knows the leader, on a session of its own
    client = new_session("client")
    states: list[ConnectionState] = []
    client.add_listener(states.append)
    log = LeaderLog()
    retrieval = LeaderRetrieval(client, log).start()
    contend("jm-1")
    leader = retrieval.wait_for_leader(10)
    assert leader is not None
    # When the retrieval's session expires (the leader's does not)
    expire_session(client)
    # Then it reports "no leader" while it cannot know ...
    wait_until(lambda: None in log.reports, 10, message="None reported on LOST")
    wait_until(lambda: ConnectionState.CONNECTED in states, 10, message="new session")
    # ... and the unchanged leader again once it has a new session
    assert retrieval.wait_for_leader(5) == leader
    wait_until(lambda: log.reports[-1] == leader, 5, message="the leader reported again")


def test_stopped_retrieval_reports_nothing_more(new_session: OpenSession, contend: Contend) -> None:
    # Given a retrieval that saw the first leader, then was stopped
    retrieval, log = following(new_session)
    first = contend("jm-1")
    assert retrieval.wait_for_leader(10) is not None
    wait_until(lambda: reported(log), 5, message="jm-1 reported")
    retrieval.stop()
    seen = log.reports
    # When the leadership changes, as observed by a second retrieval
    witness = LeaderRetrieval(new_session("witness")).start()
    contend("jm-2")
    first.stop()
    assert witness.wait_for_leader(10, lambda info: info.contender == "jm-2") is not None
    wait_until(lambda: witness.leader is not None and witness.leader.epoch == 2, 5)
    # Then the stopped retrieval's listener heard none of it
    assert log.reports == seen
