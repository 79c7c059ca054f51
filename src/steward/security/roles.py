"""What each role may do. Each user role may do everything the roles before it may; the
TaskManagers' internal role may only heartbeat, and no user role may (docs/security.md)."""

from __future__ import annotations

import enum

from steward.wire.tokens import Role

INTERNAL = "internal"
"""The role of the cluster's internal credential (TaskManagers), never a token's."""


class Action(enum.StrEnum):
    READ = "read"
    """Jobs, results, the cluster, the OpenAPI document."""
    SUBMIT = "submit"
    """Submit a job and upload the files it names."""
    CANCEL_OWN = "cancel-own"
    """Cancel a job one submitted."""
    CANCEL_ANY = "cancel-any"
    MANAGE_TOKENS = "manage-tokens"
    HEARTBEAT = "heartbeat"
    """A TaskManager's heartbeat (``/internal/*``)."""


_RANK = {Role.VIEWER: 0, Role.SUBMITTER: 1, Role.ADMIN: 2}
_LEAST = {
    Action.READ: Role.VIEWER,
    Action.SUBMIT: Role.SUBMITTER,
    Action.CANCEL_OWN: Role.SUBMITTER,
    Action.CANCEL_ANY: Role.ADMIN,
    Action.MANAGE_TOKENS: Role.ADMIN,
}


def allows(role: Role | str, action: Action) -> bool:
    """Whether ``role`` (a user role, or :data:`INTERNAL`) may do ``action``."""
    if role == INTERNAL:
        return action is Action.HEARTBEAT
    if action is Action.HEARTBEAT or not isinstance(role, Role):
        return False
    return _RANK[role] >= _RANK[_LEAST[action]]
