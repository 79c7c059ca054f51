"""Persistent recursive watches (ZooKeeper 3.6+) on a kazoo 2.11 client, which has no
``add_watch``.

One such watch on a path hears every change of every node below it (created, deleted, data
changed; never "children changed"), for as long as the connection lasts: one server watch
for a whole subtree, where one-shot watches cost one per node and must be set again after
each event.

    watches = PersistentWatches(client)  # one per client: Session.persistent_watches
    watches.add("/steward/c1/jobs", on_event)  # on_event(WatchedEvent) for any path below
    ...
    watches.remove("/steward/c1/jobs", on_event)

What this reaches beneath kazoo's public API (pinned by tests/unit/ha/test_persistent_watches.py):

- The requests: :class:`AddWatch` (opcode 106) and :class:`RemoveWatches` (opcode 18) are
  shaped like the request tuples of :mod:`kazoo.protocol.serialization` (``type``,
  ``serialize``, ``deserialize``) and sent through ``KazooClient._call``, kazoo's own request
  path: errors come back as kazoo's exceptions, and a dropped connection fails them as it
  fails any request. They have no ``watcher`` attribute, so kazoo registers no one-shot
  watcher for them.
- The events: kazoo's ``ConnectionHandler._read_watch_event`` looks its one-shot watchers up
  by the event's exact path and drops the rest. It is wrapped on the client's connection
  object (the same object for the client's life, across reconnects and restarts): the event
  is parsed as kazoo parses it, handed to the persistent watchers of the path and of every
  ancestor, and then kazoo's own handling runs unchanged.

Watchers run on kazoo's connection thread, in the order the server sent the events: they
must only hand the event off (a queue), never block or call ZooKeeper.

Kazoo 2.11 does not restore a persistent watch after a reconnect (it sends the old
SetWatches, which has no room for one), and the server drops a connection's watches with it.
So after every reconnect and every new session the owner calls :meth:`add` again (it is
idempotent) and only then re-reads what may have changed while no watch was held.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadArgumentsError,
    MarshallingError,
    NoWatcherError,
    UnimplementedError,
)
from kazoo.protocol.serialization import Watch, int_struct, write_string
from kazoo.protocol.states import EVENT_TYPE_MAP, WatchedEvent

log = logging.getLogger(__name__)

Watcher = Callable[[WatchedEvent], None]

PERSISTENT_RECURSIVE = 1
"""AddWatch's mode for a watch on a node and every node below it (AddWatchMode)."""
WATCHER_PERSISTENT_RECURSIVE = 5
"""RemoveWatches' watcher type for such a watch (WatcherType, ZooKeeper 3.9+)."""
WATCHER_ANY = 3
"""RemoveWatches' "any watch on the path" (what a 3.6 to 3.8 server understands)."""


@dataclass(frozen=True)
class AddWatch:
    """ZooKeeper's AddWatchRequest: ``path`` (a ustring), ``mode`` (an int); empty reply."""

    path: str
    mode: int
    type: ClassVar[int] = 106

    def serialize(self) -> bytearray:
        request = bytearray(write_string(self.path))
        request.extend(int_struct.pack(self.mode))
        return request

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> bool:
        return True


@dataclass(frozen=True)
class RemoveWatches:
    """ZooKeeper's RemoveWatchesRequest: ``path``, ``watcher_type`` (an int); empty reply."""

    path: str
    watcher_type: int
    type: ClassVar[int] = 18

    def serialize(self) -> bytearray:
        request = bytearray(write_string(self.path))
        request.extend(int_struct.pack(self.watcher_type))
        return request

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> bool:
        return True


class PersistentWatches:
    """The persistent recursive watches of one kazoo client; thread-safe."""

    def __init__(self, client: KazooClient) -> None:
        self._client = client
        self._lock = threading.Lock()
        """Guards the watchers; never held across a call into kazoo (the connection thread
        takes it for every event)."""
        self._order = threading.Lock()
        """Held while the watchers of a path change and its request is queued: an add and a
        remove of one path reach the server in the order they changed the watchers."""
        self._watchers: dict[str, list[Watcher]] = {}
        self.hooked = _hook(client, self._dispatch)
        """False if kazoo's connection has no ``_read_watch_event``: :meth:`add` then raises."""

    def add(self, path: str, watcher: Watcher) -> None:
        """Watch ``path`` and every node below it; again after a reconnect (idempotent).
        Raises kazoo's exceptions (a dropped connection: ConnectionLoss)."""
        if not self.hooked:
            raise UnimplementedError("kazoo's connection cannot be hooked for watch events")
        with self._order:
            with self._lock:
                watchers = self._watchers.setdefault(path, [])
                if watcher not in watchers:
                    watchers.append(watcher)  # before the request: no event after it is lost
            reply = self._call(AddWatch(self._chrooted(path), PERSISTENT_RECURSIVE))
        reply.get()

    def remove(self, path: str, watcher: Watcher) -> None:
        """Stop calling ``watcher``; the server's watch is removed with the path's last one. A
        server that had no such watch any more (the connection dropped) is no error."""
        with self._order:
            with self._lock:
                watchers = self._watchers.get(path, [])
                if watcher in watchers:
                    watchers.remove(watcher)
                if watchers:
                    return
                self._watchers.pop(path, None)
            reply = self._call(RemoveWatches(self._chrooted(path), WATCHER_PERSISTENT_RECURSIVE))
        try:
            reply.get()
        except NoWatcherError:
            pass  # the connection dropped since: the server dropped the watch with it
        except (BadArgumentsError, MarshallingError):
            # ZooKeeper before 3.9 knows no watcher type 5: "any" removes this one too (and
            # any one-shot watch of this connection on this exact path, which kazoo would
            # then wait on forever: Steward sets none on a persistent watch's root).
            with self._order:
                if path in self.paths:
                    return  # added again meanwhile
                reply = self._call(RemoveWatches(self._chrooted(path), WATCHER_ANY))
            with contextlib.suppress(NoWatcherError):
                reply.get()

    @property
    def paths(self) -> list[str]:
        """The paths watched now."""
        with self._lock:
            return list(self._watchers)

    def _call(self, request: AddWatch | RemoveWatches) -> Any:
        """Queue ``request`` on kazoo's request path; its async result."""
        reply: Any = self._client.handler.async_result()
        self._client._call(request, reply)
        return reply

    def _chrooted(self, path: str) -> str:
        chroot: str = self._client.chroot or ""
        return chroot + path

    def _dispatch(self, event: WatchedEvent) -> None:
        with self._lock:
            matched = [
                watcher
                for path, watchers in self._watchers.items()
                if _covers(path, event.path)
                for watcher in watchers
            ]
        for watcher in matched:
            try:
                watcher(event)
            except Exception:
                log.exception("persistent watcher failed path=%s", event.path)


def _covers(root: str, path: str) -> bool:
    return path == root or path.startswith(root if root.endswith("/") else root + "/")


def _hook(client: KazooClient, dispatch: Callable[[WatchedEvent], None]) -> bool:
    """Wrap the connection's ``_read_watch_event``: ``dispatch`` sees each event first."""
    connection: Any = getattr(client, "_connection", None)
    read: Any = getattr(connection, "_read_watch_event", None)
    if read is None:
        log.warning("kazoo's connection has no _read_watch_event: no persistent watches")
        return False

    def read_watch_event(buffer: bytes, offset: int) -> Any:
        try:
            watch, _offset = Watch.deserialize(buffer, offset)
            kind = EVENT_TYPE_MAP.get(watch.type)
            if kind is not None:
                dispatch(WatchedEvent(kind, client._state, client.unchroot(watch.path)))
        except Exception:
            log.exception("cannot dispatch a watch event to persistent watchers")
        return read(buffer, offset)

    connection._read_watch_event = read_watch_event
    return True
