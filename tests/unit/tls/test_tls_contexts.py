"""The REST API's TLS contexts (``rest.ssl.*``): a JobManager refuses bad files at start, and a
client verifies, against a real HTTPS server on loopback: the right CA works, a wrong CA (or
the system's, for a private one) is an error at once that names ``rest.ssl.ca``, and mutual
TLS keeps out a client without a certificate."""

from __future__ import annotations

import dataclasses
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from steward.client.failover import Failover
from steward.config import TlsSettings, load
from steward.errors import ClusterUnreachableError, ConfigurationError
from steward.tls.certificates import TlsFiles, ensure_local_tls, local_hosts
from steward.tls.contexts import ClientTls, client_tls, server_context


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return ensure_local_tls(tmp_path_factory.mktemp("tls"), local_hosts())


@pytest.fixture(scope="module")
def stranger(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """Another cluster's CA and certificate."""
    return ensure_local_tls(tmp_path_factory.mktemp("other"), local_hosts())


def _settings(files: TlsFiles, **changes: object) -> TlsSettings:
    settings = TlsSettings(
        enabled=True,
        certificate=files.certificate,
        key=files.key,
        ca=files.ca,
    )
    return dataclasses.replace(settings, **changes)


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"hello": "tls"}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _serve(context: ssl.SSLContext) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def https(files: TlsFiles) -> Iterator[str]:
    yield from _serve(server_context(_settings(files)))


@pytest.fixture
def mutual(files: TlsFiles) -> Iterator[str]:
    yield from _serve(server_context(_settings(files, client_auth="require")))


# ---------------------------------------------------------------------------- the server's files


def test_a_key_others_may_read_is_refused(files: TlsFiles, tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    key.write_bytes(files.key.read_bytes())
    key.chmod(0o644)
    with pytest.raises(ConfigurationError, match=r"rest\.ssl\.key: .* chmod 600") as caught:
        server_context(_settings(files, key=key))
    assert caught.value.key == "rest.ssl.key"
    key.chmod(0o640)  # a group (ssl-cert, say) may read it; other users may not
    server_context(_settings(files, key=key))


def test_tls_without_a_certificate_names_the_missing_key(files: TlsFiles) -> None:
    with pytest.raises(ConfigurationError, match=r"rest\.ssl\.certificate is not set"):
        server_context(_settings(files, certificate=None))
    with pytest.raises(ConfigurationError, match=r"rest\.ssl\.key is not set"):
        server_context(_settings(files, key=None))


def test_a_missing_file_and_a_key_of_another_certificate_are_clear_errors(
    files: TlsFiles, stranger: TlsFiles, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError, match=r"rest\.ssl\.certificate: .* does not exist"):
        server_context(_settings(files, certificate=tmp_path / "nothing.pem"))
    with pytest.raises(ConfigurationError, match=r"cannot use .* with .*"):
        server_context(_settings(files, key=stranger.key))
    with pytest.raises(ConfigurationError, match=r"rest\.ssl\.ca: .* does not exist"):
        client_tls(_settings(files, ca=tmp_path / "nothing.pem"))


def test_mutual_tls_needs_a_ca_to_verify_clients_with(files: TlsFiles) -> None:
    with pytest.raises(ConfigurationError, match=r"client-auth is require but rest\.ssl\.ca"):
        server_context(_settings(files, ca=None, client_auth="require"))


# ---------------------------------------------------------------------------- clients verify


def test_a_client_with_the_cluster_ca_is_answered(files: TlsFiles, https: str) -> None:
    failover = Failover([https], timeout=10, tls=client_tls(_settings(files)))
    try:
        response, _ = failover.send("GET", "/v1/cluster")
    finally:
        failover.close()
    assert response.json() == {"hello": "tls"}


def _refused_at_once(address: str, tls: ClientTls) -> ConfigurationError:
    """The error of a request to ``address`` with ``tls``, raised within 5 s: not retried
    until the timeout (20 s), as a TLS configuration that is wrong does not heal."""
    failover = Failover([address], timeout=20, tls=tls)
    started = time.monotonic()
    try:
        with pytest.raises(ConfigurationError) as caught:
            failover.send("GET", "/v1/cluster")
    finally:
        failover.close()
    assert time.monotonic() - started < 5
    return caught.value


@pytest.mark.parametrize("trust", ["another CA", "the system's CAs"])
def test_a_certificate_the_client_cannot_verify_is_an_error_at_once_naming_the_ca_key(
    files: TlsFiles, stranger: TlsFiles, https: str, trust: str
) -> None:
    error = _refused_at_once(
        https, client_tls(_settings(stranger) if trust == "another CA" else None)
    )
    message = str(error)
    assert error.key == "rest.ssl.ca"
    assert f"cannot verify the TLS certificate of the JobManager at {https}" in message
    assert "set rest.ssl.ca" in message
    expected = str(stranger.ca) if trust == "another CA" else "system's CAs"
    assert expected in message


def test_plain_http_to_a_tls_port_gets_no_answer_and_a_hint(https: str) -> None:
    plain = https.replace("https://", "http://")
    failover = Failover([plain], timeout=1)
    try:
        with pytest.raises(ClusterUnreachableError, match=r"use https://127\.0\.0\.1"):
            failover.send("GET", "/v1/cluster")
    finally:
        failover.close()


def test_mutual_tls_refuses_a_client_without_a_certificate(files: TlsFiles, mutual: str) -> None:
    anonymous = client_tls(_settings(files, certificate=None, key=None))
    with pytest.raises(httpx.TransportError):
        httpx.get(mutual, verify=anonymous.context, timeout=5)
    # And a client that presents the cluster's certificate gets in
    answer = httpx.get(mutual, verify=client_tls(_settings(files)).context, timeout=5)
    assert answer.json() == {"hello": "tls"}


def test_a_client_certificate_from_another_ca_is_refused(
    files: TlsFiles, stranger: TlsFiles, mutual: str
) -> None:
    # It trusts the server (the cluster's CA) but presents a certificate the server does not
    foreign = client_tls(_settings(stranger, ca=files.ca))
    with pytest.raises(httpx.TransportError):
        httpx.get(mutual, verify=foreign.context, timeout=5)


@pytest.mark.parametrize("presenting", ["no certificate", "another CA's certificate"])
def test_a_client_refused_under_mutual_tls_is_told_at_once_naming_its_certificate(
    files: TlsFiles, stranger: TlsFiles, mutual: str, presenting: str
) -> None:
    if presenting == "no certificate":
        tls, presented = client_tls(_settings(files, certificate=None, key=None)), "none"
    else:
        tls, presented = client_tls(_settings(stranger, ca=files.ca)), str(stranger.certificate)
    error = _refused_at_once(mutual, tls)
    assert error.key == "rest.ssl.certificate"
    message = str(error)
    assert f"the JobManager at {mutual} refused this client's TLS certificate" in message
    assert f"presented: {presented})" in message


def test_client_auth_is_none_optional_or_require(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # load() reads ./steward.toml when present
    with pytest.raises(ConfigurationError, match="must be none, optional or require"):
        load(environ={}, overrides={"rest.ssl.client-auth": "sometimes"})
    settings = load(environ={}, overrides={"rest.ssl.client-auth": "require"}).settings
    assert settings.tls.require_client_certificate is True
    assert settings.tls.request_client_certificate is True
    optional = load(environ={}, overrides={"rest.ssl.client-auth": "optional"}).settings.tls
    assert (optional.require_client_certificate, optional.request_client_certificate) == (
        False,
        True,
    )
    none = load(environ={}, overrides={}).settings.tls
    assert none.request_client_certificate is False
