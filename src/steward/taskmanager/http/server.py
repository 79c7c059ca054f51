"""The TaskManager's HTTP server: a socket bound at construction (so its address can be
registered before anything starts), uvicorn serving the app on a thread of its own.

Where it listens: ``taskmanager.bind-host`` and ``taskmanager.port`` (0: any free port; the
address registered in ZooKeeper is the real one); what it says it is:
``taskmanager.advertised-address``, else ``http(s)://<host>:<port>`` (a wildcard bind host is
replaced by this machine's name). TLS with the JobManagers' ``rest.ssl.*`` files.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

import uvicorn
from fastapi import FastAPI

from steward.config import TlsSettings
from steward.errors import ConfigurationError, StewardError
from steward.tls import contexts as tls
from steward.tls.peer import PeerCertificateProtocol

log = logging.getLogger(__name__)

_GRACEFUL_STOP = 2
"""Seconds open streams get to end when the TaskManager stops."""
_WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})


class HttpServer:
    """One listening socket and the uvicorn server on it; ``start(app)``, then ``stop()``."""

    def __init__(
        self, name: str, bind_host: str, port: int, advertised: str, settings: TlsSettings
    ) -> None:
        self.name = name
        self._tls = settings
        # TLS files are checked before anything starts: a bad one is a clear error at once.
        self._context = tls.server_context(settings) if settings.enabled else None
        self._socket = _bind(bind_host, port)
        host, bound_port = self._socket.getsockname()[:2]
        scheme = tls.scheme(settings)
        if host in _WILDCARDS:
            host = socket.gethostname()
        shown = f"[{host}]" if ":" in host else host
        self.address = advertised or f"{scheme}://{shown}:{bound_port}"
        if urlsplit(self.address).scheme != scheme:
            self._socket.close()
            raise ConfigurationError(
                f"taskmanager.advertised-address {self.address} is not {scheme}:// while"
                f" rest.ssl.enabled is {str(settings.enabled).lower()}",
                key="taskmanager.advertised-address",
            )
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, app: FastAPI) -> HttpServer:
        config = uvicorn.Config(
            app,
            http=PeerCertificateProtocol,  # a client certificate may be a credential
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=_GRACEFUL_STOP,
            **self._uvicorn_tls(),
        )
        server = uvicorn.Server(config)
        self._server = server

        def serve() -> None:
            asyncio.run(server.serve(sockets=[self._socket]))

        self._thread = threading.Thread(target=serve, name=f"{self.name}-http", daemon=True)
        self._thread.start()
        log.info("taskmanager http serving tm=%s address=%s", self.name, self.address)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=_GRACEFUL_STOP + 3.0)
        self._socket.close()

    def _uvicorn_tls(self) -> dict[str, Any]:
        if self._context is None:
            return {}
        settings = self._tls
        return {
            "ssl_certfile": str(settings.certificate),
            "ssl_keyfile": str(settings.key),
            "ssl_ca_certs": str(settings.ca) if settings.request_client_certificate else None,
            "ssl_cert_reqs": self._context.verify_mode,
        }


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on connections of such a socket
    # (as the JobManager's: without it an answer in two segments waits for a delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise StewardError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} (set taskmanager.port,"
            " or 0 for any free port)"
        ) from exc
    sock.listen(128)
    sock.set_inheritable(False)
    return sock
