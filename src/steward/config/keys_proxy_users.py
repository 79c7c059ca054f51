"""The ``security.proxy-users`` key: which callers may run their jobs' drivers as which OS users.

Written as ``os-user=caller`` pairs separated by commas; an OS user appears once per caller or
team it is granted to::

    security.proxy-users = "etl=alice, etl=team:data, reports=team:bi"

A caller is a credential's name (a token's, a certificate's CN, the sign-on user), ``team:NAME``
(every member of that team) or ``*`` (every caller that may submit: only for a cluster without
authentication, where every caller is ``anonymous``). Nothing is granted by default, admins
included: running code as another OS user is a host privilege, not a Steward role.
"""

from __future__ import annotations

import re

from steward.config.option import Option
from steward.config.units import to_str
from steward.wire.patterns import OS_USER_PATTERN, TEAM_PATTERN

TEAM_PREFIX = "team:"
EVERY_CALLER = "*"
_OS_USER = re.compile(OS_USER_PATTERN)
_TEAM = re.compile(TEAM_PATTERN)


def to_grants(value: object) -> tuple[tuple[str, str], ...]:
    """``"user=caller, ..."`` into (OS user, caller) pairs, in order."""
    pairs: list[tuple[str, str]] = []
    for part in to_str(value).split(","):
        if part.strip():
            user, _, caller = part.strip().partition("=")
            pairs.append((user.strip(), caller.strip()))
    return tuple(pairs)


def _grant_problem(pairs: tuple[tuple[str, str], ...]) -> str | None:
    for user, caller in pairs:
        if not _OS_USER.fullmatch(user):
            return f"{user!r} is not an OS user's name (lower case, e.g. etl=alice)"
        team = caller.removeprefix(TEAM_PREFIX)
        if caller != EVERY_CALLER and not _TEAM.fullmatch(team):
            return f"{user}={caller!r}: the caller must be a name, team:NAME or *"
    return None


PROXY_USER_OPTIONS: tuple[Option, ...] = (
    Option(
        "security.proxy-users",
        to_grants,
        "",
        "Who may run a job's driver as another OS user (`--proxy-user`, Livy's `proxyUser`):"
        " `os-user=caller` pairs separated by commas, the caller a credential's name,"
        " `team:NAME` or `*` (every caller). A submission naming a user not granted to its"
        " caller is refused (403, nothing stored); a TaskManager runs only the users its own"
        " configuration lists, and only as root. Empty: no job runs as another user. See"
        " [security.md](security.md#proxy-users).",
        _grant_problem,
        setting="security.proxy_users",
    ),
)
