"""What Steward does to kazoo's connection beneath its public API, all in one place.

Kazoo (2.11) offers no way to drop a server connection on purpose, to bound how long a
reconnect waits for a server's answer, to read the session timeout a server granted, or to
tell that its connection thread died. Each of those reaches one private attribute of
``KazooClient._connection``; every such reach is here, guarded, so that a kazoo that changes
them degrades (a warning, a no-op) instead of breaking a process. ``Session`` is the only
caller. The one other reach, for ZooKeeper's persistent watches (which kazoo 2.11 lacks), is
:mod:`steward.ha.persistent_watches`.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.protocol.serialization import Connect

log = logging.getLogger(__name__)


def handshake_timeout(session_timeout: float) -> float:
    """How long to wait for a server's answer to a connect request: a fifth of the session
    timeout, at least 2 s (a healthy server answers in milliseconds; a busy one in well
    under a second)."""
    return min(session_timeout, max(2.0, session_timeout / 5))


def bound_handshakes(
    client: KazooClient, session_timeout: float, on_granted: Callable[[float], None]
) -> bool:
    """Wrap the one call of kazoo's that sends a connect request: its wait for the answer is
    bounded by :func:`handshake_timeout`, and ``on_granted`` hears the session timeout
    (seconds) the server granted. False if kazoo's connection has no such call."""
    connection: Any = getattr(client, "_connection", None)
    invoke: Any = getattr(connection, "_invoke", None)
    if invoke is None:
        return False

    handshake = handshake_timeout(session_timeout)

    def bounded(timeout: float, request: Any, xid: int | None = None) -> Any:
        if isinstance(request, Connect):
            # Kazoo waits the whole session timeout for a server's answer to its connect
            # request. A server that is starting accepts the connection and answers
            # nothing, and a reconnect that lands there hung for that long (with a 30 s
            # session, longer than a 20 s fence-after: the short-suspension test's flake).
            timeout = min(timeout, handshake)
        result = invoke(timeout, request, xid)
        if isinstance(request, Connect) and result[0].time_out > 0:
            on_granted(result[0].time_out / 1000.0)
        return result

    connection._invoke = bounded
    return True


def shut_connection(client: KazooClient) -> bool:
    """Shut the socket of kazoo's current server connection: kazoo sees it broken and
    reconnects. False if there was none, or it was already closed."""
    connection: Any = getattr(client, "_connection", None)
    sock: Any = getattr(connection, "_socket", None)
    if sock is None:
        return False
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        return False  # already closed: kazoo is reconnecting anyway
    return True


def peer(client: KazooClient) -> tuple[str, int] | None:
    """The (address, port) of the server kazoo's socket is connected to right now."""
    try:
        address: Any = client._connection._socket.getpeername()
    except (AttributeError, OSError):
        return None
    return (str(address[0]), int(address[1]))


def session_id(client: KazooClient) -> int | None:
    """The id of the client's session, also while it reconnects; None once it expired.

    Not ``client.client_id``: that is None whenever the connection is down, although the
    session (and every ephemeral node it owns) may well be alive. An ownership check made
    then ("is this lease ours?") would say no, and a TaskManager that fenced itself left its
    own lease held until its process ended (docs/reliability.md, bug 8).
    """
    value: Any = getattr(client, "_session_id", None)
    if value is None and not hasattr(client, "_session_id"):
        found = client.client_id  # a kazoo without the attribute: the public, narrower view
        value = found[0] if found else None
    return int(value) if value else None


def connection_thread_died(client: KazooClient) -> bool:
    """Whether kazoo's connection loop ended although nobody stopped the client."""
    connection: Any = getattr(client, "_connection", None)
    stopped: Any = getattr(connection, "connection_stopped", None)
    # Kazoo sets connection_stopped when its loop ends; only stop() sets _stopped first.
    return bool(stopped is not None and stopped.is_set() and not client._stopped.is_set())


class Avoidance:
    """Keeps a client off one server of its ensemble until told to stop.

    Through :meth:`KazooClient.set_hosts` (public): kazoo reads the host list afresh at each
    reconnect cycle. Thread-safe; :meth:`stop` may run on kazoo's connection thread.
    """

    def __init__(self, client: KazooClient, quorum: str) -> None:
        self._client = client
        self._quorum = quorum
        self._lock = threading.Lock()
        self._server: tuple[str, int] | None = None

    @property
    def server(self) -> tuple[str, int] | None:
        """The server avoided now, if any."""
        return self._server

    def avoid(self, server: tuple[str, int]) -> bool:
        """Leave ``server`` out of the hosts kazoo tries; False (nothing changed) if it is not
        one of them or no other would be left (a standalone server is never avoided)."""
        others = _servers_but(self._client, server)
        if others is None:
            return False
        with self._lock:
            self._client.set_hosts(others)
            self._server = server
        return True

    def stop(self) -> None:
        """Every server of the quorum again."""
        with self._lock:
            if self._server is not None:
                self._client.set_hosts(self._quorum)
                self._server = None


def _servers_but(client: KazooClient, server: tuple[str, int]) -> list[str] | None:
    address, port = server
    others = [(host, p) for host, p in client.hosts if not _resolves_to(host, p, address, port)]
    if not others or len(others) == len(client.hosts):
        return None
    hosts = [f"[{host}]:{p}" if ":" in host else f"{host}:{p}" for host, p in others]
    return [*hosts, client.chroot] if client.chroot else hosts


def _resolves_to(host: str, port: int, address: str, wanted_port: int) -> bool:
    if port != wanted_port:
        return False
    if host == address:
        return True
    try:
        found = socket.getaddrinfo(host, port, 0, 0, socket.IPPROTO_TCP)
    except OSError:
        return False
    return any(info[4][0] == address for info in found)
