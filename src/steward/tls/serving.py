"""How a Steward HTTP server listens: its socket, the TLS options handed to uvicorn, and
uvicorn serving on a thread of its own.

The stack under every route is httptools (llhttp, a C parser) on a uvloop (libuv) event loop:
uvicorn's h11 protocol on the stock asyncio loop cost a server 2.6 to 3 times the CPU of a small
request (docs/performance-journal.md, "the HTTP stack"), which heartbeats and submissions pay on
every request. The loop is made per serving thread, never installed as a policy: other code of
the process (kazoo, the tests' own loops) keeps asyncio's.

Shared by the JobManager's REST API and the TaskManager's HTTP port, which never import each
other. The socket is bound before uvicorn starts (so a port in use is a clear error at start,
and port 0 gives the real port to register); the TLS options are the files
:func:`steward.tls.contexts.server_context` already checked.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from typing import Any

import uvicorn
import uvloop
from starlette.types import ASGIApp

from steward.config import TlsSettings
from steward.errors import StewardError
from steward.tls.peer import PeerCertificateProtocol


def bind_listener(host: str, port: int, *, port_key: str) -> socket.socket:
    """A listening TCP socket on ``host:port``; ``port_key`` names the setting to change when
    the port is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on connections of such a socket.
    # Without it an answer written in two segments (headers, body) waited for the client's
    # delayed ACK: 40 ms on every request of a kept-alive connection, and on new TLS ones.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise StewardError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} (set {port_key},"
            " or 0 for any free port)"
        ) from exc
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


def uvicorn_tls_options(settings: TlsSettings, context: ssl.SSLContext | None) -> dict[str, Any]:
    """uvicorn's TLS options for a server whose checked context is ``context`` (None: plain
    HTTP, no options)."""
    if context is None:
        return {}
    return {
        "ssl_certfile": str(settings.certificate),
        "ssl_keyfile": str(settings.key),
        "ssl_ca_certs": str(settings.ca) if settings.request_client_certificate else None,
        "ssl_cert_reqs": context.verify_mode,
    }


def serve_on_thread(
    app: ASGIApp,
    listener: socket.socket,
    tls: tuple[TlsSettings, ssl.SSLContext | None],
    *,
    thread_name: str,
    trusted_proxies: tuple[str, ...] = (),
    **options: Any,
) -> tuple[uvicorn.Server, threading.Thread]:
    """uvicorn serving ``app`` on ``listener`` (``tls``: the settings and their checked
    context) on a daemon thread, started; ``options`` are more of uvicorn's. Stop it with
    ``server.should_exit`` and a join of the thread.

    ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed only from a peer among
    ``trusted_proxies`` (addresses and networks; none by default). uvicorn's own default
    believes them from 127.0.0.1 (or ``$FORWARDED_ALLOW_IPS``): any local process could then
    choose the client address the rate limits count and the scheme that makes cookies secure."""
    config = uvicorn.Config(
        app,
        http=PeerCertificateProtocol,  # a client certificate may be a credential
        log_level="warning",
        access_log=False,
        lifespan="off",
        proxy_headers=bool(trusted_proxies),
        forwarded_allow_ips=list(trusted_proxies),
        **options,
        **uvicorn_tls_options(*tls),
    )
    server = uvicorn.Server(config)

    def serve() -> None:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(server.serve(sockets=[listener]))

    thread = threading.Thread(target=serve, name=thread_name, daemon=True)
    thread.start()
    return server, thread
