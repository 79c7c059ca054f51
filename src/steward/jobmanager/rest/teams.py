"""The REST side of team ownership (:mod:`steward.security.teams`): whose jobs a caller sees.

Every route that names a job passes its view through :func:`visible`: a job of a team the
caller is not in is answered exactly as an unknown id (404 ``job_not_found``, the same
message), never 403, so no one learns which ids another team has. Listings ask the job index
for the caller's teams' jobs only (:func:`scope`).
"""

from __future__ import annotations

from steward.security.identity import Identity
from steward.security.proxy_users import ProxyUserRefusedError, check_proxy_user
from steward.security.teams import TeamScope, scope_of
from steward.wire.rest import JobView

from .backend import ApiBackend
from .errors import ApiError


def default_team(backend: ApiBackend) -> str:
    return backend.config.settings.security.default_team


def proxy_grants(backend: ApiBackend) -> tuple[tuple[str, str], ...]:
    return backend.config.settings.security.proxy_users


def check_proxy(caller: Identity, user: str | None, grants: tuple[tuple[str, str], ...]) -> None:
    """403 (before anything is stored) unless ``caller`` may run jobs as OS user ``user``."""
    try:
        check_proxy_user(caller, user, grants)
    except ProxyUserRefusedError as exc:
        raise ApiError(403, "forbidden", str(exc)) from None


def scope(caller: Identity, backend: ApiBackend, team: str | None = None) -> TeamScope | None:
    """The teams whose jobs ``caller`` sees (None: all), narrowed to ``team`` if given."""
    found = scope_of(caller, default_team(backend))
    if team is None:
        return found
    if found is None:
        return TeamScope(frozenset({team}), default_team(backend))
    return found.narrowed(team)


def sees(caller: Identity, backend: ApiBackend, team: str | None) -> bool:
    found = scope_of(caller, default_team(backend))
    return found is None or found.sees(team)


def job_not_found(job_id: str) -> ApiError:
    """What an unknown job id is answered with, and so a job of another team."""
    return ApiError(404, "job_not_found", f"no job {job_id!r}")


def visible(caller: Identity, backend: ApiBackend, view: JobView) -> JobView:
    """``view`` if ``caller`` may see its job, else the 404 of an unknown id."""
    if not sees(caller, backend, view.team):
        raise job_not_found(view.job_id)
    return view
