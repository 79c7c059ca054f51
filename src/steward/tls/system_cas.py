"""A client TLS context that loads the system's CAs at its first handshake, not when made.

Loading them (what ``ssl.create_default_context`` does) costs about 50 ms of CPU, which every
JobManager, TaskManager and command paid at its start (benchmarks/startup_cost.py), though a
cluster without ``rest.ssl.enabled`` never shakes hands. :class:`SystemCasOnFirstUse` verifies
as the default context does (a certificate required, the host name checked, the same CAs):
it loads them before it wraps its first socket or BIO, the only two ways :mod:`ssl` starts a
handshake (httpcore's sync connections wrap a socket, anyio's streams a BIO).
"""

from __future__ import annotations

import ssl
import sys
import threading
from typing import Any


class SystemCasOnFirstUse(ssl.SSLContext):
    """``ssl.create_default_context(Purpose.SERVER_AUTH)``, its CAs loaded on first use::

    context = SystemCasOnFirstUse(ssl.PROTOCOL_TLS_CLIENT)
    httpx.Client(verify=context)  # no CA loaded until an https:// request
    """

    def __init__(self, protocol: int = ssl.PROTOCOL_TLS_CLIENT) -> None:
        super().__init__()
        self._cas_lock = threading.Lock()
        self._cas_loaded = False
        if sys.version_info >= (3, 13):  # as create_default_context does from Python 3.13
            self.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self._load_cas()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self._load_cas()
        return super().wrap_bio(*args, **kwargs)

    def _load_cas(self) -> None:
        if self._cas_loaded:
            return
        with self._cas_lock:
            if not self._cas_loaded:
                self.load_default_certs(ssl.Purpose.SERVER_AUTH)
                self._cas_loaded = True
