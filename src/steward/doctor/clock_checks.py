"""The ZooKeeper servers' clock against the timing chain: tickTime and syncLimit.

The chain (docs/architecture.md, "Timing chain") counts on the ensemble's leader hearing of a
round trip a follower answered at most tickTime/2 (its ping period) plus one probe period
late; a tickTime too long for the configured timeouts breaks it (an error: an attempt could
outlive its lease). And the liveness probe's ``sync`` cannot succeed while the followers wait
for a frozen or cut-off ZooKeeper leader (syncLimit x tickTime, then an election): when that
is not well inside fence-after, every TaskManager kills its attempts though no session is lost
(a warning: availability, not safety). Both need ``conf`` in the servers' 4lw whitelist; a
server that hides it leaves the chain unchecked against its clock, which is said too.
"""

from __future__ import annotations

from collections.abc import Iterator

from steward.ha.session import Session
from steward.timing import ServerTiming, TimingChain
from steward.wire.doctor import Finding, ServerReport, Severity

ELECTION_TICKS = 2
"""Ticks an election takes after the followers gave up on their leader (about, on a LAN)."""


def check_server_clock(servers: list[ServerReport], session: Session) -> Iterator[Finding]:
    """Findings about each answering server's tickTime and syncLimit."""
    chain = session.timing
    if chain is None:
        return
    granted = session.granted_session_timeout or session.session_timeout
    for server in servers:
        if not server.answered:
            continue  # zookeeper-server-silent says so
        if server.tick_time_ms is None or server.tick_time_ms <= 0:
            yield _hidden(server)
            continue
        clock = ServerTiming(server.tick_time_ms / 1000.0, server.sync_limit or 0)
        if (problem := chain.servers_problem(granted, clock)) is not None:
            yield Finding(
                check="zookeeper-tick-breaks-timing",
                severity=Severity.ERROR,
                subject=server.address,
                message=problem,
                action="see docs/architecture.md, 'Timing chain'",
            )
        yield from _follower_grace(server.address, clock, chain)


def _follower_grace(address: str, clock: ServerTiming, chain: TimingChain) -> Iterator[Finding]:
    outage = clock.follower_grace + ELECTION_TICKS * clock.tick_time
    fence_after = min(chain.fence_after, chain.jobmanager_fence_after)
    if clock.sync_limit == 0 or outage < fence_after:
        return
    yield Finding(
        check="zookeeper-follower-grace",
        severity=Severity.WARNING,
        subject=address,
        message=f"a frozen or cut-off ZooKeeper leader leaves its followers waiting syncLimit x"
        f" tickTime ({clock.follower_grace:g} s) before they elect another (about"
        f" {outage:g} s in all), while the liveness probe fences after {fence_after:g} s:"
        " every TaskManager would kill its attempts (and the leader its hooks) though no"
        " session is lost",
        action="lower the servers' syncLimit or tickTime (syncLimit x tickTime well under"
        " taskmanager.fence-after; docs/operations.md, 'ZooKeeper settings'), or raise the"
        " session timeout and fence-after with it",
    )


def _hidden(server: ServerReport) -> Finding:
    return Finding(
        check="zookeeper-conf-hidden",
        severity=Severity.WARNING,
        subject=server.address,
        message="the server does not answer `conf`: the timing chain cannot be checked against"
        " its tickTime and syncLimit",
        action="add conf to its 4lw.commands.whitelist, or check the chain by hand"
        " (docs/operations.md, 'ZooKeeper settings')",
    )
