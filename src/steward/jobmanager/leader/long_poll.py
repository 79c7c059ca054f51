"""The heartbeat's long poll: a reply held until a command is queued for its TaskManager.

An idle TaskManager's heartbeat is held up to its ``wait`` (the heartbeat interval), so a start
or cancel command reaches it at once. Waiting on a thread cost the leader a hop to a worker
thread and back for every heartbeat, about 0.4 ms of its CPU each (1,000 TaskManagers: 40 %
of a core for the hops alone, issue 22). So a held heartbeat is a :class:`HeldHeartbeat`:
whoever waits for it (the REST layer on its event loop) listens on the TaskManager's
:class:`Wake` with a callback and no thread, then collects the reply with :meth:`finish`.

No wake is lost: :meth:`Wake.set` sets its flag and takes the listeners under one small lock
(never held across anything else), and :meth:`Wake.listen` calls a listener at once if the flag
is set; the flag is cleared only by taking the commands, under the job table's lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from steward.wire.heartbeat import HeartbeatReply

MAX_HOLD = 30.0
"""The longest a reply is held, whatever the heartbeat asks."""


class Wake:
    """A TaskManager's "a command is queued" flag: waited on by a thread (:meth:`wait`) or
    listened to by a callback (:meth:`listen`), set from any thread."""

    def __init__(self) -> None:
        self._flag = threading.Event()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def set(self) -> None:
        with self._lock:
            self._flag.set()
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()

    def clear(self) -> None:
        self._flag.clear()

    def is_set(self) -> bool:
        return self._flag.is_set()

    def wait(self, timeout: float) -> bool:
        return self._flag.wait(timeout)

    def listen(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` once, from whichever thread sets the flag (now, if it is set)."""
        with self._lock:
            if not self._flag.is_set():
                self._listeners.append(listener)
                return
        listener()

    def unlisten(self, listener: Callable[[], None]) -> None:
        """No longer call ``listener`` (the hold is over): a TaskManager that is never woken
        does not pile up one listener per heartbeat."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)


class HeldHeartbeat:
    """A heartbeat whose reply waits until its TaskManager's :class:`Wake` is set or
    :attr:`timeout` seconds pass; :meth:`finish` then takes the commands queued meanwhile."""

    def __init__(
        self, wake: Wake, timeout: float, finish: Callable[[bool], HeartbeatReply | None]
    ) -> None:
        self._wake, self._finish = wake, finish
        self.timeout = min(timeout, MAX_HOLD)

    def listen(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` once (from any thread) when a command is queued."""
        self._wake.listen(listener)

    def unlisten(self, listener: Callable[[], None]) -> None:
        self._wake.unlisten(listener)

    def finish(self, *, block: bool) -> HeartbeatReply | None:
        """The reply with the commands queued meanwhile; None if ``block`` is False and the
        table's lock is held (by a thread that may be waiting on ZooKeeper)."""
        return self._finish(block)


class HeldUntaken(HeldHeartbeat):
    """A heartbeat held before it is taken: it came while the term recovers, and waits on the
    term's ``ready`` wake (set at "ready" or at the term's end) or :attr:`timeout`.
    :meth:`finish` then takes it as a heartbeat that came now would be (``take``), once, and
    answers at once: a reply that take would hold is finished without a second wait (the
    TaskManager has waited already)."""

    def __init__(
        self,
        ready: Wake,
        timeout: float,
        take: Callable[[bool], HeartbeatReply | HeldHeartbeat | None],
    ) -> None:
        super().__init__(ready, timeout, self._taken_now)
        self._take = take
        self._held: HeldHeartbeat | None = None
        """What :meth:`finish` took and could not finish yet (it asked not to block)."""

    def _taken_now(self, block: bool) -> HeartbeatReply | None:
        if self._held is None:
            taken = self._take(block)
            if taken is None or isinstance(taken, HeartbeatReply):
                return taken
            self._held = taken
        return self._held.finish(block=block)
