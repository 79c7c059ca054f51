"""A private network of Linux network namespaces, for partition tests.

Layout (everything lives in namespaces this object created; the root namespace's addresses,
routes and firewall are never touched)::

    stw-<rand>-hub     a bridge br0 (10.213.0.254/24): the "switch", and the test's vantage
                       point (see ``Observer``)
    stw-<rand>-<name>  one per member (ZooKeeper, each JobManager, each TaskManager), with lo
                       and eth0 = 10.213.0.<n>/24, wired to the bridge by a veth pair whose
                       hub end is ``v-<name>``

A *cut* of a member sets its hub-side veth down: its packets go nowhere, nothing is reset,
exactly like an unplugged cable. A *block* between two members adds blackhole routes in both
of their namespaces, so they cannot talk while each still reaches everyone else.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

SUBNET = "10.213.0"
HUB_ADDRESS = f"{SUBNET}.254"
_CLONE_NEWNET = 0x40000000


class NetworkUnavailableError(Exception):
    """Namespaces cannot be made here (not root, no CAP_NET_ADMIN, no ``ip``)."""


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def can_drop_randomly() -> bool:
    """Whether random packet loss can be made (nftables' ``nft``, Debian's nftables)."""
    return shutil.which("nft") is not None


_LOSS_TABLE = "steward_loss"


def _nft(ns: str, command: str) -> None:
    argv = ["ip", "netns", "exec", ns, "nft", command]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"nft {command} in {ns}: {done.stderr.strip()}")


def _ip_tc(ns: str, action: str, dev: str, *qdisc: str) -> None:
    argv = ["tc", "-n", ns, "qdisc", action, "dev", dev, "root", *qdisc]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")


class Network:
    """Namespaces, a bridge and veth pairs; ``close()`` deletes every one of them."""

    def __init__(self) -> None:
        if shutil.which("ip") is None:
            raise NetworkUnavailableError("no `ip` command (apt-get install -y iproute2)")
        self.prefix = f"stw-{secrets.token_hex(3)}"
        self.hub = f"{self.prefix}-hub"
        self.members: dict[str, str] = {}  # name -> address
        self._namespaces: list[str] = []
        self._blocked: set[tuple[str, str]] = set()
        try:
            self._add_namespace(self.hub)
        except RuntimeError as exc:
            raise NetworkUnavailableError(f"cannot create a network namespace: {exc}") from exc
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "addr", "add", f"{HUB_ADDRESS}/24", "dev", "br0")
        _ip("-n", self.hub, "link", "set", "br0", "up")

    def namespace(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def add(self, name: str) -> str:
        """A new member namespace wired to the bridge; returns its address."""
        if len(name) > 12:
            raise ValueError(f"member name {name!r} too long for an interface name")
        address = f"{SUBNET}.{len(self.members) + 1}"
        ns = self.namespace(name)
        self._add_namespace(ns)
        _ip("-n", self.hub, "link", "add", f"v-{name}", "type", "veth", "peer", "eth0", "netns", ns)
        _ip("-n", self.hub, "link", "set", f"v-{name}", "master", "br0", "up")
        _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        self.members[name] = address
        return address

    def exec_prefix(self, name: str) -> list[str]:
        """The argv prefix that runs a command inside member ``name``'s namespace."""
        return ["ip", "netns", "exec", self.namespace(name)]

    # ------------------------------------------------------------------ faults

    def cut(self, name: str) -> None:
        """Unplug ``name``: it reaches nobody, nobody reaches it."""
        _ip("-n", self.hub, "link", "set", f"v-{name}", "down")

    def heal(self, name: str) -> None:
        _ip("-n", self.hub, "link", "set", f"v-{name}", "up")

    def block(self, a: str, b: str) -> None:
        """Drop every packet between ``a`` and ``b`` (both ways); both still reach the rest."""
        _ip("-n", self.namespace(a), "route", "add", "blackhole", f"{self.members[b]}/32")
        _ip("-n", self.namespace(b), "route", "add", "blackhole", f"{self.members[a]}/32")
        self._blocked.add((a, b))

    def unblock(self, a: str, b: str) -> None:
        _ip("-n", self.namespace(a), "route", "del", "blackhole", f"{self.members[b]}/32")
        _ip("-n", self.namespace(b), "route", "del", "blackhole", f"{self.members[a]}/32")
        self._blocked.discard((a, b))

    def throttle(
        self, name: str, rate: str = "256kbit", latency: str = "300ms", loss_percent: int = 0
    ) -> None:
        """Make ``name``'s link slow both ways: a token bucket of ``rate``, packets that would
        wait longer than ``latency`` dropped (tbf), and ``loss_percent`` of its packets dropped
        at random each way (nftables' ``numgen random``): what netem's delay and loss would
        do, which this kernel does not have."""
        for ns, dev in ((self.hub, f"v-{name}"), (self.namespace(name), "eth0")):
            _ip_tc(ns, "add", dev, "tbf", "rate", rate, "burst", "16kbit", "latency", latency)
        if loss_percent:
            self._drop_randomly(name, loss_percent)

    def unthrottle(self, name: str) -> None:
        for ns, dev in ((self.hub, f"v-{name}"), (self.namespace(name), "eth0")):
            with contextlib.suppress(RuntimeError):
                _ip_tc(ns, "del", dev)
        with contextlib.suppress(RuntimeError):
            _nft(self.namespace(name), f"delete table inet {_LOSS_TABLE}")

    def _drop_randomly(self, name: str, percent: int) -> None:
        ns = self.namespace(name)
        _nft(ns, f"add table inet {_LOSS_TABLE}")
        for chain, hook, match in (("in", "input", "iifname"), ("out", "output", "oifname")):
            _nft(
                ns,
                f"add chain inet {_LOSS_TABLE} {chain} {{ type filter hook {hook} priority 0 ; }}",
            )
            _nft(
                ns,
                f'add rule inet {_LOSS_TABLE} {chain} {match} "eth0"'
                f" numgen random mod 100 < {percent} drop",
            )

    # ------------------------------------------------------------------ teardown

    def close(self) -> None:
        """Delete every namespace (their veths and routes go with them). Idempotent."""
        for ns in reversed(self._namespaces):
            with contextlib.suppress(RuntimeError):
                _ip("netns", "del", ns)
        self._namespaces.clear()

    def _add_namespace(self, ns: str) -> None:
        _ip("netns", "add", ns)
        self._namespaces.append(ns)
        _ip("-n", ns, "link", "set", "lo", "up")


def enter_namespace(path: str) -> None:
    """Move the calling thread (only it; and the threads and processes it starts from now on)
    into the network namespace at ``path`` (``/run/netns/<name>``, or ``/proc/self/ns/net``
    of another moment to come back)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns({path}): {os.strerror(errno)}")
    finally:
        os.close(fd)


class Observer:
    """Runs the test's own network calls from inside the hub namespace.

    The test process stays in the root namespace; one worker thread enters the hub with
    setns(2) (which moves only the calling thread), so every socket it opens (httpx, a
    four-letter word) is on the private network. Call :meth:`run` with the work to do.
    """

    def __init__(self, network: Network) -> None:
        self._path = f"/run/netns/{network.hub}"
        self._pool = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="netns-observer", initializer=self._enter
        )
        self._thread: int | None = None

    def _enter(self) -> None:
        self._thread = threading.get_ident()
        enter_namespace(self._path)

    def run(self, work: Callable[[], T]) -> T:
        if threading.get_ident() == self._thread:
            return work()  # already on the private network (a nested call)
        return self._pool.submit(work).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
