"""The ``masters`` and ``workers`` files: how many JobManagers and TaskManagers run, and where.

One host per line; ``#`` starts a comment; blank lines are ignored. A ``masters`` line may give
the JobManager's REST port as ``host:port`` (``[::1]:8081`` for IPv6), as in Flink's masters
file. ``steward cluster start`` starts processes on this machine only, so every host must be
this machine (``localhost``, ``127.0.0.1``, ``::1``, its host name or fully qualified name):
any other host is an error saying that remote hosts run ``steward jobmanager`` /
``steward taskmanager`` themselves.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path

from steward.errors import LocalClusterError

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


@dataclass(frozen=True)
class HostEntry:
    """One line of a hosts file."""

    host: str
    port: int | None
    line: int


@dataclass(frozen=True)
class Topology:
    """What to start: one REST port (None: any free one) per JobManager, and M TaskManagers."""

    jobmanager_ports: tuple[int | None, ...]
    taskmanagers: int


def plan_topology(masters: Path, workers: Path, *, jobmanagers: int, taskmanagers: int) -> Topology:
    """The files decide where they exist; otherwise the counts given."""
    ports: tuple[int | None, ...] = (None,) * jobmanagers
    if masters.is_file():
        entries = read_hosts(masters, allow_port=True, command="steward jobmanager")
        ports = tuple(entry.port for entry in entries)
    if workers.is_file():
        taskmanagers = len(read_hosts(workers, allow_port=False, command="steward taskmanager"))
    if not ports or taskmanagers < 1:
        raise LocalClusterError("a cluster needs at least one JobManager and one TaskManager")
    return Topology(ports, taskmanagers)


def read_hosts(path: Path, *, allow_port: bool, command: str) -> list[HostEntry]:
    """The entries of ``path``, every one of them this machine (see the module docstring)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LocalClusterError(f"cannot read hosts file {path}: {exc.strerror}") from exc
    entries = parse_hosts(text, source=str(path), allow_port=allow_port)
    if not entries:
        raise LocalClusterError(f"hosts file {path} lists no host")
    for entry in entries:
        if not is_local(entry.host):
            raise LocalClusterError(
                f"{path}:{entry.line}: {entry.host} is not this machine. `steward cluster start`"
                f" runs processes only here; on {entry.host} run `{command}` yourself, pointed at"
                " the same ZooKeeper quorum and cluster id (see docs/operations.md)"
            )
    return entries


def parse_hosts(text: str, *, source: str, allow_port: bool) -> list[HostEntry]:
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if len(line.split()) != 1:
            raise LocalClusterError(f"{source}:{number}: one host per line, got {line!r}")
        host, port = _split_port(line, f"{source}:{number}")
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
