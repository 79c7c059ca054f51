"""Who is asking: the name and role of a verified credential, and its token's id."""

from __future__ import annotations

from dataclasses import dataclass

from steward.wire.tokens import Role

from .roles import INTERNAL, Action, allows


@dataclass(frozen=True)
class Identity:
    name: str
    role: Role | str
    """A :class:`~steward.wire.tokens.Role`, or :data:`~.roles.INTERNAL`."""
    token_id: str | None = None
    """The token's public id (None for the internal credential and with auth off)."""
    teams: frozenset[str] = frozenset()
    """The teams the caller belongs to: whose jobs it may see and submit as (an admin sees
    every team's)."""

    def may(self, action: Action) -> bool:
        return allows(self.role, action)

    @property
    def internal(self) -> bool:
        return self.role == INTERNAL


INTERNAL_IDENTITY = Identity(name="internal", role=INTERNAL)
ANONYMOUS_ADMIN = Identity(name="anonymous", role=Role.ADMIN)
"""Everyone, when ``security.auth.enabled`` is false (a trusted network only)."""
