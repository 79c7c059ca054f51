"""Who may run a job's driver as another OS user: ``security.proxy-users`` applied to a caller.

A job's ``proxy_user`` (spark-submit's ``--proxy-user``, Livy's ``proxyUser``) makes its
TaskManager start the driver with that user's uid, gid and groups. The JobManager stores such
a job only when the allowlist grants that user to the caller, by name, by one of its teams or
to every caller (``*``); nobody is granted anything by default, admins included. The
TaskManager checks its own copy of the list again before it switches users
(:mod:`steward.taskmanager.run_as`). The threat model: docs/security.md#proxy-users.

Example::

    check_proxy_user(caller, "etl", settings.security.proxy_users)  # or ProxyUserRefusedError
"""

from __future__ import annotations

from collections.abc import Iterable

from steward.config.keys_proxy_users import EVERY_CALLER, TEAM_PREFIX
from steward.errors import StewardError

from .identity import Identity


class ProxyUserRefusedError(StewardError):
    """A submission names an OS user that ``security.proxy-users`` does not grant its caller."""


def check_proxy_user(
    identity: Identity, user: str | None, grants: Iterable[tuple[str, str]]
) -> None:
    """Raise :class:`ProxyUserRefusedError` unless ``identity`` may run jobs as ``user``
    (None: the TaskManager's own user, always allowed)."""
    if user is None:
        return
    callers = {caller for granted, caller in grants if granted == user}
    if callers & _names_of(identity):
        return
    raise ProxyUserRefusedError(
        f"{identity.name} may not run jobs as OS user {user!r}: security.proxy-users does not"
        " grant it"
    )


def _names_of(identity: Identity) -> set[str]:
    return {EVERY_CALLER, identity.name, *(TEAM_PREFIX + team for team in identity.teams)}
