"""One configuration key (:class:`Option`) and the checks and conversions several keys share.

The keys themselves are :data:`steward.config.keys.OPTIONS`, in tables by what they configure
(keys_ha.py, keys_processes.py, keys_results.py, and keys.py's own). Each option names the typed
settings field that exposes it, so a key is written once: :mod:`steward.config.settings` builds
its groups from the table.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Option:
    """One configuration key: its type converter, default, validation and documentation."""

    key: str
    parse: Callable[[object], Any]
    default: Any
    doc: str
    """Help text in Markdown: the key's row of docs/configuration.md (steward.config.docs)."""
    check: Callable[[Any], str | None] = lambda _value: None
    _: KW_ONLY
    setting: str
    """The typed field that exposes the key: ``<group>.<field>`` of
    :class:`~steward.config.settings.Settings` (one field per key, one key per field)."""
    to_setting: Callable[[Any], Any] = lambda value: value
    """The field's value from the parsed (and derived) one, where the two differ."""
    derived_default: str = ""
    """What a default of None is derived from, as docs/configuration.md shows it."""

    @property
    def env_var(self) -> str:
        return "STEWARD_" + re.sub(r"[.\-]", "_", self.key).upper()

    @property
    def group(self) -> str:
        return self.setting.partition(".")[0]

    @property
    def field(self) -> str:
        return self.setting.partition(".")[2]


def optional_path(value: str) -> Path | None:
    """A file the key may leave empty: None then."""
    return Path(value) if value else None


def zero_is_none(value: int) -> int | None:
    """A limit that 0 turns off: None then."""
    return value or None


def _listed(value: str) -> list[str]:
    """The non-empty, stripped entries of a comma-separated list."""
    return [part.strip() for part in value.split(",") if part.strip()]


def networks(value: str) -> tuple[str, ...]:
    """A comma-separated list of IP addresses and networks, each normalised (``10.0.0.0/8``,
    a bare address as itself); empty: none."""
    found = (ipaddress.ip_network(part, strict=False) for part in _listed(value))
    return tuple(str(net.network_address) if net.num_addresses == 1 else str(net) for net in found)


def network_list(value: str) -> str | None:
    """Why ``value`` is not a list :func:`networks` reads (None when it is)."""
    for part in _listed(value):
        if part == "*":
            return "'*' would believe any client's headers: list the proxies' addresses"
        try:
            ipaddress.ip_network(part, strict=False)
        except ValueError:
            return f"{part!r} is not an IP address or network (expected e.g. 10.0.0.5,10.1.0.0/16)"
    return None


def positive(value: float) -> str | None:
    return None if value > 0 else "must be greater than zero"


MIN_ATTEMPT_LOG_SIZE = 64 * 1024
"""Smallest attempt log cap: room for a traceback at each end (see steward.supervisor.logcap)."""


def attempt_log_size(value: int) -> str | None:
    if value == 0 or value >= MIN_ATTEMPT_LOG_SIZE:
        return None
    return "must be at least 64k (0 turns the cap off)"


def zk_path(value: str) -> str | None:
    if not value.startswith("/") or value.endswith("/") or "//" in value:
        return "must be an absolute ZooKeeper path like /steward (no trailing slash)"
    return None


def cluster_id(value: str) -> str | None:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}", value):
        return "must be 1-64 letters, digits, '.', '_' or '-'"
    return None


def quorum(value: str) -> str | None:
    for part in value.split(","):
        host, _, port = part.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            return f"{part.strip()!r} is not host:port (expected e.g. 127.0.0.1:2181,zk2:2181)"
    return None


FENCE_AFTER_SHARE = 0.6
"""taskmanager.fence-after defaults to this share of the session timeout."""
