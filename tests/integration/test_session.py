"""Session: connection-state listeners against a real ZooKeeper, with the server taken away.

Tests that stop the server use a standalone ZooKeeper of this module alone, so the session's
shared one is never disturbed.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest
from ha_harness import StateLog, expire_session, restart_server, restart_tolerant
from kazoo.exceptions import ConnectionLoss

from steward.errors import ZooKeeperUnavailableError
from steward.ha import session as session_module
from steward.ha.kazoo_errors import translate
from steward.ha.session import ConnectionState, Session
from steward.zookeeper.managed import ManagedEnsemble
from support import free_port, wait_until

pytestmark = pytest.mark.zookeeper

SESSION_TIMEOUT = 4.0
CONNECTION_TIMEOUT = 10.0


@pytest.fixture
def root(cluster_id: str) -> str:
    return f"/steward-tests/{cluster_id}"


def open_session(quorum: str, root: str, log: StateLog | None = None) -> Session:
    session = Session(
        quorum,
        root,
        session_timeout=SESSION_TIMEOUT,
        connection_timeout=CONNECTION_TIMEOUT,
        name="test",
    )
    if log is not None:
        session.add_listener(log)
    return session.start()


def test_start_is_heard_as_connected_and_creates_the_layout(zk_quorum: str, root: str) -> None:
    # Given a listener registered before start
    log = StateLog()
    # When the session starts
    session = open_session(zk_quorum, root, log)
    try:
        # Then the listener hears CONNECTED, and the cluster's znodes exist with epoch 0
        wait_until(lambda: log.heard(ConnectionState.CONNECTED), 5, message="CONNECTED heard")
        assert session.state is ConnectionState.CONNECTED
        assert session.connected
        assert session.session_id is not None
        for path in session.layout.persistent_parents():
            assert session.client.exists(path) is not None, path
        data, stat = session.client.get(session.layout.leader_epoch)
        assert (data, stat.version) == (b"0", 0)
        host, port = session.connected_to or ("", 0)
        assert f"{host}:{port}" == zk_quorum
    finally:
        session.close()


def test_a_connection_lost_while_creating_the_layout_is_ridden_out(
    zk_quorum: str, root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a connection that drops twice just as the layout is being created (the chaos
    # campaign met it: a ZooKeeper server frozen as a JobManager restarted, which then died)
    calls: list[str] = []
    real_open_parents = session_module.open_parents

    def flaky_open_parents(client: Any, path: str) -> None:
        calls.append(path)
        if len(calls) <= 2:
            raise translate(ConnectionLoss(), path)  # as open_parents says a lost connection
        real_open_parents(client, path)

    monkeypatch.setattr(session_module, "open_parents", flaky_open_parents)
    # When the session starts, then it starts, and the layout is there
    session = open_session(zk_quorum, root)
    try:
        assert len(calls) == 3
        for path in session.layout.persistent_parents():
            assert session.client.exists(path) is not None, path
    finally:
        session.close()


def test_a_connection_that_stays_lost_fails_the_start_within_its_timeout(
    zk_quorum: str, root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def lost(_client: Any, path: str) -> None:
        raise translate(ConnectionLoss(), path)

    monkeypatch.setattr(session_module, "open_parents", lost)
    session = Session(zk_quorum, root, session_timeout=SESSION_TIMEOUT, connection_timeout=1.0)
    with pytest.raises(ZooKeeperUnavailableError, match="could not create") as caught:
        session.start()
    assert root in str(caught.value)
    assert not session.connected  # closed, so the process can exit


def test_second_session_keeps_an_existing_epoch(zk_quorum: str, root: str) -> None:
    # Given a cluster whose epoch has moved on
    first = open_session(zk_quorum, root)
    try:
        first.client.set(first.layout.leader_epoch, b"1")
        # When another process starts a session on the same cluster
        second = open_session(zk_quorum, root)
        try:
            # Then its layout step leaves the epoch alone
            data, stat = second.client.get(second.layout.leader_epoch)
            assert (data, stat.version) == (b"1", 1)
        finally:
            second.close()
    finally:
        first.close()


def test_listener_may_call_zookeeper_and_a_failing_listener_harms_no_other(
    zk_quorum: str, root: str
) -> None:
    # Given a listener that raises and one that reads ZooKeeper from inside the callback
    session = Session(zk_quorum, root, session_timeout=SESSION_TIMEOUT, name="test")
    seen: list[bool] = []

    def failing(_state: ConnectionState) -> None:
        raise RuntimeError("listener bug")

    def reading(state: ConnectionState) -> None:
        if state is ConnectionState.CONNECTED:
            seen.append(session.client.exists("/") is not None)

    session.add_listener(failing)
    session.add_listener(reading)
    # When the session connects
    session.start()
    try:
        # Then the reading listener ran to completion (no deadlock with kazoo's thread)
        wait_until(lambda: seen, 5, message="reading listener completed")
        assert seen == [True]
    finally:
        session.close()


def test_removed_listener_hears_nothing_more(
    stoppable_zookeeper: ManagedEnsemble, root: str
) -> None:
    # Given a session with two listeners, one of them removed
    kept, removed = StateLog(), StateLog()
    session = open_session(restart_tolerant(stoppable_zookeeper.connect_string), root, kept)
    session.add_listener(removed)
    session.remove_listener(removed)
    try:
        # When the connection is suspended
        stoppable_zookeeper.stop_server(1)
        # Then only the kept listener hears it
        wait_until(lambda: kept.heard(ConnectionState.SUSPENDED), 10, message="SUSPENDED heard")
        assert removed.states == []
    finally:
        session.close()


def test_server_stop_suspends_and_restart_within_timeout_reconnects_same_session(
    stoppable_zookeeper: ManagedEnsemble, root: str
) -> None:
    # Given a connected session and an ephemeral node it owns
    log = StateLog()
    session = open_session(restart_tolerant(stoppable_zookeeper.connect_string), root, log)
    try:
        wait_until(lambda: log.heard(ConnectionState.CONNECTED), 5, message="CONNECTED heard")
        session_id = session.session_id
        mine = session.client.create(f"{root}/mine", b"x", ephemeral=True)
        # When its only server stops
        stoppable_zookeeper.stop_server(1)
        # Then the session is SUSPENDED, not LOST
        wait_until(lambda: log.heard(ConnectionState.SUSPENDED), 10, message="SUSPENDED heard")
        assert session.state == ConnectionState.SUSPENDED
        assert not session.connected
        # and it is still the same session: an ownership check made now ("is this lease
        # ours?") must say yes (bug 8: it said no, and a lease stayed held for good)
        assert session.session_id == session_id
        # When the server comes back within the session timeout
        restart_server(stoppable_zookeeper, 1)
        # Then the same session is RECONNECTED and its ephemeral node survived
        wait_until(lambda: log.heard(ConnectionState.RECONNECTED), 10, message="RECONNECTED")
        assert session.state == ConnectionState.RECONNECTED
        assert session.session_id == session_id
        assert session.client.exists(mine) is not None
        assert ConnectionState.LOST not in log.states
        assert log.states == [
            ConnectionState.CONNECTED,
            ConnectionState.SUSPENDED,
            ConnectionState.RECONNECTED,
        ]
    finally:
        session.close()


def test_expired_session_is_lost_then_connected_with_a_new_session(
    zk_quorum: str, root: str
) -> None:
    # Given a connected session that owns an ephemeral node, and an observer
    log = StateLog()
    session = open_session(zk_quorum, root, log)
    observer = open_session(zk_quorum, root)
    try:
        wait_until(lambda: log.heard(ConnectionState.CONNECTED), 5, message="CONNECTED heard")
        old_id = session.session_id
        mine = session.client.create(f"{root}/mine", b"x", ephemeral=True)
        heard_before = len(log.states)
        # When ZooKeeper expires the session
        expire_session(session)
        # Then listeners hear LOST, then CONNECTED on a new session
        wait_until(
            lambda: log.heard(ConnectionState.LOST, ConnectionState.CONNECTED, after=heard_before),
            10,
            message=f"LOST then CONNECTED heard (heard {log.states})",
        )
        assert ConnectionState.RECONNECTED not in log.states[heard_before:]
        assert session.session_id not in (None, old_id)
        assert session.state is ConnectionState.CONNECTED
        # And the old session's ephemeral node is gone, for everybody
        assert observer.client.exists(mine) is None
        assert session.client.exists(mine) is None
    finally:
        observer.close()
        session.close()


def test_close_removes_ephemeral_nodes_at_once(zk_quorum: str, root: str) -> None:
    # Given a session that owns an ephemeral node, watched by another session
    session = open_session(zk_quorum, root)
    observer = open_session(zk_quorum, root)
    try:
        mine = session.client.create(f"{root}/mine", b"x", ephemeral=True)
        gone = threading.Event()
        observer.client.exists(mine, watch=lambda _event: gone.set())
        # When the session is closed
        started = time.monotonic()
        session.close()
        # Then the node disappears well before the session timeout would remove it
        assert gone.wait(SESSION_TIMEOUT / 2), "ephemeral node still there"
        assert time.monotonic() - started < SESSION_TIMEOUT / 2
        assert observer.client.exists(mine) is None
    finally:
        observer.close()


def test_nothing_listening_raises_unavailable_within_the_connection_timeout(root: str) -> None:
    # Given a quorum address where nothing listens
    quorum = f"127.0.0.1:{free_port()}"
    connection_timeout = 1.5
    session = Session(
        quorum, root, session_timeout=SESSION_TIMEOUT, connection_timeout=connection_timeout
    )
    log = StateLog()
    session.add_listener(log)
    # When starting the session
    started = time.monotonic()
    with pytest.raises(ZooKeeperUnavailableError, match=quorum) as caught:
        session.start()
    elapsed = time.monotonic() - started
    # Then it gives up after about the connection timeout, not sooner and not much later
    assert connection_timeout * 0.9 <= elapsed < connection_timeout + 2.0
    assert caught.value.__cause__ is not None
    assert not session.connected
    assert ConnectionState.CONNECTED not in log.states


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_dead_connection_thread_is_noticed_and_the_client_restarted(
    zk_quorum: str, root: str
) -> None:
    """Kazoo's connection thread dies of an exception it does not catch: without the watchdog
    the client would never reconnect, leaving the process cut off from ZooKeeper for good."""
    log = StateLog()
    session = open_session(zk_quorum, root, log)
    try:
        wait_until(lambda: log.heard(ConnectionState.CONNECTED), 5, message="CONNECTED heard")
        old_id = session.session_id
        heard_before = len(log.states)
        connection = session.client._connection
        real_attempt = connection._connect_attempt
        calls = {"n": 0}

        def dying_attempt(*args: object) -> object:
            calls["n"] += 1
            if calls["n"] == 1:
                raise RuntimeError("injected: kazoo's loop dies of an uncaught exception")
            return real_attempt(*args)

        # Given the next connect attempt raises what kazoo does not catch
        connection._connect_attempt = dying_attempt
        # When the connection drops (the loop then tries to connect again, and dies)
        connection._socket.shutdown(socket.SHUT_RDWR)
        wait_until(lambda: calls["n"] >= 1, 10, message="the injected failure ran")
        # Then the watchdog restarts the client: LOST, then CONNECTED on a new session
        wait_until(
            lambda: log.heard(ConnectionState.LOST, ConnectionState.CONNECTED, after=heard_before),
            15,
            message=f"LOST then CONNECTED heard (heard {log.states})",
        )
        wait_until(lambda: session.session_id not in (None, old_id), 15, message="a new session")
        assert session.restarts == 1
        assert session.client.exists(root) is not None
        assert session.connected
    finally:
        session.close()
