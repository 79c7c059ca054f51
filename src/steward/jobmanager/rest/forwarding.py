"""A standby's writes go to the leader: :func:`leading` says whether to, :func:`forward` does.

The leader's answer is passed back as it is (status, body, Retry-After); with no leader known,
or one that could not be reached (the request never left), the client gets 503 ``no_leader``
with Retry-After: nothing was done. A request that was sent but never answered (the leader died,
or the connection broke, after it may have acted) is 504 ``outcome_unknown``: the client must
find out (a submission's retry is told ``job_exists`` for its own id) rather than assume it was
not carried out.

The caller's own ``Authorization`` header goes with the request, and the leader verifies it
again: a standby never lends a token caller a credential of its own, so the leader acts for the
caller alone. A caller named by a client certificate (which only this JobManager's handshake
saw) is vouched for instead: the internal credential and the verified name and role
(:mod:`steward.security.delegation`).
"""

from __future__ import annotations

import logging

import httpx
from fastapi import Request
from fastapi.responses import Response

from steward.security import delegation
from steward.security.identity import Identity
from steward.security.source_address import forwarded_headers
from steward.tls.contexts import ClientTls, client_tls

from .auth import authorization, client_address
from .backend import ApiBackend, LeaderTerm
from .errors import no_leader, outcome_unknown
from .state import services_of

log = logging.getLogger(__name__)

FORWARD_TIMEOUT = 30.0
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)
"""Failures that prove the request never reached the leader."""


def new_forwarder(tls: ClientTls | None = None) -> httpx.Client:
    """The client a standby forwards with: it verifies the leader's certificate with ``tls``
    (``rest.ssl.ca``, default the system's CAs) and presents this JobManager's own
    certificate where the leader requires one."""
    return httpx.Client(timeout=FORWARD_TIMEOUT, verify=(tls or client_tls()).context)


def leading(backend: ApiBackend) -> LeaderTerm | None:
    """The term that takes this JobManager's writes, or None: a standby forwards them."""
    dispatcher = backend.dispatcher
    if dispatcher is None or dispatcher.stopped:
        return None
    return dispatcher


def _vouched(request: Request) -> dict[str, str]:
    """For a caller a client certificate named (no credential the leader could verify): the
    internal credential and the identity this JobManager verified (security.delegation)."""
    security = services_of(request).security
    identity = getattr(request.state, "identity", None)
    secret = security.authenticator.internal_credential
    if (
        not security.client_certificates
        or not security.authenticator.enabled
        or not isinstance(identity, Identity)
        or identity.internal
        or identity.token_id is not None
        or secret is None
    ):
        return {}
    return {"authorization": f"Bearer {secret}", **delegation.headers_for(identity)}


def forward(
    backend: ApiBackend, forwarder: httpx.Client, request: Request, body: bytes
) -> Response:
    """``request`` (its body read: ``body``) carried to the leader with the caller's own
    credentials, and the leader's answer."""
    method, path = request.method, request.url.path
    leader = backend.leader()
    if leader is None or leader.contender == backend.id:
        raise no_leader()
    headers = {"content-type": "application/json", "x-steward-forwarded-by": backend.id}
    caller_credentials = authorization(request)
    if caller_credentials is not None:
        headers["authorization"] = caller_credentials
    else:
        headers |= _vouched(request)
    secret = services_of(request).security.authenticator.internal_credential
    headers |= forwarded_headers(client_address(request) or "", secret)
    try:
        answer = forwarder.request(
            method, leader.address.rstrip("/") + path, content=body, headers=headers
        )
    except _NOT_SENT as exc:
        raise no_leader(f"the leader {leader.contender} cannot be reached: {exc}") from None
    except httpx.HTTPError as exc:
        log.warning(
            "forward sent but not answered leader=%s method=%s path=%s error=%r",
            leader.contender,
            method,
            path,
            exc,
        )
        raise outcome_unknown(leader.contender, exc) from None
    passed = {
        k: v for k, v in answer.headers.items() if k.lower() in ("retry-after", "www-authenticate")
    }
    return Response(
        answer.content,
        status_code=answer.status_code,
        media_type=answer.headers.get("content-type", "application/json"),
        headers=passed,
    )
