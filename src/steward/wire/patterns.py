"""Names and limits the wire models check, as plain constants.

Configuration checks its keys against them too (a team's name, a proxy user's OS name, a
batch's size); it imports them from here, so that parsing a key does not import pydantic and
the models (start-up cost: every ``steward`` command loads its configuration first).
"""

from __future__ import annotations

TEAM_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}"
"""A team's name (docs/security.md, "Teams"): what a job belongs to and a token is in."""

OS_USER_PATTERN = r"^[a-z_][a-z0-9_.\-]{0,31}$"
"""An OS user's name a job may run as (``proxy_user``): POSIX's portable names, lower case."""

MAX_BATCH = 100
"""Submissions one batch may hold (a larger batch is refused whole: 413, nothing stored)."""
