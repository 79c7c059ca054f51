"""Test harness for the HA services: contenders with their own sessions, a monitor that
catches two leaders at once, fault injection (session expiry, server restart) and readers.

Import as ``from ha_harness import ...`` from tests in this folder; ``restart_server`` is
the testing kit's (:mod:`steward.testing.zookeeper`), named here for them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from kazoo.client import KazooClient

from steward.ha.election import LeaderElection, Leadership
from steward.ha.session import ConnectionState, Session
from steward.testing.zookeeper import restart_server as restart_server  # noqa: PLC0414 (re-export)
from steward.wire.records import LeaderInfo
from support import wait_until

SESSION_TIMEOUT = 4.0


# ---------------------------------------------------------------- fault injection


def expire_session(session: Session, attempts: int = 5) -> None:
    """ZooKeeper's standard trick: a second client on the same session id and password
    connects and closes, so the server ends the session as if it had timed out.

    The session's own client reconnects at once when the twin takes its connection; on a
    loaded machine it can take the session back before the twin's close is sent (load 17: the
    twin's close failed, the session lived on). So it is done again until a twin finds the
    session gone (the server then gives it a new session)."""
    session_id, password = session.client.client_id
    for _ in range(attempts):
        twin = KazooClient(hosts=session.quorum, client_id=(session_id, password), timeout=4.0)
        twin.start(timeout=10)
        ended = twin.client_id is None or twin.client_id[0] != session_id
        twin.stop()
        twin.close()
        if ended:
            return
    raise AssertionError(f"session {session_id:#x} still alive after {attempts} expiry tricks")


def restart_tolerant(quorum: str, copies: int = 4) -> str:
    """``quorum`` with each server listed ``copies`` times, for tests that restart a server.

    ZooKeeper 3.8.0 leaves a connection that arrives while it is still starting open and
    unanswered (ZOOKEEPER-5051, apache/zookeeper#2391), and kazoo waits session_timeout /
    len(hosts) for a handshake: with one host, the whole session. A reconnect that hits that
    window would lose a session the test means to keep; with the server listed four times
    kazoo gives up on the hung attempt after a quarter of it and tries again.
    """
    return ",".join([quorum] * copies)


# ---------------------------------------------------------------- observation


class StateLog:
    """A connection listener that records every state it hears, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: list[ConnectionState] = []

    def __call__(self, state: ConnectionState) -> None:
        with self._lock:
            self._states.append(state)

    @property
    def states(self) -> list[ConnectionState]:
        with self._lock:
            return list(self._states)

    def heard(self, *expected: ConnectionState, after: int = 0) -> bool:
        """Whether ``expected`` were heard in this order (other states may come between)."""
        remaining = iter(self.states[after:])
        return all(any(state is want for state in remaining) for want in expected)


def leader_info(session: Session) -> LeaderInfo | None:
    """What ``leader/info`` says now, or None if there is none."""
    if session.client.exists(session.layout.leader_info) is None:
        return None
    data, _stat = session.client.get(session.layout.leader_info)
    return LeaderInfo.from_json(data)


def epoch_version(session: Session) -> int:
    """The version of ``leader/epoch`` (the current epoch); checks its data agrees."""
    data, stat = session.client.get(session.layout.leader_epoch)
    assert data == str(stat.version).encode(), "epoch znode's data and version disagree"
    return int(stat.version)


# ---------------------------------------------------------------- contenders


@dataclass
class Monitor:
    """Who holds leadership, by the callbacks, and everything that happened, in order.

    Shared by all contenders of a test: the grant and revoke callbacks update it under one
    lock, so a grant while another contender still holds leadership is caught at once.
    """

    lock: threading.Lock = field(default_factory=threading.Lock)
    holders: dict[str, int] = field(default_factory=dict)
    overlaps: list[str] = field(default_factory=list)
    grants: list[tuple[str, int]] = field(default_factory=list)
    revocations: list[tuple[str, int]] = field(default_factory=list)
    timeline: list[tuple[str, str]] = field(default_factory=list)

    def granted(self, name: str, leadership: Leadership) -> None:
        with self.lock:
            if self.holders:
                self.overlaps.append(
                    f"{name} granted epoch {leadership.epoch} while {self.holders}"
                )
            self.holders[name] = leadership.epoch
            self.grants.append((name, leadership.epoch))
            self.timeline.append((name, f"granted {leadership.epoch}"))

    def revoked(self, name: str, leadership: Leadership) -> None:
        with self.lock:
            if self.holders.pop(name, None) != leadership.epoch:
                self.overlaps.append(f"{name} revoked epoch {leadership.epoch} it did not hold")
            self.revocations.append((name, leadership.epoch))
            self.timeline.append((name, f"revoked {leadership.epoch}"))

    def heard(self, name: str, state: ConnectionState) -> None:
        with self.lock:
            self.timeline.append((name, str(state)))

    def leader(self) -> tuple[str, int] | None:
        """The holder of the newest term (an older one may not have heard yet that it lost)."""
        with self.lock:
            return max(self.holders.items(), key=lambda item: item[1], default=None)

    def granted_epochs(self) -> list[int]:
        with self.lock:
            return [epoch for _name, epoch in self.grants]

    def index(self, entry: tuple[str, str]) -> int:
        with self.lock:
            return self.timeline.index(entry)

    def wait_for_leader(self, timeout: float = 10.0, other_than: str = "") -> tuple[str, int]:
        """The (name, epoch) of the newest leader once there is one (not ``other_than``)."""
        found: tuple[str, int] = wait_until(
            lambda: (leader := self.leader()) and leader[0] != other_than and leader,
            timeout,
            message=f"a leader other than {other_than!r}" if other_than else "a leader",
        )
        return found


class Contender:
    """One JobManager's share of an election: its own session, election and logs.

    ``states`` is registered after the election's own listener: once a state is there, the
    election has it queued too. The monitor's timeline hears states before the election does.
    """

    def __init__(
        self,
        name: str,
        quorum: str,
        root: str,
        monitor: Monitor,
        *,
        tolerate_suspended: bool = True,
        session_timeout: float = SESSION_TIMEOUT,
        address: str = "",
    ) -> None:
        self.name = name
        self.address = address or f"http://{name}:8081"
        self.session = Session(
            quorum, root, session_timeout=session_timeout, connection_timeout=10.0, name=name
        )
        self.session.add_listener(lambda state: monitor.heard(name, state))
        self.session.start()
        self.election = LeaderElection(
            self.session,
            name,
            self.address,
            tolerate_suspended=tolerate_suspended,
            on_granted=lambda leadership: monitor.granted(name, leadership),
            on_revoked=lambda leadership: monitor.revoked(name, leadership),
        )
        self.states = StateLog()

    def start(self) -> Contender:
        self.election.start()
        self.session.add_listener(self.states)
        return self

    def close(self) -> None:
        self.election.stop()
        self.session.close()


def start_contenders(
    names: list[str],
    quorum: str,
    root: str,
    monitor: Monitor,
    made: list[Contender],
    *,
    tolerate_suspended: bool = True,
) -> list[Contender]:
    """Start one contender per name; each is also added to ``made`` for cleanup."""
    started = []
    for name in names:
        contender = Contender(name, quorum, root, monitor, tolerate_suspended=tolerate_suspended)
        made.append(contender)
        started.append(contender.start())
    return started


class Sampler:
    """Samples every contender's ``is_leader`` until stopped; records any instant with two.

    Each sample reads the flags forwards then backwards and counts a pair only if both reads
    saw both leading: a handover between two reads of one pass is not an overlap.
    """

    def __init__(self, contenders: list[Contender]) -> None:
        self.contenders = contenders
        self.samples = 0
        self.violations: list[list[str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-sampler", daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            forward = [c.election.is_leader for c in self.contenders]
            backward = [c.election.is_leader for c in reversed(self.contenders)][::-1]
            both = [
                c.name
                for c, f, b in zip(self.contenders, forward, backward, strict=True)
                if f and b
            ]
            if len(both) > 1:
                self.violations.append(both)
            self.samples += 1
            self._stop.wait(0.002)
