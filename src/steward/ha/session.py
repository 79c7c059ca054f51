"""The ZooKeeper connection of one Steward process, and its connection-state listeners.

Wraps one :class:`kazoo.client.KazooClient`. Kazoo reports CONNECTED, SUSPENDED and LOST; this
module adds RECONNECTED (the same session came back after SUSPENDED) and delivers every change,
in order, on a thread of its own, so a listener may call ZooKeeper without deadlocking kazoo's
connection thread.

After connecting it reads the session timeout the server *granted* (a server's
``minSessionTimeout`` and ``maxSessionTimeout`` bound what a client asks for) and, given the
configuration's :class:`~steward.timing.TimingChain`, refuses to start when the granted
timeout breaks the chain (docs/architecture.md, "Timing chain"); a granted timeout that only
differs from the configured one is logged as a warning (:mod:`steward.ha.granted`).

Who may read and change the state is :mod:`steward.ha.acl`'s business: the session
authenticates with the cluster's digest credential and creates every znode under the cluster's
root with the creator ACL (``access``); at start it refuses a root this credential may not
read, and migrates a world-open one.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import queue
import threading
import time
from collections.abc import Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NodeExistsError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KeeperState
from kazoo.retry import KazooRetry

from steward.config import Configuration
from steward.errors import ConfigurationError, CoordinationError, ZooKeeperUnavailableError
from steward.ha.acl import OPEN, ZooKeeperAccess, check_readable, open_parents, protect_tree
from steward.ha.granted import GrantedTimeout
from steward.ha.kazoo_connection import (
    Avoidance,
    bound_handshakes,
    connection_thread_died,
    peer,
    session_id,
    shut_connection,
)
from steward.ha.kazoo_errors import translate
from steward.ha.kazoo_handler import PollHandler
from steward.ha.layout import Layout
from steward.ha.persistent_watches import PersistentWatches
from steward.timing import TimingChain

log = logging.getLogger(__name__)


class ConnectionState(enum.StrEnum):
    CONNECTED = "CONNECTED"
    """A new session was established (at start, or after the previous one was LOST)."""
    SUSPENDED = "SUSPENDED"
    """The connection dropped; the session may still be alive. Ephemeral nodes still exist."""
    RECONNECTED = "RECONNECTED"
    """The same session is connected again after SUSPENDED; nothing was lost."""
    LOST = "LOST"
    """The session expired (or was closed): its ephemeral nodes and watches are gone."""


Listener = Callable[[ConnectionState], None]
WATCHDOG_INTERVAL = 1.0


class Session:
    """One process's ZooKeeper session, with the cluster's :class:`Layout`.

    ``start()`` connects (or raises :class:`ZooKeeperUnavailableError` after the connection
    timeout) and creates the layout's container znodes. Kazoo keeps reconnecting forever after
    that; listeners hear every state change.

    Kazoo's connection thread can die of an exception it does not catch (seen once in a chaos
    campaign, as a session expired); the client then never reconnects and the process is
    silently cut off for good. A watchdog notices and restarts the client: listeners hear LOST,
    then CONNECTED with a new session, as after any expiry.
    """

    def __init__(
        self,
        quorum: str,
        root: str,
        *,
        session_timeout: float = 10.0,
        connection_timeout: float = 15.0,
        name: str = "steward",
        timing: TimingChain | None = None,
        access: ZooKeeperAccess = OPEN,
    ) -> None:
        self.quorum = quorum
        self.access = access
        self.layout = Layout(root)
        self.name = name
        self.session_timeout = session_timeout
        self.connection_timeout = connection_timeout
        self._client = KazooClient(
            hosts=quorum,
            timeout=session_timeout,
            connection_retry=KazooRetry(
                max_tries=-1, delay=0.05, max_delay=0.5, ignore_expire=False
            ),
            handler=PollHandler(),
            **access.kazoo_options(),
        )
        self._listeners: list[Listener] = []
        self._events: queue.Queue[ConnectionState | None] = queue.Queue()
        self._kazoo_state: str = KazooState.LOST
        self._state = ConnectionState.LOST
        self._lock = threading.Lock()
        self._dispatcher: threading.Thread | None = None
        self._closing = threading.Event()
        self.restarts = 0
        """How many times the watchdog restarted a client whose connection thread died."""
        self._granted = GrantedTimeout(name, session_timeout, timing, quorum)
        self._avoidance = Avoidance(self._client, quorum)
        self.persistent_watches = PersistentWatches(self._client)
        """Watches on whole subtrees; their owners add them again after every reconnect."""
        self._started = False
        if not bound_handshakes(self._client, session_timeout, self._granted.record):
            log.warning("cannot read the granted session timeout session=%s", self.name)

    @classmethod
    def from_config(cls, config: Configuration, name: str = "steward") -> Session:
        zookeeper = config.settings.zookeeper
        return cls(
            zookeeper.quorum,
            zookeeper.cluster_root,
            session_timeout=zookeeper.session_timeout,
            connection_timeout=zookeeper.connection_timeout,
            name=name,
            timing=config.settings.timing,
            access=ZooKeeperAccess.for_process(zookeeper),
        )

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Session:
        self._dispatcher = threading.Thread(
            target=self._dispatch, name=f"{self.name}-zk-events", daemon=True
        )
        self._dispatcher.start()
        self._client.add_listener(self._on_kazoo_state)
        try:
            self._client.start(timeout=self.connection_timeout)
        except KazooTimeoutError as exc:
            self._client.stop()
            self._client.close()
            self._events.put(None)
            raise ZooKeeperUnavailableError(
                f"could not connect to ZooKeeper at {self.quorum} within"
                f" {self.connection_timeout:g}s; is it running? (steward zookeeper status)"
            ) from exc
        try:
            self._granted.check()
        except ConfigurationError:
            self.close()
            raise
        self._started = True
        try:
            self._ensure_layout_while_connecting()
        except (ConfigurationError, CoordinationError):
            self.close()
            raise
        threading.Thread(
            target=self._watchdog, name=f"{self.name}-zk-watchdog", daemon=True
        ).start()
        return self

    def close(self) -> None:
        """Close the session: its ephemeral nodes vanish at once, not after the timeout."""
        self._closing.set()
        try:
            self._client.stop()
            self._client.close()
        finally:
            self._events.put(None)
            if self._dispatcher and self._dispatcher is not threading.current_thread():
                self._dispatcher.join(timeout=5)

    def __enter__(self) -> Session:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _ensure_layout_while_connecting(self) -> None:
        """:meth:`_ensure_layout`, again while the connection drops and comes back (a server
        frozen or restarted just as this process starts), for up to the connection timeout:
        a process must not die of a hiccup its session rides out. Each step is idempotent."""
        deadline = time.monotonic() + self.connection_timeout
        pause = 0.05
        while True:
            try:
                self._ensure_layout()
                return
            except ZooKeeperUnavailableError as exc:
                if time.monotonic() + pause > deadline:
                    raise ZooKeeperUnavailableError(
                        f"could not create {self.layout.root} within"
                        f" {self.connection_timeout:g}s: {exc}"
                    ) from exc
                log.warning("zookeeper unavailable while creating the layout, retrying: %s", exc)
                self._closing.wait(pause)  # a backoff, not a synchronisation
                pause = min(pause * 2, 1.0)

    def _ensure_layout(self) -> None:
        root = self.layout.root
        open_parents(self._client, root)
        check_readable(self._client, root, self.access)
        if self.access.credential is not None:
            protect_tree(self._client, root, self.access.credential)
        try:
            for path in self.layout.persistent_parents():
                self._client.ensure_path(path)
            with contextlib.suppress(NodeExistsError):
                self._client.create(self.layout.leader_epoch, b"0")
        except KazooException as exc:
            raise translate(exc, self.layout.root) from exc

    # ------------------------------------------------------------------ granted timeout

    @property
    def granted_session_timeout(self) -> float | None:
        """The session timeout (seconds) the server granted at the last connect; None before."""
        return self._granted.value

    @property
    def timing(self) -> TimingChain | None:
        """The timing chain this session's process must keep; None for a plain session."""
        return self._granted.timing

    def granted_problem(self) -> str | None:
        """Why the granted session timeout breaks the timing chain; None if it does not."""
        return self._granted.problem()

    # ------------------------------------------------------------------ state

    @property
    def client(self) -> KazooClient:
        """The kazoo client; only the ``ha`` and ``store`` layers call it directly."""
        return self._client

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def connected(self) -> bool:
        return self._state in (ConnectionState.CONNECTED, ConnectionState.RECONNECTED)

    @property
    def session_id(self) -> int | None:
        """This process's ZooKeeper session, also while the connection is down (the session
        may be alive); None before the first connect and once it expired."""
        return session_id(self._client)

    def drop_connection(self, reason: str) -> bool:
        """Make kazoo give up its server connection now and reconnect, to another server of
        the ensemble if there is one (the same session, if it is still alive there).

        For a caller that knows the server stopped answering (the liveness probe): kazoo
        notices a frozen server only when its heartbeat ping goes unanswered, and it sends
        that ping only after a quiet spell of a third of the session timeout, which steady
        requests (the probe's own round trips) never leave it. True if a connection was
        dropped.
        """
        self._avoidance.stop()
        return self._shut(reason)

    def leave_server(self, reason: str) -> bool:
        """:meth:`drop_connection`, and keep kazoo off the server it leaves until it has
        connected to another (or :meth:`drop_connection` is called again).

        Kazoo would try every server of the ensemble in a random order, the silent one
        included: a frozen server accepts the connection and answers nothing, so landing on
        it again costs a whole handshake timeout (2 s at the default session timeout), and a
        frozen ZooKeeper leader leaves the others unable to serve until they have elected
        another, so the silent one may come up more than once. Never with a single server.
        """
        server = peer(self._client)
        # Before the drop: kazoo reads its host list as soon as its connection breaks.
        avoided = server is not None and self._avoidance.avoid(server)
        if not self._shut(reason):
            self._avoidance.stop()
            return False
        if avoided and server is not None:
            log.info(
                "zookeeper server avoided until reconnected session=%s server=%s:%d",
                self.name,
                *server,
            )
        return True

    def _shut(self, reason: str) -> bool:
        if not shut_connection(self._client):
            return False
        log.warning("zookeeper connection dropped session=%s reason=%s", self.name, reason)
        return True

    @property
    def connected_to(self) -> tuple[str, int] | None:
        """The (host, port) of the ZooKeeper server this session talks to right now."""
        return peer(self._client)

    @property
    def avoiding(self) -> tuple[str, int] | None:
        """The server :meth:`leave_server` keeps this session off, if any."""
        return self._avoidance.server

    def add_listener(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _on_kazoo_state(self, state: str) -> bool:
        # Runs on kazoo's connection thread: translate and hand off, never block here.
        previous, self._kazoo_state = self._kazoo_state, state
        if state == KazooState.CONNECTED:
            self._avoidance.stop()
        if state == KazooState.SUSPENDED:
            event = ConnectionState.SUSPENDED
        elif state == KazooState.LOST:
            event = ConnectionState.LOST
        elif previous == KazooState.SUSPENDED:
            event = ConnectionState.RECONNECTED
        else:
            event = ConnectionState.CONNECTED
        self._state = event
        self._events.put(event)
        return False

    def _watchdog(self) -> None:
        while not self._closing.wait(WATCHDOG_INTERVAL):
            if connection_thread_died(self._client):
                self._restart_client()

    def _restart_client(self) -> None:
        log.error(
            "ZooKeeper connection thread died session=%s; restarting the client (new session)",
            self.name,
        )
        self.restarts += 1
        while not self._closing.is_set():
            try:
                self._client.stop()
                # stop() queued a close request that the dead loop never took: a new loop
                # would take it and close at once. Fail every queued request, as kazoo does
                # on a connection drop, and start from an empty queue.
                self._client._notify_pending(KeeperState.CONNECTING)
                self._client.start(timeout=self.connection_timeout)
                return
            except (KazooException, KazooTimeoutError) as exc:
                log.warning("ZooKeeper client restart failed session=%s error=%r", self.name, exc)
            if self._closing.wait(WATCHDOG_INTERVAL):
                return

    def _dispatch(self) -> None:
        while (event := self._events.get()) is not None:
            log.info("zookeeper connection state=%s session=%s", event, self.name)
            if event is ConnectionState.CONNECTED and self._started:
                self._granted.recheck()
            with self._lock:
                listeners = list(self._listeners)
            for listener in listeners:
                try:
                    listener(event)
                except Exception:
                    log.exception("connection listener failed state=%s", event)
