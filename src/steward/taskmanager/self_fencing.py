"""Self-fencing (rule 4): a TaskManager cut off from ZooKeeper kills its attempts.

While the connection is SUSPENDED the session, and with it every execution lease, may still
exist or may already have expired on the servers; the TaskManager cannot tell. Once the
suspension has lasted ``taskmanager.fence-after`` (shorter than the session timeout) it must
assume a leader may soon start replacements, and calls ``on_fence`` (which kills every
attempt). LOST fences at once: the leases are already gone. RECONNECTED in time cancels.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from steward.ha.session import ConnectionState, Session

log = logging.getLogger(__name__)


class SelfFencing:
    """Listens to ``session`` and calls ``on_fence(reason)`` when this process must fence."""

    def __init__(
        self, session: Session, fence_after: float, on_fence: Callable[[str], None]
    ) -> None:
        if fence_after >= session.session_timeout:
            log.warning(
                "fence_after=%.1fs is not shorter than session_timeout=%.1fs: attempts may"
                " outlive their leases",
                fence_after,
                session.session_timeout,
            )
        self._session = session
        self.fence_after = fence_after
        self._on_fence = on_fence
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self.fences = 0
        """How many times ``on_fence`` was called (for status and tests)."""

    @property
    def armed(self) -> bool:
        """Whether a suspension is being timed right now."""
        with self._lock:
            return self._timer is not None

    def start(self) -> SelfFencing:
        self._session.add_listener(self._on_state)
        return self

    def stop(self) -> None:
        self._session.remove_listener(self._on_state)
        self._cancel("stopped")

    def _on_state(self, state: ConnectionState) -> None:
        if state is ConnectionState.SUSPENDED:
            self._arm()
        elif state is ConnectionState.LOST:
            self._cancel("session lost")
            self._fence("zookeeper session lost: the execution leases are gone")
        else:
            self._cancel(f"connection {state.value.lower()}")

    def _arm(self) -> None:
        with self._lock:
            if self._timer is not None:
                return  # the suspension is already being timed from its start
            timer = threading.Timer(self.fence_after, self._expire)
            timer.name = f"{self._session.name}-self-fencing"
            timer.daemon = True
            self._timer = timer
        log.warning(
            "zookeeper connection suspended; fencing unless reconnected fence_after=%.1fs"
            " session=%s",
            self.fence_after,
            self._session.name,
        )
        timer.start()

    def _cancel(self, why: str) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            log.info("self-fencing disarmed reason=%s session=%s", why, self._session.name)

    def _expire(self) -> None:
        with self._lock:
            # A RECONNECTED that raced with this timer has already replaced or cleared it.
            if self._timer is None or self._timer is not threading.current_thread():
                return
            self._timer = None
        self._fence(f"zookeeper connection suspended for more than {self.fence_after:g}s")

    def _fence(self, reason: str) -> None:
        self.fences += 1
        log.error("self-fencing reason=%s session=%s", reason, self._session.name)
        try:
            self._on_fence(reason)
        except Exception:
            log.exception("on_fence failed reason=%s", reason)
