"""The TaskManager's HTTP server: a socket bound at construction (so its address can be
registered before anything starts), uvicorn serving the app on a thread of its own.

Where it listens: ``taskmanager.bind-host`` and ``taskmanager.port`` (0: any free port; the
address registered in ZooKeeper is the real one); what it says it is:
``taskmanager.advertised-address``, else ``http(s)://<host>:<port>`` (a wildcard bind host is
replaced by this machine's name). TLS with the JobManagers' ``rest.ssl.*`` files.
"""

from __future__ import annotations

import logging
import socket
import threading
from urllib.parse import urlsplit

import uvicorn
from starlette.types import ASGIApp

from steward.config import TlsSettings
from steward.errors import ConfigurationError
from steward.tls import contexts as tls
from steward.tls.serving import bind_listener, serve_on_thread

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
        self._socket = bind_listener(bind_host, port, port_key="taskmanager.port")
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

    def start(self, app: ASGIApp) -> HttpServer:
        self._server, self._thread = serve_on_thread(
            app,
            self._socket,
            (self._tls, self._context),
            thread_name=f"{self.name}-http",
            timeout_graceful_shutdown=_GRACEFUL_STOP,
        )
        log.info("taskmanager http serving tm=%s address=%s", self.name, self.address)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=_GRACEFUL_STOP + 3.0)
        self._socket.close()
