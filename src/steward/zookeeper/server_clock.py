"""The ZooKeeper ensemble's own clock (tickTime, syncLimit), as its servers' ``conf`` shows it.

The timing chain depends on it (docs/architecture.md, "Timing chain"): the ensemble's leader,
which expires sessions, hears of the round trips a follower answered only when it next pings
that follower, every tickTime/2, so a process fences that much earlier than its own clock
alone would say. ``conf`` needs the server's ``4lw.commands.whitelist`` (the managed ZooKeeper
allows it; a stock server since 3.5.3 allows only ``srvr``): a server that does not show it
leaves the clock unknown, which the caller reports rather than guesses.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

from steward.timing import ServerTiming
from steward.zookeeper.fourletter import four_letter_word

_CLOCK = re.compile(r"^(tickTime|syncLimit)=(\d+)\s*$", re.MULTILINE)
DEFAULT_PORT = 2181


def servers_of(quorum: str) -> list[tuple[str, int]]:
    """The (host, port) pairs of a connect string ``h1:p1,h2:p2[/chroot]``."""
    hosts = quorum.split("/", 1)[0]
    found = []
    for part in hosts.split(","):
        host, _, port = part.strip().rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if host and port.isdigit():
            found.append((host, int(port)))
        elif part.strip():
            found.append((part.strip(), DEFAULT_PORT))
    return found


def parse_conf(answer: str) -> ServerTiming | None:
    """The clock in a ``conf`` answer; None without a tickTime. A standalone server shows no
    syncLimit (it has no followers): 0."""
    found = dict(_CLOCK.findall(answer))
    tick = int(found.get("tickTime", "0"))
    if tick <= 0:
        return None
    return ServerTiming(tick_time=tick / 1000.0, sync_limit=int(found.get("syncLimit", "0")))


def server_clock(host: str, port: int, timeout: float = 1.0) -> ServerTiming | None:
    """What the server on ``host:port`` shows of its clock; None if it does not answer ``conf``."""
    return parse_conf(four_letter_word(port, "conf", host=host, timeout=timeout))


def ensemble_clock(quorum: str, timeout: float = 1.0) -> ServerTiming | None:
    """The slowest clock among the servers of ``quorum`` that show it (asked at once, so this
    takes about ``timeout`` at most); None if none does."""
    hosts = servers_of(quorum)
    if not hosts:
        return None
    with ThreadPoolExecutor(max_workers=len(hosts), thread_name_prefix="zk-conf") as pool:
        asked = [pool.submit(server_clock, host, port, timeout) for host, port in hosts]
        clocks = [clock for future in asked if (clock := future.result())]
    if not clocks:
        return None
    return ServerTiming(
        tick_time=max(c.tick_time for c in clocks), sync_limit=max(c.sync_limit for c in clocks)
    )
