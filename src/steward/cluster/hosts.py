"""The ``masters`` and ``workers`` files: how many JobManagers and TaskManagers run, and where.

One host per line; ``#`` starts a comment; blank lines are ignored. A ``masters`` line may give
the JobManager's REST port as ``host:port`` (``[::1]:8081`` for IPv6), as in Flink's masters
file. A host that is this machine (``localhost``, ``127.0.0.1``, ``::1``, its host name or fully
qualified name) runs its process here; any other host is reached over SSH
(:mod:`steward.cluster.remote`), and its process listens on the name or address the line gives,
so that name must be how the other hosts reach it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from steward.errors import LocalClusterError

_HOST = re.compile(r"[A-Za-z0-9_.:\-]{1,253}")
"""A name, an IPv4 or an IPv6 address: nothing a shell or ssh would read as an option."""
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


@dataclass(frozen=True)
class HostEntry:
    """One line of a hosts file."""

    host: str
    port: int | None
    line: int


@dataclass(frozen=True)
class Topology:
    """What to start: one REST port (None: any free one, or the configured one on another
    host) per JobManager, and M TaskManagers; each one's host, None for this machine (all of
    them when the hosts tuples are empty)."""

    jobmanager_ports: tuple[int | None, ...]
    taskmanagers: int
    jobmanager_hosts: tuple[str | None, ...] = ()
    taskmanager_hosts: tuple[str | None, ...] = ()

    def jobmanager_host(self, index: int) -> str | None:
        return self.jobmanager_hosts[index] if self.jobmanager_hosts else None

    def taskmanager_host(self, index: int) -> str | None:
        return self.taskmanager_hosts[index] if self.taskmanager_hosts else None

    @property
    def remote_hosts(self) -> set[str]:
        """The hosts reached over SSH."""
        return {h for h in (*self.jobmanager_hosts, *self.taskmanager_hosts) if h is not None}


def plan_topology(masters: Path, workers: Path, *, jobmanagers: int, taskmanagers: int) -> Topology:
    """The files decide where they exist; otherwise the counts given, on this machine."""
    ports: tuple[int | None, ...] = (None,) * jobmanagers
    jobmanager_hosts: tuple[str | None, ...] = (None,) * jobmanagers
    taskmanager_hosts: tuple[str | None, ...] = (None,) * taskmanagers
    if masters.is_file():
        entries = read_hosts(masters, allow_port=True)
        ports = tuple(entry.port for entry in entries)
        jobmanager_hosts = tuple(_remote_or_none(entry.host) for entry in entries)
    if workers.is_file():
        entries = read_hosts(workers, allow_port=False)
        taskmanager_hosts = tuple(_remote_or_none(entry.host) for entry in entries)
    if not ports or not taskmanager_hosts:
        raise LocalClusterError("a cluster needs at least one JobManager and one TaskManager")
    return Topology(ports, len(taskmanager_hosts), jobmanager_hosts, taskmanager_hosts)


def require_shared_zookeeper(topology: Topology, quorum: str | None) -> None:
    """Other hosts need a ZooKeeper they can reach: a configured quorum, not a loopback one."""
    hosts = topology.remote_hosts
    if not hosts:
        return
    if quorum is None:
        raise LocalClusterError(
            f"the masters and workers files name other hosts ({', '.join(sorted(hosts))}):"
            " a cluster across hosts needs a ZooKeeper every host can reach; set"
            " high-availability.zookeeper.quorum (docs/operations.md, a cluster across hosts)"
        )
    loopback = [part for part in quorum.split(",") if _is_loopback(part.rpartition(":")[0])]
    if loopback:
        raise LocalClusterError(
            f"high-availability.zookeeper.quorum names {', '.join(loopback)}, which the other"
            f" hosts ({', '.join(sorted(hosts))}) cannot reach: name the servers by addresses"
            " every host can reach"
        )


def _is_loopback(host: str) -> bool:
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host.strip("[] ")).is_loopback
    return host.strip().lower() == "localhost"


def read_hosts(path: Path, *, allow_port: bool) -> list[HostEntry]:
    """The entries of ``path`` (see the module docstring)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LocalClusterError(f"cannot read hosts file {path}: {exc.strerror}") from exc
    entries = parse_hosts(text, source=str(path), allow_port=allow_port)
    if not entries:
        raise LocalClusterError(f"hosts file {path} lists no host")
    return entries


def _remote_or_none(host: str) -> str | None:
    return None if is_local(host) else host


def parse_hosts(text: str, *, source: str, allow_port: bool) -> list[HostEntry]:
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if len(line.split()) != 1:
            raise LocalClusterError(f"{source}:{number}: one host per line, got {line!r}")
        host, port = _split_port(line, f"{source}:{number}")
        if not _HOST.fullmatch(host):
            raise LocalClusterError(f"{source}:{number}: {host!r} is not a host name or address")
        if port is not None and not allow_port:
            raise LocalClusterError(f"{source}:{number}: a workers line is a host, not host:port")
        entries.append(HostEntry(host, port, number))
    return entries


def is_local(host: str) -> bool:
    """Whether ``host`` names this machine."""
    name = host.lower().rstrip(".")
    if name in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    return name in {socket.gethostname().lower(), socket.getfqdn().lower()}


def _split_port(text: str, where: str) -> tuple[str, int | None]:
    if text.startswith("["):  # [v6]:port or [v6]
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else None
        if rest and port_text is None:
            raise LocalClusterError(f"{where}: cannot read {text!r} (expected [host]:port)")
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:  # a name, an IPv4 address or a bare IPv6 address
        host, port_text = text, None
    if port_text is None:
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise LocalClusterError(f"{where}: bad port in {text!r}")
    return host, int(port_text)
