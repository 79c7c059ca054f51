"""The ZooKeeper servers themselves: versions with known data-loss bugs, and session limits.

Each server of the connect string is asked ``srvr`` (version, mode) and ``conf`` (tickTime,
minSessionTimeout, maxSessionTimeout) on its client port; both need the server's
``4lw.commands.whitelist`` (the managed ZooKeeper allows them). A server that does not answer
is a finding; one that answers ``srvr`` but not ``conf`` only leaves its limits unknown.

Why the version: ZooKeeper before 3.8.4 can lose acknowledged writes (ZOOKEEPER-4785 and
others; the chaos suite lost a job's result to 3.8.0, docs/reliability.md). Why the limits: a
server grants a session timeout only within [minSessionTimeout, maxSessionTimeout], by
default [2, 20] x tickTime; what it grants instead of the configured one shifts the timing
chain that rules 3-5 stand on (docs/architecture.md, "Timing chain").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from steward.ha.session import Session
from steward.wire.doctor import Finding, ServerReport, Severity
from steward.zookeeper.fourletter import four_letter_word

SAFE_VERSION = (3, 8, 4)
"""The first release without the known lost-write bugs."""
BAD_RELEASES = {(3, 9, 3): "ZOOKEEPER-4925"}
"""Later releases with a data-loss bug of their own (docs/operations.md, "ZooKeeper version")."""

_VERSION = re.compile(r"Zookeeper version: (\d+)\.(\d+)\.(\d+)")
_MODE = re.compile(r"^Mode: (\w+)", re.MULTILINE)
_CONF = re.compile(
    r"^(tickTime|syncLimit|minSessionTimeout|maxSessionTimeout)=(-?\d+)\s*$", re.MULTILINE
)


def ask(host: str, port: int, timeout: float = 2.0) -> ServerReport:
    """What the server on ``host:port`` says about itself."""
    srvr = four_letter_word(port, "srvr", host=host, timeout=timeout)
    version = _VERSION.search(srvr)
    mode = _MODE.search(srvr)
    limits = (
        {key: int(value) for key, value in _CONF.findall(conf)}
        if srvr and (conf := four_letter_word(port, "conf", host=host, timeout=timeout))
        else {}
    )
    return ServerReport(
        address=f"{host}:{port}",
        answered=bool(srvr),
        version=".".join(version.groups()) if version else None,  # not the build's hash
        mode=mode.group(1) if mode else None,
        tick_time_ms=limits.get("tickTime"),
        sync_limit=limits.get("syncLimit"),
        min_session_timeout_ms=limits.get("minSessionTimeout"),
        max_session_timeout_ms=limits.get("maxSessionTimeout"),
    )


def check_servers(servers: list[ServerReport], session_timeout: float) -> Iterator[Finding]:
    """Findings about each server: silent, too old, or bounding the session timeout."""
    for server in servers:
        if not server.answered:
            yield Finding(
                check="zookeeper-server-silent",
                severity=Severity.WARNING,
                subject=server.address,
                message="the server did not answer `srvr`: it is down, cut off, or does not"
                " allow the four-letter word",
                action="check that it runs and that its 4lw.commands.whitelist has srvr,conf",
            )
            continue
        if server.version is None:
            continue
        if (problem := version_problem(server.version)) is not None:
            yield Finding(
                check="zookeeper-version",
                severity=Severity.ERROR,
                subject=server.address,
                message=f"ZooKeeper {server.version} {problem}: a job's result or pointer may"
                " vanish",
                action="upgrade the ensemble to 3.8.4 or newer, not 3.9.3 (Steward's managed"
                " ZooKeeper is 3.9.5)",
            )
        yield from _session_bounds(server, session_timeout)


def version_problem(version: str) -> str | None:
    """Why ``version`` ("3.8.0", "3.9.5-abc") can lose acknowledged writes; None if known good."""
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:3])
    if numbers < SAFE_VERSION:
        return "can lose acknowledged writes (fixed in 3.8.4; ZOOKEEPER-4785)"
    if numbers in BAD_RELEASES:
        return f"can lose acknowledged writes ({BAD_RELEASES[numbers]})"
    return None


def _session_bounds(server: ServerReport, session_timeout: float) -> Iterator[Finding]:
    tick = server.tick_time_ms
    if tick is None or tick <= 0:
        return
    low = _positive(server.min_session_timeout_ms) or 2 * tick
    high = _positive(server.max_session_timeout_ms) or 20 * tick
    wanted = session_timeout * 1000.0
    if low <= wanted <= high:
        return
    granted = min(max(wanted, low), high)
    yield Finding(
        check="session-timeout-bounds",
        severity=Severity.WARNING,
        subject=server.address,
        message=f"high-availability.zookeeper.session-timeout is {session_timeout:g} s but"
        f" this server grants between {low / 1000:g} s and {high / 1000:g} s (tickTime"
        f" {tick} ms): it gives {granted / 1000:g} s instead",
        action="set the session timeout within those bounds, or the server's"
        " minSessionTimeout/maxSessionTimeout around it",
    )


def check_session(session: Session) -> Iterator[Finding]:
    """The session this process holds: the timeout it was granted against the configured one."""
    granted = session.granted_session_timeout
    if granted is None:
        return
    problem = session.granted_problem()
    if problem is not None:
        yield Finding(
            check="session-timeout-breaks-timing",
            severity=Severity.ERROR,
            subject="high-availability.zookeeper.session-timeout",
            message=problem,
            action="see docs/architecture.md, 'Timing chain'",
        )
    elif abs(granted - session.session_timeout) > 0.0005:
        yield Finding(
            check="session-timeout-granted",
            severity=Severity.WARNING,
            subject="high-availability.zookeeper.session-timeout",
            message=f"ZooKeeper granted {granted:g} s where {session.session_timeout:g} s is"
            " configured; the timing chain still holds",
            action="set the configured timeout within the servers' bounds, so that what runs"
            " is what the configuration says",
        )


def _positive(value: int | None) -> int | None:
    """A limit as ``conf`` shows it; -1 (and 0) mean "the default from tickTime"."""
    return value if value is not None and value > 0 else None
