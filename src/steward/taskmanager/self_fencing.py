"""Self-fencing (rule 4): a TaskManager cut off from ZooKeeper kills its attempts.

:class:`Fence` is what fencing does and whether it holds; two watchers call its
:meth:`~Fence.fence`: :class:`SelfFencing` here (the connection's SUSPENDED and LOST events) and
the liveness probe (:mod:`steward.ha.liveness`: no ZooKeeper round trip worked for too long),
whose round trips also lift it (:meth:`~Fence.alive`).

While the connection is SUSPENDED the session, and with it every execution lease, may still
exist or may already have expired on the servers; the TaskManager cannot tell. Once the
suspension has lasted ``taskmanager.fence-after`` (shorter than the session timeout) it must
assume a leader may soon start replacements, and calls ``on_fence`` (which kills every
attempt). LOST fences at once: the leases are already gone. RECONNECTED in time cancels.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from steward.ha.session import ConnectionState, Session
from steward.metrics import TaskManagerMetrics
from steward.taskmanager.execution import Executions
from steward.taskmanager.reporting import Attempts

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


class Fence:
    """Whether TaskManager ``tm_id`` is fencing itself, and what fencing does.

    :meth:`fence` refuses every start, notes on each active attempt that fencing kills it (its
    outcome says ``steward.SelfFenced``) and kills them all. Only a ZooKeeper round trip that
    *started* after the fence lifts it (:meth:`alive`), and none once the TaskManager stops.
    """

    def __init__(
        self,
        tm_id: str,
        session: Session,
        attempts: Attempts,
        executions: Executions,
        metrics: TaskManagerMetrics,
    ) -> None:
        self._tm_id = tm_id
        self._session = session
        self._attempts = attempts
        self._executions = executions
        self._metrics = metrics
        self._lock = threading.Lock()
        self._fenced_at: float | None = None
        self._stopping = False

    @property
    def fenced(self) -> bool:
        return self._fenced_at is not None

    def not_ready(self) -> str | None:
        """Why this TaskManager cannot run attempts now (its readiness probe), or None."""
        if not self._session.connected:
            return "not connected to ZooKeeper"
        return "fencing itself" if self.fenced else None

    def stopping(self) -> None:
        """The TaskManager is stopping: a fence is never lifted from now on."""
        self._stopping = True

    def fence(self, reason: str) -> None:
        with self._lock:
            first = self._fenced_at is None
            if first:
                self._fenced_at = time.monotonic()
                self._metrics.self_fencings.inc()
        self._executions.refuse_starts(f"self-fenced: {reason}")
        victims = self._attempts.mark_fenced(reason)
        killed = self._executions.kill_all(reason)
        if first or killed:
            log.error(
                "self-fenced tm=%s reason=%s attempts=%s killed=%d",
                self._tm_id,
                reason,
                [f"{a.job_id}/{a.attempt}" for a in victims],
                killed,
            )

    def alive(self, probe_started: float) -> None:
        """A ZooKeeper round trip that started at ``probe_started`` succeeded."""
        self._metrics.zookeeper_round_trip.observe(time.monotonic() - probe_started)
        with self._lock:
            if self._fenced_at is None or probe_started <= self._fenced_at:
                return
            if not self._session.connected or self._stopping:
                return
            self._fenced_at = None
        self._executions.accept_starts()
        log.warning("self-fencing lifted: zookeeper answers again tm=%s", self._tm_id)
