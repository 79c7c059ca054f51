"""A caller's verified identity, carried from a standby to the leader.

A standby that forwards a write (``jobmanager/rest/forwarding.py``) sends a token caller's own
``Authorization``, which the leader verifies again. A caller that a client certificate named
has nothing the leader could verify: the certificate was the standby's TLS handshake's. For
that caller alone the standby vouches: it sends the cluster's internal credential with the
identity it verified (:func:`headers_for`: name, role and teams), over the TLS connection on
which it presents its own certificate. The leader's middleware takes that identity
(:func:`asserted`) only with the internal credential, only on a non-internal route, only where
client certificates are credentials at all, and only from a peer whose verified certificate is
a cluster member's (the CA's, naming no user role): a stolen internal credential alone vouches
for nobody. Anything else with the internal credential is refused as before (403: it is for
``/internal/`` only).
The caller's teams travel beside its name and role (a sign-on caller's are the leader's own
reading of the token the standby forwards, like a Steward token's).
"""

from __future__ import annotations

import re

from starlette.types import Scope

from steward.security.scope_headers import header as _header
from steward.wire.patterns import TEAM_PATTERN
from steward.wire.tokens import MAX_TEAMS, TOKEN_NAME_PATTERN, Role

from .certificates import identity_of
from .identity import Identity

ON_BEHALF_NAME = "x-steward-on-behalf-of"
ON_BEHALF_ROLE = "x-steward-on-behalf-role"
ON_BEHALF_TEAMS = "x-steward-on-behalf-teams"
"""The caller's teams, comma-separated (absent: none, the default team's)."""
_NAME = re.compile(TOKEN_NAME_PATTERN)
_TEAM = re.compile(TEAM_PATTERN)
_ROLES = frozenset(role.value for role in Role)


def headers_for(identity: Identity) -> dict[str, str]:
    """What a standby sends, beside the internal credential, for a certificate's caller."""
    headers = {ON_BEHALF_NAME: identity.name, ON_BEHALF_ROLE: str(identity.role)}
    if identity.teams:
        headers[ON_BEHALF_TEAMS] = ",".join(sorted(identity.teams))
    return headers


def asserted(scope: Scope) -> Identity | None:
    """The identity a request vouched for by the internal credential names, or None (absent,
    not a user's name and role, or not from a cluster member's certificate)."""
    name, role = _header(scope, ON_BEHALF_NAME), _header(scope, ON_BEHALF_ROLE)
    if name is None or role not in _ROLES or not _NAME.fullmatch(name):
        return None
    teams = _teams(_header(scope, ON_BEHALF_TEAMS))
    if teams is None or not _from_member(scope):
        return None
    return Identity(name=name, role=Role(role), teams=teams)


def _teams(header: str | None) -> frozenset[str] | None:
    """The teams a header lists, or None if one could not name a team."""
    if not header:
        return frozenset()
    teams = header.split(",")
    if len(teams) > MAX_TEAMS or not all(_TEAM.fullmatch(team) for team in teams):
        return None
    return frozenset(teams)


def _from_member(scope: Scope) -> bool:
    """The TLS handshake verified a peer certificate that names no user: a cluster member's."""
    tls = scope.get("extensions", {}).get("tls") or {}
    chain: list[object] = list(tls.get("client_cert_chain") or ())
    return bool(chain) and isinstance(chain[0], str) and identity_of(chain[0]) is None
