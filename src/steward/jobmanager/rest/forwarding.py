"""A standby's writes go to the leader: :func:`leading` says whether to, :func:`forward` does.

The leader's answer is passed back as it is (status, body, Retry-After); with no leader known,
or one that does not answer, the client gets 503 ``no_leader`` with Retry-After.
"""

from __future__ import annotations

import httpx
from fastapi.responses import Response

from steward.tls.contexts import ClientTls, client_tls

from .backend import ApiBackend, LeaderTerm
from .errors import no_leader

FORWARD_TIMEOUT = 30.0


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


def forward(
    backend: ApiBackend, forwarder: httpx.Client, method: str, path: str, body: bytes
) -> Response:
    leader = backend.leader()
    if leader is None or leader.contender == backend.id:
        raise no_leader()
    try:
        answer = forwarder.request(
            method,
            leader.address.rstrip("/") + path,
            content=body,
            headers={"content-type": "application/json", "x-steward-forwarded-by": backend.id},
        )
    except httpx.HTTPError as exc:
        raise no_leader(f"the leader {leader.contender} did not answer: {exc}") from None
    headers = {k: v for k, v in answer.headers.items() if k.lower() in ("retry-after",)}
    return Response(
        answer.content,
        status_code=answer.status_code,
        media_type=answer.headers.get("content-type", "application/json"),
        headers=headers,
    )
