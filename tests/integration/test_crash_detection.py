"""Fast crash detection against a real ZooKeeper: a standby removes the latch of a leader whose
port refuses connections, never of one whose port accepts, and a wrong guess is fenced.

The "leader" here is a live contender whose published address is a port we control: listening
and then closed (refuses, as when the leader's process died on a live host), listening without
ever accepting (as a SIGSTOPped process's kernel does), or an address that never answered this
standby (a wildcard, another host's loopback). Its ZooKeeper session stays alive throughout,
so without the detector the standby could never be granted: the first test fails if detection
does nothing, the last ones if it acts on an address that names nobody.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from ha_harness import Contender, Monitor, epoch_version, leader_info

from steward.ha.crash_detection import CrashDetector
from steward.ha.session import Session
from support import wait_until

pytestmark = pytest.mark.zookeeper

REFUSED_FOR = 0.3


@pytest.fixture
def root(cluster_id: str) -> str:
    return f"/steward-tests/{cluster_id}"


@pytest.fixture
def made() -> Iterator[list[Contender]]:
    contenders: list[Contender] = []
    yield contenders
    for contender in contenders:
        contender.close()


def closed_port() -> int:
    """A port nothing listens on: connecting to it is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def start_pair(
    quorum: str, root: str, monitor: Monitor, made: list[Contender], leader_address: str
) -> tuple[Contender, Contender, CrashDetector]:
    """``leader`` elected first with ``leader_address``; a standby with a crash detector."""
    leader = Contender("jm-1", quorum, root, monitor, address=leader_address)
    made.append(leader)
    leader.start()
    assert monitor.wait_for_leader() == ("jm-1", epoch_version(leader.session))
    standby = Contender("jm-2", quorum, root, monitor)
    made.append(standby)
    standby.start()
    detector = CrashDetector(
        standby.session,
        "jm-2",
        refused_for=REFUSED_FOR,
        current_leader=lambda: leader_info(standby.session),
        is_leader=lambda: standby.election.is_leader,
    )
    return leader, standby, detector


def test_standby_takes_over_from_a_leader_whose_port_refuses_long_before_its_session_expires(
    zk_quorum: str, root: str, made: list[Contender]
) -> None:
    # Given a leader whose published REST port accepted the standby's probes, then refuses
    # connections (its process died; its session stays alive)
    monitor = Monitor()
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(64)
    leader, standby, detector = start_pair(
        zk_quorum, root, monitor, made, f"http://127.0.0.1:{listening.getsockname()[1]}"
    )
    old_term = leader.election.leadership
    assert old_term is not None
    detector.start()
    wait_until(lambda: detector.probes >= 2, 10, message="the standby saw the leader listen")
    listening.close()
    started = time.monotonic()
    try:
        # When the standby's detector has seen the refusals for REFUSED_FOR
        name, epoch = monitor.wait_for_leader(timeout=10, other_than="jm-1")
        took = time.monotonic() - started
    finally:
        detector.stop()
    # Then the standby leads with a higher epoch, far sooner than any session timeout
    assert name == "jm-2" and epoch == old_term.epoch + 1
    assert took < 3.0, f"took {took:.2f}s"
    assert detector.removed == 1
    # And the old leader (alive: a wrong guess) is fenced, steps down and queues again
    assert not old_term.fence.is_current()
    wait_until(lambda: not leader.election.is_leader, 10, message="old leader stepped down")
    latch_dir = standby.session.layout.leader_latch
    wait_until(
        lambda: len(standby.session.client.get_children(latch_dir)) == 2,
        10,
        message="old leader queued again behind the new one",
    )
    info = leader_info(standby.session)
    assert info is not None and (info.contender, info.epoch) == ("jm-2", epoch)


def assert_probes_remove_nothing(
    zk_quorum: str, root: str, made: list[Contender], *, observer: Session, address: str
) -> None:
    """Given jm-1 leading at ``address`` and jm-2's detector, when the detector has probed for
    ten windows of five, then nothing was removed: jm-1 leads under the same epoch, granted
    once."""
    monitor = Monitor()
    leader, standby, detector = start_pair(zk_quorum, root, monitor, made, address)
    epoch = epoch_version(observer)
    detector.start()
    try:
        wait_until(
            lambda: detector.probes >= 10 * 5 or detector.removed,
            30,
            message="the detector probed 50 times",
        )
    finally:
        detector.stop()
    assert detector.removed == 0
    assert leader.election.is_leader and not standby.election.is_leader
    assert epoch_version(observer) == epoch
    assert monitor.grants == [("jm-1", epoch)]


def test_a_leader_whose_port_accepts_is_never_removed(
    zk_quorum: str, root: str, made: list[Contender], observer_session: Session
) -> None:
    # Given a leader whose port accepts connections but never answers (a frozen process)
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(64)
        port = listening.getsockname()[1]
        # Then probing it removes nothing
        address = f"http://127.0.0.1:{port}"
        assert_probes_remove_nothing(
            zk_quorum, root, made, observer=observer_session, address=address
        )


@pytest.mark.parametrize(
    "host",
    ["0.0.0.0", "127.0.0.1"],
    ids=["wildcard", "loopback-of-another-host"],
)
def test_a_leader_address_that_never_answered_this_standby_is_never_removed(
    zk_quorum: str, root: str, made: list[Contender], observer_session: Session, host: str
) -> None:
    # Given a live leader publishing an address that, probed from the standby, names nobody
    # listening: a wildcard (connects to the standby's own host) or a loopback address
    # published from another host (the standby's own loopback)
    # Then probing it removes nothing: every probe is refused or unanswered
    address = f"http://{host}:{closed_port()}"
    assert_probes_remove_nothing(zk_quorum, root, made, observer=observer_session, address=address)


@pytest.fixture
def observer_session(zk_quorum: str, root: str) -> Iterator[Session]:
    session = Session(zk_quorum, root, session_timeout=4.0, name="observer").start()
    yield session
    session.close()
