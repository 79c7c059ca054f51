"""kazoo's threading handler with a cheaper ``select``: one ``poll`` system call per wait.

kazoo's connection thread waits for its socket before every read and every write, through
``handler.select``. The stock handler builds a new epoll selector each time (``epoll_create``,
an ``epoll_ctl`` per socket, ``epoll_wait``, ``close``): in a leader's profile at 16
submitting clients that was 5 % of its CPU, on the thread every ZooKeeper answer waits for.
``poll`` has no file-descriptor limit either (the reason kazoo left ``select.select``) and
costs one system call; its poller is a plain object, registering on it costs nothing.
"""

from __future__ import annotations

import select
from collections.abc import Sequence
from typing import Any

from kazoo.handlers.threading import SequentialThreadingHandler

_READ = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
"""What counts as readable: data, or a hang-up or error (the read then says which)."""


class PollHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """:class:`SequentialThreadingHandler` whose ``select`` is :func:`poll_select`."""

    def select(self, *args: Any, **kwargs: Any) -> tuple[list[Any], list[Any], list[Any]]:
        return poll_select(*args, **kwargs)


def poll_select(
    rlist: Sequence[Any], wlist: Sequence[Any], xlist: Sequence[Any], timeout: float | None = None
) -> tuple[list[Any], list[Any], list[Any]]:
    """``select.select``'s contract (sockets or file descriptors; ``xlist`` never reported, as
    kazoo's own selector), without its limit on descriptor numbers."""
    if timeout is not None and timeout < 0:
        raise ValueError("timeout must be non-negative")
    poller = select.poll()
    masks: dict[int, int] = {}
    for objects, mask in ((rlist, _READ), (wlist, select.POLLOUT)):
        for obj in objects:
            fd = obj if isinstance(obj, int) else obj.fileno()
            masks[fd] = masks.get(fd, 0) | mask
    for fd, mask in masks.items():
        poller.register(fd, mask)
    ready = dict(poller.poll(None if timeout is None else timeout * 1000))
    if any(events & select.POLLNVAL for events in ready.values()):
        raise ValueError("Invalid event mask or fd")
    readable = [o for o in rlist if ready.get(_fd(o), 0) & _READ]
    writable = [o for o in wlist if ready.get(_fd(o), 0) & (select.POLLOUT | select.POLLERR)]
    return readable, writable, []


def _fd(obj: Any) -> int:
    return obj if isinstance(obj, int) else int(obj.fileno())
