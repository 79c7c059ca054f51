"""The address a request counts under for rate limits (:mod:`.rate_limits`).

Its TCP peer's, except for a write a standby forwarded to the leader: the leader's peer is
then the standby, and counting the standby would let one guesser lock every forwarded caller
out. A standby names the client it forwards for in :data:`FORWARDED_FOR` (the audit log shows
it too) and vouches for that name with :data:`FORWARDED_PROOF`, an HMAC of it under the
cluster's internal credential: only a cluster member can make one, so a client that sends the
header itself is still counted under its own address. (The caller's own credential still goes
with the forward, and the leader verifies it: the proof vouches for an address, never for a
caller.)
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from functools import lru_cache

from starlette.types import Scope

from steward.security.scope_headers import header as _header

FORWARDED_FOR = "x-steward-forwarded-for"
"""Set by a standby that forwards a write: the client it came from, ``host:port``."""
FORWARDED_PROOF = "x-steward-forwarded-proof"
"""The standby's HMAC-SHA256 of :data:`FORWARDED_FOR` under the internal credential."""
_MAX_HOST = 64
ADDRESSES_KEPT = 4096


def proof(secret: str, forwarded_for: str) -> str:
    message = f"{FORWARDED_FOR}:{forwarded_for}".encode("utf-8", "surrogateescape")
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def forwarded_headers(forwarded_for: str, secret: str | None) -> dict[str, str]:
    """What a standby sends with a forward: the client's address, vouched for when it can."""
    headers = {FORWARDED_FOR: forwarded_for}
    if secret is not None and forwarded_for:
        headers[FORWARDED_PROOF] = proof(secret, forwarded_for)
    return headers


def source_address(scope: Scope, secret: str | None) -> str | None:
    """The address ``scope`` counts under: the forwarded client's when a cluster member
    vouched for it, else the peer's (None when the server does not know it)."""
    forwarded, given = _header(scope, FORWARDED_FOR), _header(scope, FORWARDED_PROOF)
    if forwarded and given and secret is not None and _vouched(forwarded, given, secret):
        return address_key(_host_of(forwarded))
    client = scope.get("client")
    return address_key(str(client[0])) if client else None


@lru_cache(maxsize=ADDRESSES_KEPT)
def address_key(host: str) -> str:
    """What an address counts as: itself, an IPv6 one as its /64 (one subscriber's usual
    share: counting each address would let one machine make millions). Remembered for the
    last :data:`ADDRESSES_KEPT` hosts: every request asks, and parsing one is not free."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host[:_MAX_HOST]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def _vouched(forwarded_for: str, given: str, secret: str) -> bool:
    expected = proof(secret, forwarded_for).encode()
    return hmac.compare_digest(given.encode("latin-1"), expected)


def _host_of(forwarded_for: str) -> str:
    """The host of the first ``host:port`` of a :data:`FORWARDED_FOR` (a chain reads
    ``client via standby``)."""
    first = forwarded_for.split(" via ", 1)[0].strip()
    host, _, port = first.rpartition(":")
    return host if host and port.isdigit() else first
