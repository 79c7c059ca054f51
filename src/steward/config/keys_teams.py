"""The ``security.teams.*`` keys: the team of callers and jobs that name none."""

from __future__ import annotations

import re

from steward.config.option import Option
from steward.config.units import to_str
from steward.wire.patterns import TEAM_PATTERN


def _team_name(value: str) -> str | None:
    if re.fullmatch(TEAM_PATTERN, value):
        return None
    return "must be a team's name: 1 to 64 letters, digits, '.', '_' or '-'"


TEAM_OPTIONS: tuple[Option, ...] = (
    Option(
        "security.teams.default",
        to_str,
        "default",
        "The team of a caller that is in none (a token made without `--team`, a client"
        " certificate without an OU, an OpenID user without a mapped group), and so of the jobs"
        " it submits, and the team of jobs stored before teams existed. Viewers and submitters"
        " see only their teams' jobs; admins see all. See [security.md](security.md#teams).",
        _team_name,
        setting="security.default_team",
    ),
)
