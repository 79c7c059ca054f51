"""The session timeout a ZooKeeper server granted, checked against the timing chain.

A server's ``minSessionTimeout`` and ``maxSessionTimeout`` bound what a client asks for, so
the session a process gets may be shorter or longer than the configured one. Given the
configuration's :class:`~steward.timing.TimingChain`, a granted timeout that breaks the chain
(docs/architecture.md, "Timing chain") stops a starting process, and is logged as loudly as
possible once it runs; one that only differs is a warning. So does a servers' tickTime (read
from their ``conf`` at the first check) that leaves the chain no room.
"""

from __future__ import annotations

import logging

from steward.errors import ConfigurationError
from steward.timing import ServerTiming, TimingChain
from steward.zookeeper.server_clock import ensemble_clock

log = logging.getLogger(__name__)

SESSION_TIMEOUT_KEY = "high-availability.zookeeper.session-timeout"


class GrantedTimeout:
    """What the servers granted one session, and whether the timing chain still holds."""

    def __init__(
        self,
        name: str,
        configured: float,
        timing: TimingChain | None,
        quorum: str | None = None,
    ) -> None:
        self._name = name
        self._configured = configured
        self._timing = timing
        self._quorum = quorum
        self.value: float | None = None
        """Seconds granted at the last connect; None before the first."""
        self.servers: ServerTiming | None = None
        """The servers' clock, read from their ``conf`` at the first check; None if unknown."""

    @property
    def timing(self) -> TimingChain | None:
        return self._timing

    def record(self, granted: float) -> None:
        self.value = granted

    def problem(self) -> str | None:
        """Why the granted timeout breaks the timing chain; None if it does not."""
        if self.value is None or self._timing is None:
            return None
        return self._timing.granted_problem(self.value)

    def servers_problem(self) -> str | None:
        """Why the servers' clock leaves the chain no room; None if it does not, or unknown."""
        if self.value is None or self._timing is None or self.servers is None:
            return None
        return self._timing.servers_problem(self.value, self.servers)

    def read_servers(self) -> None:
        """The servers' clock (once): the chain needs their tickTime (steward.timing)."""
        if self._quorum is None or self._timing is None or self.servers is not None:
            return
        self.servers = ensemble_clock(self._quorum)
        if self.servers is None:
            log.warning(
                "zookeeper servers do not show their conf session=%s: the timing chain is"
                " checked without their tickTime (allow conf in 4lw.commands.whitelist;"
                " docs/operations.md, 'ZooKeeper settings')",
                self._name,
            )

    def check(self) -> None:
        """Refuse (:class:`ConfigurationError`) a granted timeout that breaks the timing
        chain; warn when it only differs from the configured one."""
        granted = self.value
        if granted is None:
            return
        self.read_servers()
        problem = self.problem() or self.servers_problem()
        if problem:
            log.error("zookeeper session too short session=%s: %s", self._name, problem)
            raise ConfigurationError(problem, key=SESSION_TIMEOUT_KEY)
        if abs(granted - self._configured) > 0.0005:
            log.warning(
                "zookeeper granted another session timeout session=%s granted=%gs"
                " configured=%gs (%s; the servers' minSessionTimeout/maxSessionTimeout bound"
                " it); the timing chain still holds",
                self._name,
                granted,
                self._configured,
                SESSION_TIMEOUT_KEY,
            )

    def recheck(self) -> None:
        """:meth:`check` for a new session after LOST, perhaps from another server: a
        running process cannot refuse to start any more, so it says so as loudly as it can."""
        try:
            self.check()
        except ConfigurationError as exc:
            log.error("the new zookeeper session breaks the timing chain session=%s", self._name)
            log.debug("timing chain problem: %s", exc)
