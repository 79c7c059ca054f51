"""Teams own jobs: which team a submission is stored as, and whose jobs a caller sees.

Every job belongs to one team (``JobSpec.team``). A caller's teams are its identity's (a
token's ``teams``, a client certificate's OUs, an OpenID provider's groups); a caller in no
team is in the cluster's default team (``security.teams.default``), and so is a job stored
before teams (its team is None). Admins see every team's jobs and may submit as any team;
viewers and submitters see only their teams' jobs, and a job of another team is answered
exactly as an unknown id (404, never 403: no existence leak). With authentication off every
caller is an admin, so nothing changes.

Example::

    scope = scope_of(caller, "default")      # None: sees everything
    if scope is not None and not scope.sees(view.team):
        raise not_found(view.job_id)
"""

from __future__ import annotations

from dataclasses import dataclass

from steward.errors import StewardError
from steward.wire.tokens import Role

from .identity import Identity


class TeamRefusedError(StewardError):
    """A submission names a team its submitter is not in, or none while it is in several."""


@dataclass(frozen=True)
class TeamScope:
    """The teams whose jobs one caller sees (a caller that sees every team has none)."""

    teams: frozenset[str]
    default: str
    """The cluster's default team: that of jobs stored before teams (team None)."""

    def sees(self, team: str | None) -> bool:
        return (team or self.default) in self.teams

    def stored_as(self) -> list[str | None]:
        """The values ``team`` has in the jobs this scope sees, sorted (None last)."""
        found: list[str | None] = [*sorted(self.teams)]
        return [*found, None] if self.default in self.teams else found

    def narrowed(self, team: str | None) -> TeamScope:
        """Only ``team``'s jobs among these (no job at all if ``team`` is not one of them)."""
        if team is None:
            return self
        return TeamScope(self.teams & {team}, self.default)


def teams_of(identity: Identity, default: str) -> frozenset[str]:
    """The teams ``identity`` is in: its own, or the default team when it has none."""
    return identity.teams or frozenset({default})


def sees_all(identity: Identity) -> bool:
    return identity.internal or identity.role is Role.ADMIN


def scope_of(identity: Identity, default: str) -> TeamScope | None:
    """Whose jobs ``identity`` sees; None: every team's (an admin, or auth off)."""
    if sees_all(identity):
        return None
    return TeamScope(teams_of(identity, default), default)


def submission_team(identity: Identity, named: str | None, default: str) -> str:
    """The team a job ``identity`` submits is stored as: ``named`` if it may submit as that
    team, else its only team; TeamRefusedError when it may not or it must choose."""
    if sees_all(identity):
        return named or _only(teams_of(identity, default)) or default
    teams = teams_of(identity, default)
    if named is None:
        only = _only(teams)
        if only is None:
            raise TeamRefusedError(
                f"{identity.name} is in several teams ({', '.join(sorted(teams))}): name the"
                " job's team (spec.team, `steward submit --team`)"
            )
        return only
    if named not in teams:
        raise TeamRefusedError(
            f"{identity.name} may not submit as team {named!r}: it is in"
            f" {', '.join(sorted(teams))} only"
        )
    return named


def _only(teams: frozenset[str]) -> str | None:
    return next(iter(teams)) if len(teams) == 1 else None
