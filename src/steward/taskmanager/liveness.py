"""The liveness probe: self-fencing timed from the last ZooKeeper round trip that worked.

:class:`~steward.taskmanager.self_fencing.SelfFencing` times a suspension from kazoo's
SUSPENDED event. When a server freezes or the network is cut, no connection is reset and
kazoo notices only after its read timeout (2/3 of the session timeout): ``fence-after``
counted from then would end after the session has expired on the servers, and a leader
could already be starting replacements while our attempts still run.

This module closes that gap (DESIGN rule 4): a thread makes a cheap round trip
(``exists(<cluster root>)``) every ``fence_after / 4`` and calls ``on_fence`` as soon as
``fence_after`` seconds have passed, by ``time.monotonic``, since the *start* of the last
round trip that succeeded. The server answered after that instant, so the session was alive
then, and it cannot expire before that instant plus the session timeout. A round trip that
succeeds again calls ``on_alive`` with the instant it started.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from steward.ha.session import Session

log = logging.getLogger(__name__)


class LivenessProbe:
    """Fences when no ZooKeeper round trip has succeeded for ``fence_after`` seconds."""

    def __init__(
        self,
        session: Session,
        fence_after: float,
        on_fence: Callable[[str], None],
        on_alive: Callable[[float], None] = lambda _started: None,
        *,
        interval: float | None = None,
    ) -> None:
        self._session = session
        self.fence_after = fence_after
        self.interval = interval if interval is not None else fence_after / 4
        self._on_fence = on_fence
        self._on_alive = on_alive
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_success = time.monotonic()
        self._silent = False
        self.fences = 0
        """How many times this probe called ``on_fence`` (once per silence)."""

    @property
    def last_success(self) -> float:
        """``time.monotonic()`` at the start of the last round trip that succeeded."""
        return self._last_success

    def start(self) -> LivenessProbe:
        self._last_success = time.monotonic()
        self._thread = threading.Thread(
            target=self._run, name=f"{self._session.name}-liveness", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            deadline = self._last_success + self.fence_after
            # Never wait past the deadline: a frozen server must be noticed on time.
            timeout = self.interval if self._silent else min(self.interval, deadline - started)
            timeout = max(0.001, timeout)
            if self._round_trip(timeout):
                self._succeeded(started)
            elif time.monotonic() >= deadline and not self._silent:
                self._fence(time.monotonic() - self._last_success)
            next_probe = started + self.interval
            if not self._silent:
                next_probe = min(next_probe, self._last_success + self.fence_after)
            self._stop.wait(max(0.0, next_probe - time.monotonic()))

    def _round_trip(self, timeout: float) -> bool:
        try:
            self._session.client.exists_async(self._session.layout.root).get(timeout=timeout)
        except (KazooException, KazooTimeoutError) as exc:
            log.debug("liveness probe failed cause=%r", exc)
            return False
        except Exception as exc:  # the client refuses requests while closed or lost
            log.debug("liveness probe failed cause=%r", exc)
            return False
        return True

    def _succeeded(self, started: float) -> None:
        self._last_success = max(self._last_success, started)
        if self._silent:
            self._silent = False
            log.warning("zookeeper answers again session=%s", self._session.name)
        try:
            self._on_alive(started)
        except Exception:
            log.exception("on_alive failed")

    def _fence(self, silence: float) -> None:
        self._silent = True
        self.fences += 1
        reason = (
            f"no zookeeper round trip succeeded for {silence:.1f}s"
            f" (fence-after {self.fence_after:g}s)"
        )
        log.error("self-fencing reason=%s session=%s", reason, self._session.name)
        try:
            self._on_fence(reason)
        except Exception:
            log.exception("on_fence failed reason=%s", reason)
