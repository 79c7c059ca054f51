"""A server in the foreground (``steward jobmanager``, ``steward taskmanager``) until SIGTERM
or SIGINT, then stopped gracefully."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Protocol, TypeVar

log = logging.getLogger(__name__)


class Stoppable(Protocol):
    def stop(self) -> None: ...


S = TypeVar("S", bound=Stoppable)


def serve_until_signalled(start: Callable[[], S], announce: Callable[[S], None]) -> int:
    """``start`` a server, ``announce`` it, wait for SIGTERM or SIGINT and stop it; the exit
    code. The handlers are in place before ``start``: a signal during start-up is kept and
    stops the server as soon as it is up."""
    done = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal received signal=%s", signal.Signals(signum).name)
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server = start()
    announce(server)
    try:
        while not done.wait(1.0):
            pass
    finally:
        server.stop()
    return 0
