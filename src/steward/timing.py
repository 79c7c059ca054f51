"""The timing chain: the timeouts that keep two attempts of a job (or two leaders' initialize
hooks) from ever running at once, and the checks that they are in the right order.

docs/architecture.md ("Timing chain") states each bound and why it holds. In short, with T
the session timeout ZooKeeper *granted*, F ``taskmanager.fence-after``, D
``taskmanager.deadman-timeout``, P = F/8 the liveness probe's period, G
``jobmanager.replacement-grace``, Fj ``jobmanager.fence-after`` and M a margin of
:data:`MARGIN_SHARE` of T for the kills themselves and scheduling:

- ``D <= F``: a runner never outlives a silent TaskManager by more than its own fence-after;
- ``max(F, D + P) + M <= T + G``: a TaskManager cut off from ZooKeeper (F) or frozen (D, plus
  up to one probe period since its last round trip) has killed its attempts before its leases
  expire and the replacement grace ends, which is when a replacement may start;
- ``max(Fj, D + Fj/8) + M <= T``: a leader cut off (Fj) or frozen (D) has killed its
  initialize hooks before its session, and with it its latch, expires, which is when the next
  leader may be granted and run the same hooks (there is no grace before those);
- ``F < T``, as before: fence-after is counted from the last round trip, never past the lease;
- with the servers' own clock known (:class:`ServerTiming`, from their ``conf``), also
  ``F + L + M <= T + G`` and ``Fj + Lj + M <= T``, L = tickTime/2 + P (Lj with Fj/8): the
  ZooKeeper leader, which expires sessions, hears of a client's round trips through a follower
  only when it next pings that follower (every tickTime/2), so a follower cut off right after
  the probe's last round trip leaves the session known alive from up to L before it.

The probe's round trip is a ``sync``, which a follower answers only after the leader did: a
follower cut off from its leader goes on answering reads for up to syncLimit x tickTime, and a
read it answered proves nothing about the session (issue 23; docs/architecture.md).

The configured timeout is checked when the configuration is loaded; the granted one, which a
server's ``maxSessionTimeout`` (or ``minSessionTimeout``) may change, after connecting.
"""

from __future__ import annotations

from dataclasses import dataclass

MARGIN_SHARE = 0.1
"""Share of the session timeout left for SIGKILLs to land and threads to be scheduled."""
PROBE_ROUNDS = 8
"""Liveness-probe round trips per fence-after (the probe's period is fence-after / this).

Eight, not four: when a ZooKeeper leader freezes, the probe's last answer may be up to one
period old, and the other servers need about 3.5 s (the managed ensemble's syncLimit, then an
election) before a reconnect can succeed. At the default fence-after (6 s) a period of 1.5 s
left as little as 0.7 s of margin; 0.75 s leaves about 1.4 s (docs/reliability.md, seed 2032)."""


def _s(seconds: float) -> str:
    return f"{seconds:g}s"


@dataclass(frozen=True)
class ServerTiming:
    """A ZooKeeper ensemble's own clock, as its servers' ``conf`` shows it (in seconds)."""

    tick_time: float
    sync_limit: int

    @property
    def touch_lag(self) -> float:
        """Longest the leader may go without hearing of a round trip a follower answered: it
        collects its followers' clients' touches with its pings, every tickTime/2."""
        return self.tick_time / 2

    @property
    def follower_grace(self) -> float:
        """How long a follower cut off from the leader goes on answering reads."""
        return self.sync_limit * self.tick_time


SAMPLE_SERVERS = ServerTiming(tick_time=2.0, sync_limit=5)
"""ZooKeeper's sample zoo.cfg (conf/zoo_sample.cfg), what many ensembles run as shipped."""


@dataclass(frozen=True)
class TimingChain:
    """The chain's settings, in seconds, as configured."""

    session_timeout: float
    fence_after: float
    deadman_timeout: float
    jobmanager_fence_after: float
    replacement_grace: float

    @property
    def probe_period(self) -> float:
        return self.fence_after / PROBE_ROUNDS

    @property
    def taskmanager_bound(self) -> float:
        """Longest an attempt may run after its TaskManager's last ZooKeeper round trip."""
        return max(self.fence_after, self.deadman_timeout + self.probe_period)

    @property
    def jobmanager_bound(self) -> float:
        """Longest an initialize hook may run after its leader's last ZooKeeper round trip."""
        period = self.jobmanager_fence_after / PROBE_ROUNDS
        return max(self.jobmanager_fence_after, self.deadman_timeout + period)

    def problems(
        self, session_timeout: float | None = None, servers: ServerTiming | None = None
    ) -> list[tuple[str, str]]:
        """What breaks the chain with ``session_timeout`` (default: the configured one) and,
        when known, the servers' clock, as (key to change, explanation) pairs; empty when the
        chain holds."""
        t = self.session_timeout if session_timeout is None else session_timeout
        margin = MARGIN_SHARE * t
        found: list[tuple[str, str]] = []
        if self.fence_after >= t:
            found.append(("taskmanager.fence-after", self._fence_after_too_long(t)))
        if self.deadman_timeout > self.fence_after:
            found.append(("taskmanager.deadman-timeout", self._deadman_too_long()))
        if self.taskmanager_bound + margin > t + self.replacement_grace:
            found.append(("taskmanager.fence-after", self._tm_chain_broken(t, margin)))
        if self.jobmanager_bound + margin > t:
            found.append(("jobmanager.fence-after", self._jm_chain_broken(t, margin)))
        if servers is not None:
            found += self._server_problems(t, margin, servers)
        return found

    def _server_problems(
        self, t: float, margin: float, servers: ServerTiming
    ) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        lag = servers.touch_lag + self.probe_period
        if self.fence_after + lag + margin > t + self.replacement_grace:
            text = self._lag_breaks("taskmanager", self.fence_after, lag, margin)
            found.append(("taskmanager.fence-after", text + self._grace_note(t)))
        lag = servers.touch_lag + self.jobmanager_fence_after / PROBE_ROUNDS
        if self.jobmanager_fence_after + lag + margin > t:
            text = self._lag_breaks("jobmanager", self.jobmanager_fence_after, lag, margin)
            found.append(("jobmanager.fence-after", text + self._session_note(t)))
        return found

    @staticmethod
    def _lag_breaks(process: str, fence_after: float, lag: float, margin: float) -> str:
        return (
            f"{process}.fence-after ({_s(fence_after)}), plus how late the ZooKeeper leader"
            f" may hear of a round trip a follower answered (tickTime/2 + one probe period ="
            f" {_s(lag)}), plus a {_s(margin)} margin, must not exceed"
        )

    @staticmethod
    def _session_note(t: float) -> str:
        return f" the session timeout ({_s(t)}), or the next leader could run the same hooks"

    def _grace_note(self, t: float) -> str:
        return (
            f" the session timeout ({_s(t)}) plus jobmanager.replacement-grace"
            f" ({_s(self.replacement_grace)}), or a replacement could start while it runs"
        )

    def _fence_after_too_long(self, t: float) -> str:
        return (
            f"taskmanager.fence-after ({_s(self.fence_after)}) must be shorter than the session"
            f" timeout ({_s(t)}), or an attempt could outlive its lease"
        )

    def _deadman_too_long(self) -> str:
        return (
            f"taskmanager.deadman-timeout ({_s(self.deadman_timeout)}) must not be longer than"
            f" taskmanager.fence-after ({_s(self.fence_after)}): the runner of a frozen"
            " TaskManager would outlive its lease"
        )

    def _tm_chain_broken(self, t: float, margin: float) -> str:
        return (
            "an attempt may run for max(taskmanager.fence-after, taskmanager.deadman-timeout +"
            f" fence-after/{PROBE_ROUNDS}) = {_s(self.taskmanager_bound)} after its"
            f" TaskManager's last ZooKeeper round trip; with a {_s(margin)} margin that must not"
            f" exceed the session timeout ({_s(t)}) plus jobmanager.replacement-grace"
            f" ({_s(self.replacement_grace)}), or a replacement could start while it runs"
        )

    def _jm_chain_broken(self, t: float, margin: float) -> str:
        return (
            "an initialize hook may run for max(jobmanager.fence-after,"
            f" taskmanager.deadman-timeout + jobmanager.fence-after/{PROBE_ROUNDS})"
            f" = {_s(self.jobmanager_bound)} after its leader's last ZooKeeper round trip; with a"
            f" {_s(margin)} margin that must not exceed the session timeout ({_s(t)}), or the"
            " next leader could run the same hooks meanwhile"
        )

    def granted_problem(self, granted: float) -> str | None:
        """A clear refusal when the session timeout the server granted breaks the chain."""
        broken = self.problems(granted)
        if not broken:
            return None
        keys = sorted({key for key, _ in broken})
        return (
            f"ZooKeeper granted a session timeout of {_s(granted)} where"
            f" high-availability.zookeeper.session-timeout asks for {_s(self.session_timeout)}"
            " (the servers' maxSessionTimeout or minSessionTimeout in zoo.cfg bound it): "
            + "; ".join(text for _, text in broken)
            + f". Set {', '.join(keys)} for a {_s(granted)} session, or raise the servers'"
            " maxSessionTimeout to at least the configured session timeout."
        )

    def servers_problem(self, granted: float, servers: ServerTiming) -> str | None:
        """A clear refusal when the servers' clock leaves the chain no room with ``granted``
        (the rest of the chain holding; :meth:`granted_problem` says when it does not)."""
        broken = self._server_problems(granted, MARGIN_SHARE * granted, servers)
        if not broken:
            return None
        keys = sorted({key for key, _ in broken})
        return (
            f"the ZooKeeper servers tick every {_s(servers.tick_time)} (tickTime in their"
            " conf): "
            + "; ".join(text for _, text in broken)
            + f". Lower {', '.join(keys)}, raise high-availability.zookeeper.session-timeout,"
            " or lower the servers' tickTime."
        )
