"""The liveness probe: self-fencing timed from the last ZooKeeper round trip that worked.

The TaskManager's :class:`~steward.taskmanager.self_fencing.SelfFencing` times a suspension
from kazoo's SUSPENDED event. When a server freezes or the network is cut, no connection is
reset and kazoo notices only after its read timeout (2/3 of the session timeout): a bound
counted from then would end after the session has expired on the servers, and a new leader
could already be starting replacements (or running initialize hooks) while we still run ours.

This module closes that gap (rule 4; docs/architecture.md, "Timing chain"): a thread
makes a cheap round trip (``sync(<cluster root>)``) every ``fence_after / 8``
(:data:`~steward.timing.PROBE_ROUNDS`) and calls ``on_fence`` as soon as ``fence_after``
seconds have passed since the *start* of the last round trip that succeeded. The ZooKeeper
leader, which expires sessions, had heard from the server after that instant, so the session
was alive then, and it cannot expire before that instant (less the leader's touch lag, see
:class:`~steward.timing.ServerTiming`) plus the session timeout. A round trip that
succeeds again calls ``on_alive`` with the ``time.monotonic()`` instant it started.

Why ``sync`` and not a read such as ``exists``: a follower answers a read from its own copy,
and one cut off from the leader goes on doing so for up to syncLimit x tickTime (10 s with
ZooKeeper's sample configuration) while the leader, no longer hearing of the session, expires
it; a ``sync`` is answered only once the leader has answered it (issue 23: the TaskManager
behind such a follower fenced seconds after its replacement started,
tests/e2e/partition/test_follower_grace.py). It costs one hop more than a read (a follower
forwards it), measured in docs/performance.md.

Before it would fence, it moves: once ``failover_after`` (half of ``fence_after``) has passed
without an answer, it drops the connection to the silent server and keeps kazoo off that
server until it has connected to another (:meth:`Session.leave_server`): kazoo reconnects to
another server of the ensemble with the same session, so its leases and ephemeral nodes
survive, and never spends a handshake timeout on the silent one again meanwhile (a frozen
ZooKeeper leader leaves the others refusing clients until they have elected another, and kazoo
would otherwise cycle back to it). One frozen server of three then costs a reconnect, not the
attempts (issue 15): kazoo's own detection (an unanswered ping, sent only after a quiet spell
of a third of the session timeout, and answered or not only after two thirds) never fires while
the probe keeps sending, and would come after ``fence_after`` anyway. Only if no server answers
until ``fence_after`` (no quorum, or this host cut off) does it fence, and it drops the
connection again then, every server allowed again.

Time is measured on :mod:`steward.clock` (it counts a suspend of the host, as the servers
do), and every wait is cut into slices of at most :data:`steward.clock.MAX_WAIT`, so a
deadline that passed while the host slept fences within one slice of the resume. The
TaskManager and the JobManager (which stops its initialize hooks) both use it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from steward import clock
from steward.ha.session import Session
from steward.timing import PROBE_ROUNDS

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
        failover_after: float | None = None,
    ) -> None:
        self._session = session
        self.fence_after = fence_after
        self.interval = interval if interval is not None else fence_after / PROBE_ROUNDS
        self.failover_after = failover_after if failover_after is not None else fence_after / 2
        self._on_fence = on_fence
        self._on_alive = on_alive
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_success = clock.now()
        self._silent = False
        self._moved = False
        self.fences = 0
        """How many times this probe called ``on_fence`` (once per silence)."""
        self.failovers = 0
        """How many times it left a silent server for another before fencing."""

    @property
    def last_success(self) -> float:
        """:func:`steward.clock.now` at the start of the last round trip that succeeded."""
        return self._last_success

    def start(self) -> LivenessProbe:
        self._last_success = clock.now()
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
            started, started_monotonic = clock.now(), time.monotonic()
            deadline = self._last_success + self.fence_after
            # Never wait past the deadline (a frozen server must be noticed on time), nor past
            # the moment to move to another server.
            limit = deadline if self._moved else self._last_success + self.failover_after
            timeout = self.interval if self._silent else min(self.interval, limit - started)
            if self._round_trip(max(0.001, timeout)):
                self._succeeded(started, started_monotonic)
            elif clock.now() >= deadline and not self._silent:
                self._fence(clock.now() - self._last_success)
            elif not self._silent:
                self._move_if_silent()
            next_probe = started + self.interval
            if not self._silent:
                next_probe = min(next_probe, self._last_success + self.fence_after)
                if not self._moved:
                    next_probe = min(next_probe, self._last_success + self.failover_after)
            while not self._stop.is_set() and (left := next_probe - clock.now()) > 0:
                self._stop.wait(clock.slice_of(left))

    def _round_trip(self, timeout: float) -> bool:
        until = clock.now() + timeout
        try:
            result = self._session.client.sync_async(self._session.layout.root)
            while not result.wait(clock.slice_of(until - clock.now())):
                if clock.now() >= until:
                    log.debug("liveness probe timed out after %.3fs", timeout)
                    return False
            result.get_nowait()
        except (KazooException, KazooTimeoutError) as exc:
            log.debug("liveness probe failed cause=%r", exc)
            return False
        except Exception as exc:  # the client refuses requests while closed or lost
            log.debug("liveness probe failed cause=%r", exc)
            return False
        return True

    def _move_if_silent(self) -> None:
        """Past ``failover_after`` without an answer: to another server, once per silence."""
        silence = clock.now() - self._last_success
        if self._moved or silence < self.failover_after:
            return
        self._moved = True
        if self._session.leave_server(
            f"no answer for {silence:.1f}s (failover after {self.failover_after:g}s):"
            " to another server, the same session"
        ):
            self.failovers += 1

    def _succeeded(self, started: float, started_monotonic: float) -> None:
        self._last_success = max(self._last_success, started)
        self._moved = False
        if self._silent:
            self._silent = False
            log.warning("zookeeper answers again session=%s", self._session.name)
        try:
            self._on_alive(started_monotonic)
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
        # The server has not answered for fence_after: move to another one now, rather than
        # when kazoo's own ping notices (which the probe's steady round trips can put off for
        # as long as they go on).
        self._session.drop_connection("the server did not answer the liveness probe")
