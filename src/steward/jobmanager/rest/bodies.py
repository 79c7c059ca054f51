"""Request bodies read with a bound: a client sending gigabytes (by mistake or not) must not
make a JobManager hold them in memory, least of all the leader."""

from __future__ import annotations

from fastapi import Request
from starlette.requests import ClientDisconnect

from .errors import ApiError


async def bounded_body(request: Request, limit: int, what: str) -> bytes:
    """The request's body, refused (413, naming ``what`` and ``limit``) as soon as it is known
    to exceed ``limit`` bytes. Read chunk by chunk, never whole."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(what)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _too_large(what)
            chunks.append(chunk)
    except ClientDisconnect:
        # A caller that went away mid-body (a TaskManager stopping mid-heartbeat): an answer
        # nobody reads, not a traceback in the log.
        raise ApiError(400, "client_disconnected", f"{what}: the client went away") from None
    return b"".join(chunks)


def _too_large(what: str) -> ApiError:
    """413 naming ``what`` (made only when raised: an error body is a model to build)."""
    return ApiError(
        413,
        "too_large",
        what,
        # Otherwise the server would go on reading (and dropping) the rest to keep the
        # connection: closing it stops the upload.
        headers={"Connection": "close"},
    )
