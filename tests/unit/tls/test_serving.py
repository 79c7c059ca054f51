"""The HTTP stack every Steward server runs (``steward.tls.serving``: uvicorn's httptools
protocol on a uvloop loop, on a thread), against a real server on loopback: a request head is
bounded as h11 bounded it (16 KiB: 400 and the connection closed, whether the head comes in one
piece, as many small headers, or never ends), a body is not part of the head, and a client's
certificate reaches the app's scope over TLS."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from steward.config import TlsSettings
from steward.testing.waiting import wait_until
from steward.tls.certificates import TlsFiles, ensure_local_tls, local_hosts
from steward.tls.contexts import server_context
from steward.tls.head_limit import MAX_HEAD_BYTES
from steward.tls.serving import bind_listener, serve_on_thread

PLAIN = TlsSettings(enabled=False, certificate=None, key=None, ca=None)


@dataclasses.dataclass
class Echo:
    """An ASGI app that answers the body's length and the client certificate it was given."""

    calls: int = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        self.calls += 1
        size, more = 0, True
        while more:
            message = await receive()
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
        chain = scope.get("extensions", {}).get("tls", {}).get("client_cert_chain", [])
        client = scope.get("client")
        body = json.dumps(
            {
                "size": size,
                "certificates": chain,
                "scheme": scope["scheme"],
                "client": client[0] if client else None,
            }
        ).encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})


def _serve(
    app: ASGIApp,
    tls: TlsSettings,
    context: ssl.SSLContext | None,
    trusted_proxies: tuple[str, ...] = (),
) -> Iterator[int]:
    listener = bind_listener("127.0.0.1", 0, port_key="test.port")
    port = int(listener.getsockname()[1])
    server, thread = serve_on_thread(
        app, listener, (tls, context), thread_name="test-http", trusted_proxies=trusted_proxies
    )
    try:
        wait_until(lambda: server.started, 30.0, "uvicorn serving")
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10.0)
        listener.close()


@pytest.fixture
def echo() -> Echo:
    return Echo()


@pytest.fixture
def plain(echo: Echo) -> Iterator[int]:
    yield from _serve(echo, PLAIN, None)


FORWARDED = {"x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "https"}


def _seen(port: int, source: str = "127.0.0.1") -> dict[str, object]:
    """What the app saw of a request from ``source`` that claims to be forwarded for
    203.0.113.9 over HTTPS."""
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=10.0) as client:
        answer = client.get(f"http://127.0.0.1:{port}/", headers=FORWARDED)
    seen: dict[str, object] = answer.json()
    return seen


def test_forwarded_headers_are_ignored_from_localhost_by_default(
    echo: Echo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # uvicorn's own default believes them from 127.0.0.1, or from whatever
    # $FORWARDED_ALLOW_IPS says: neither may widen what Steward believes.
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "*")
    for port in _serve(echo, PLAIN, None):
        assert _seen(port) == {
            "size": 0,
            "certificates": [],
            "scheme": "http",
            "client": "127.0.0.1",
        }


def test_forwarded_headers_are_believed_from_a_trusted_proxy_only(echo: Echo) -> None:
    for port in _serve(echo, PLAIN, None, trusted_proxies=("127.0.0.2", "127.0.1.0/24")):
        for proxy in ("127.0.0.2", "127.0.1.7"):
            seen = _seen(port, proxy)
            assert (seen["client"], seen["scheme"]) == ("203.0.113.9", "https")
        seen = _seen(port, "127.0.0.3")
        assert (seen["client"], seen["scheme"]) == ("127.0.0.3", "http")


def _answer(port: int, *pieces: bytes) -> bytes:
    """What the server sent back on one connection for ``pieces`` (sent one by one; the rest
    is dropped once the server has closed), until it closed the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        try:
            for piece in pieces:
                conn.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        try:
            while chunk := conn.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    return answer


def _refused(answer: bytes) -> bool:
    return answer.startswith(b"HTTP/1.1 400 ") and b"connection: close" in answer.lower()


def test_one_header_over_the_bound_is_refused_with_400(plain: int, echo: Echo) -> None:
    head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n" % (b"a" * (MAX_HEAD_BYTES + 1))
    assert _refused(_answer(plain, head))
    assert echo.calls == 0


def test_many_small_headers_over_the_bound_are_refused_with_400(plain: int, echo: Echo) -> None:
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(MAX_HEAD_BYTES // 8))
    assert _refused(_answer(plain, b"GET / HTTP/1.1\r\nHost: x\r\n%s\r\n" % many))
    assert echo.calls == 0


def test_a_head_that_never_ends_is_refused_once_past_the_bound(plain: int, echo: Echo) -> None:
    """httptools keeps an unfinished header in memory: the connection is closed while the
    client is still sending it, long before all of it."""
    pieces = [b"GET / HTTP/1.1\r\nHost: x\r\nX-Endless: "] + [b"a" * 1024] * 4096
    assert _refused(_answer(plain, *pieces))
    assert echo.calls == 0


def test_a_head_under_the_bound_and_a_large_body_are_served(plain: int, echo: Echo) -> None:
    headers = {"X-Near-The-Bound": "a" * (MAX_HEAD_BYTES - 1024)}
    body = b"b" * (8 << 20)
    with httpx.Client(timeout=30) as client:
        answer = client.post(f"http://127.0.0.1:{plain}/", content=body, headers=headers)
        again = client.post(f"http://127.0.0.1:{plain}/", content=b"kept alive")
    assert answer.status_code == 200, answer.text
    assert answer.json()["size"] == len(body)
    assert again.json()["size"] == len(b"kept alive")
    assert echo.calls == 2


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return ensure_local_tls(tmp_path_factory.mktemp("tls"), local_hosts())


def _client(files: TlsFiles, certificate: Path | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(files.ca))
    if certificate is not None:
        context.load_cert_chain(certificate, files.key)
    return context


def test_a_client_certificate_reaches_the_app_over_tls(files: TlsFiles, echo: Echo) -> None:
    tls = TlsSettings(
        enabled=True,
        certificate=files.certificate,
        key=files.key,
        ca=files.ca,
        client_auth="optional",
    )
    for port in _serve(echo, tls, server_context(tls)):
        url = f"https://127.0.0.1:{port}/"
        with_one = httpx.get(url, verify=_client(files, files.certificate), timeout=30)
        without = httpx.get(url, verify=_client(files, None), timeout=30)
    pem = ssl.DER_cert_to_PEM_cert(ssl.PEM_cert_to_DER_cert(files.certificate.read_text()))
    assert with_one.json()["certificates"] == [pem]
    assert without.json()["certificates"] == []


def test_the_server_runs_on_a_uvloop_loop_of_its_own_thread() -> None:
    seen: list[tuple[str, str]] = []

    async def where(scope: Scope, receive: Receive, send: Send) -> None:
        loop = type(asyncio.get_running_loop())
        seen.append((loop.__module__, threading.current_thread().name))
        await Echo()(scope, receive, send)

    for port in _serve(where, PLAIN, None):
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=30).status_code == 200
    assert seen == [("uvloop", "test-http")]
