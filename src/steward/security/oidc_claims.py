"""A verified sign-on token's claims into an :class:`Identity`: its user claim names the caller,
its groups claim gives the role (the highest any group maps to) and the teams (every team any
group maps to), by ``security.oidc.group-roles`` and ``group-teams``.

A token whose groups map to no role is refused with :class:`UnmappedIdentityError` (403, not
401: the provider vouched for the caller, Steward's configuration admits it to nothing, and
signing in again would not help). A token without the user claim, or with one that is not a
short printable string, is refused as invalid (None: 401).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from steward.errors import UnmappedIdentityError
from steward.wire.tokens import Role

from .identity import Identity

MAX_NAME = 128
_RANK = {Role.VIEWER: 0, Role.SUBMITTER: 1, Role.ADMIN: 2}


@dataclass(frozen=True)
class ClaimMapping:
    """Which claims name the caller and its groups, and what the groups grant."""

    user_claim: str
    groups_claim: str
    group_roles: tuple[tuple[str, str], ...]
    group_teams: tuple[tuple[str, str], ...] = ()

    def identity(self, claims: Mapping[str, object]) -> Identity | None:
        """The caller the claims name; None if they name nobody usable; raises
        :class:`UnmappedIdentityError` if no group of theirs maps to a role."""
        name = claims.get(self.user_claim)
        if not isinstance(name, str) or not _printable(name):
            return None
        groups = self.groups(claims)
        role = self.role(groups)
        if role is None:
            raise UnmappedIdentityError(
                f"{name} signed in, but none of its groups maps to a Steward role"
                f" (security.oidc.group-roles); groups in {self.groups_claim!r}:"
                f" {', '.join(sorted(groups)[:20]) or 'none'}"
            )
        teams = frozenset(team for group, team in self.group_teams if group in groups)
        return Identity(name=name, role=role, teams=teams)

    def groups(self, claims: Mapping[str, object]) -> frozenset[str]:
        """The claim's groups: a list of strings, or one string (some providers send a single
        group bare); anything else counts as none."""
        value = claims.get(self.groups_claim)
        if isinstance(value, str):
            return frozenset({value})
        if isinstance(value, list):
            return frozenset(item for item in value if isinstance(item, str))
        return frozenset()

    def role(self, groups: frozenset[str]) -> Role | None:
        roles = [Role(role) for group, role in self.group_roles if group in groups]
        return max(roles, key=_RANK.__getitem__, default=None)


def _printable(name: str) -> bool:
    return 0 < len(name) <= MAX_NAME and name.isprintable()
