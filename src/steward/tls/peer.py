"""The client certificate of a TLS connection, handed to the ASGI app in each request's scope.

uvicorn verifies a client's certificate in the handshake but does not pass it on. This HTTP
protocol does, once per connection, as the ASGI TLS extension spells it:
``scope["extensions"]["tls"]["client_cert_chain"]`` is a list holding the peer's certificate in
PEM (empty without one). :mod:`steward.security.certificates` reads it.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from steward.tls.head_limit import BoundedHeadProtocol


class PeerCertificateProtocol(BoundedHeadProtocol):
    """uvicorn's httptools protocol (with a bounded head), with the connection's client
    certificate in every scope."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        ssl_object: ssl.SSLObject | None = transport.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if der:
            self.app = WithPeerCertificate(self.app, ssl.DER_cert_to_PEM_cert(der))


class WithPeerCertificate:
    """An ASGI app that adds one connection's client certificate to each request's scope."""

    def __init__(self, app: Any, pem: str) -> None:
        self.app: ASGIApp = app
        self.pem = pem

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        extensions = scope.setdefault("extensions", {})
        tls = extensions.setdefault("tls", {})
        tls["client_cert_chain"] = [self.pem]
        await self.app(scope, receive, send)
