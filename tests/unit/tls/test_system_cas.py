"""The system's CAs are loaded at a client context's first handshake, and then all of them."""

from __future__ import annotations

import socket
import ssl

import pytest

from steward.tls.contexts import client_tls
from steward.tls.system_cas import SystemCasOnFirstUse


def _cas(context: ssl.SSLContext) -> int:
    return context.cert_store_stats()["x509_ca"]


def test_a_client_without_rest_ssl_ca_loads_no_ca_until_it_shakes_hands() -> None:
    context = client_tls().context

    assert isinstance(context, SystemCasOnFirstUse)
    assert _cas(context) == 0


@pytest.mark.parametrize("start", ["bio", "socket"])
def test_the_first_handshake_loads_the_cas_the_default_context_trusts(start: str) -> None:
    default = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context = client_tls().context

    if start == "bio":
        context.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="example.org")
    else:
        # Not connected: wrapping it shakes no hands yet.
        with context.wrap_socket(socket.socket(), server_hostname="example.org"):
            pass

    assert _cas(context) == _cas(default)
    assert context.cert_store_stats() == default.cert_store_stats()


def test_it_verifies_as_the_default_context_does() -> None:
    default = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context = SystemCasOnFirstUse(ssl.PROTOCOL_TLS_CLIENT)

    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert (context.options, context.verify_flags) == (default.options, default.verify_flags)
