"""``/v1/tokens``: create, list and revoke access tokens (admin only).

Any JobManager serves them from ZooKeeper itself (tokens are not job state: no leader needed).
A created token is in the answer once and nowhere else; the list never shows a secret or a
hash. A revoke deletes the record: every JobManager refuses the token within
:data:`~steward.security.authenticator.CACHE_TTL` seconds (this one at once).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from steward.errors import StewardError
from steward.security import audit, tokens
from steward.security.roles import Action
from steward.wire.rest import ErrorBody
from steward.wire.tokens import (
    CreatedToken,
    CreateTokenRequest,
    TokenList,
    TokenView,
    check_token_id,
)

from .auth import Caller, client_address, require
from .errors import ApiError, raise_for
from .state import Security

router = APIRouter(tags=["tokens"])
_ERRORS: dict[int | str, dict[str, object]] = {403: {"model": ErrorBody}}


@router.post("/v1/tokens", status_code=201, responses=_ERRORS)
def create_token(
    body: CreateTokenRequest, request: Request, caller: Caller, security: Security
) -> CreatedToken:
    """A new token for ``name`` with ``role`` in ``teams`` (admin only); the answer holds it,
    once."""
    require(caller, Action.MANAGE_TOKENS)
    token, record = tokens.mint(body.name, body.role, expires_in=body.expires_in, teams=body.teams)
    try:
        security.tokens.create(record)
    except StewardError as exc:
        raise_for(exc)
    audit.record(
        "token.create",
        caller,
        client=client_address(request),
        token_id=record.id,
        name=record.name,
        role=record.role.value,
        expires_at=record.expires_at,
        teams=record.teams,
    )
    return CreatedToken(token=token, info=TokenView.of(record))


@router.get("/v1/tokens", responses=_ERRORS)
def list_tokens(caller: Caller, security: Security) -> TokenList:
    """Every token: id, name, role, created and expiry (admin only; never a secret)."""
    require(caller, Action.MANAGE_TOKENS)
    try:
        records = security.tokens.records()
    except StewardError as exc:
        raise_for(exc)
    return TokenList(tokens=[TokenView.of(r) for r in sorted(records, key=lambda r: r.created_at)])


@router.delete(
    "/v1/tokens/{token_id}", status_code=204, responses={**_ERRORS, 404: {"model": ErrorBody}}
)
def revoke_token(token_id: str, request: Request, caller: Caller, security: Security) -> Response:
    """Revoke a token (admin only): it is refused everywhere from now on."""
    require(caller, Action.MANAGE_TOKENS)
    try:
        check_token_id(token_id)
        existed = security.tokens.delete(token_id)
    except ValueError:
        existed = False
    except StewardError as exc:
        raise_for(exc)
    if not existed:
        raise ApiError(404, "token_not_found", f"no token {token_id[:40]!r}")
    security.authenticator.forget(token_id)
    audit.record("token.revoke", caller, client=client_address(request), token_id=token_id)
    return Response(status_code=204)
