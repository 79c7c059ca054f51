"""Token administration through the REST API (admins only): the calls that need more than a
path, kept out of :class:`steward.client.Client`."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
from pydantic import ValidationError

from steward.client.failover import Failover, error_body
from steward.client.responses import api_error, decode, first_error
from steward.errors import ApiError, JobRejectedError
from steward.wire.tokens import CreatedToken, CreateTokenRequest, Role, check_token_id


def create(
    failover: Failover,
    name: str,
    role: Role | str,
    expires_in: float | None,
    teams: Sequence[str] = (),
) -> CreatedToken:
    """A new token for ``name`` with ``role`` in ``teams``; a bad request is refused before it
    is sent."""
    try:
        body = CreateTokenRequest(
            name=name, role=Role(role), expires_in=expires_in, teams=list(teams)
        )
    except (ValidationError, ValueError) as exc:
        raise JobRejectedError(f"invalid token request: {first_error(exc)}") from exc
    response, _ = failover.send("POST", "/v1/tokens", body.model_dump(mode="json"))
    if response.status_code != httpx.codes.CREATED:
        raise api_error(response, error_body(response), None)
    return decode(CreatedToken, response)


def path_of(token_id: str) -> str:
    """The token's URL path; an id that cannot be one is "not found", without a request."""
    try:
        check_token_id(token_id)
    except ValueError as exc:
        raise ApiError(str(exc), status=404, code="token_not_found") from exc
    return f"/v1/tokens/{token_id}"
