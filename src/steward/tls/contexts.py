"""TLS of the REST API: the context a JobManager serves with, and the one every client verifies
with (``rest.ssl.*``, :class:`steward.config.TlsSettings`).

- :func:`server_context`: a JobManager with ``rest.ssl.enabled`` checks its certificate, key and
  CA once at start (a missing file, a key others may read, a key that does not match the
  certificate are each a :class:`ConfigurationError` naming the key) and serves that context;
  under ``rest.ssl.client-auth=require`` it requires a client certificate signed by
  ``rest.ssl.ca`` (under ``optional`` it asks for one, and refuses one it cannot verify).
- :func:`client_tls`: what the CLI, ``steward.Client``, TaskManagers' heartbeats, a standby's
  forwarding, the local cluster's probes and the testing kit verify a JobManager with:
  ``rest.ssl.ca`` when set, else the system's CAs; never no verification. It presents
  ``rest.ssl.certificate`` as a client certificate when one is configured (mutual TLS).
  :meth:`ClientTls.untrusted` turns a failed verification into an error that names
  ``rest.ssl.ca`` (and a client certificate a JobManager refuses, under mutual TLS, into one
  that names ``rest.ssl.certificate``).

Only TLS 1.2 and newer, with Python's default ciphers; keys are unencrypted PEM files, which
file permissions protect (others may not read them).
"""

from __future__ import annotations

import ssl
import stat
from dataclasses import dataclass
from pathlib import Path

from steward.config import TlsSettings
from steward.errors import ConfigurationError

from .system_cas import SystemCasOnFirstUse

CA_KEY = "rest.ssl.ca"
CERTIFICATE_KEY = "rest.ssl.certificate"
PRIVATE_KEY_KEY = "rest.ssl.key"
ENABLED_KEY = "rest.ssl.enabled"
CLIENT_AUTH_KEY = "rest.ssl.client-auth"

_MINIMUM = ssl.TLSVersion.TLSv1_2
# What a JobManager that requires client certificates answers a client without an acceptable one.
_CLIENT_CERTIFICATE_REFUSED = frozenset(
    {
        "TLSV13_ALERT_CERTIFICATE_REQUIRED",
        "TLSV1_ALERT_UNKNOWN_CA",
        "SSLV3_ALERT_BAD_CERTIFICATE",
        "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
        "SSLV3_ALERT_CERTIFICATE_EXPIRED",
    }
)


def scheme(tls: TlsSettings) -> str:
    """``https`` when a JobManager serves TLS, else ``http``."""
    return "https" if tls.enabled else "http"


def server_context(tls: TlsSettings) -> ssl.SSLContext:
    """The context a JobManager serves HTTPS with; a clear error for any file problem."""
    if tls.certificate is None or tls.key is None:
        missing = CERTIFICATE_KEY if tls.certificate is None else PRIVATE_KEY_KEY
        raise ConfigurationError(
            f"{ENABLED_KEY} is true but {missing} is not set: name the PEM files of the"
            f" JobManager's certificate ({CERTIFICATE_KEY}) and its key ({PRIVATE_KEY_KEY})",
            key=missing,
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = _MINIMUM
    _load_certificate(context, tls.certificate, tls.key)
    if tls.request_client_certificate:
        if tls.ca is None:
            mode = "require" if tls.require_client_certificate else "optional"
            raise ConfigurationError(
                f"{CLIENT_AUTH_KEY} is {mode} but {CA_KEY} is not set: name the CA bundle"
                " that signs the clients' certificates",
                key=CA_KEY,
            )
        _load_ca(context, tls.ca)
        context.verify_mode = (
            ssl.CERT_REQUIRED if tls.require_client_certificate else ssl.CERT_OPTIONAL
        )
    return context


@dataclass(frozen=True)
class ClientTls:
    """How a client verifies JobManagers: an ``httpx`` ``verify=`` context and what it trusts."""

    context: ssl.SSLContext
    trusted: str
    """Said in errors: ``a CA in rest.ssl.ca (<path>)`` or one of the system's CAs."""
    presented: str = "none"
    """Said in errors: the client certificate presented (``rest.ssl.certificate``), or none."""

    def untrusted(self, address: str, error: BaseException) -> ConfigurationError | None:
        """The error to raise when ``error`` (an httpx or ssl exception, or one caused by one)
        is a failed certificate verification, of ``address``'s certificate or (mutual TLS) of
        ours by ``address``; None for any other failure."""
        refused = _client_certificate_refused(error)
        if refused is not None:
            return ConfigurationError(
                f"the JobManager at {address} refused this client's TLS certificate"
                f" ({refused.reason}; presented: {self.presented}): it requires one signed by a"
                f" CA it trusts (rest.ssl.client-auth=require there). Set {CERTIFICATE_KEY} and"
                f" {PRIVATE_KEY_KEY} to such a certificate and its key",
                key=CERTIFICATE_KEY,
            )
        failure = verification_failure(error)
        if failure is None:
            return None
        why = failure.verify_message or failure.reason or str(failure)
        return ConfigurationError(
            f"cannot verify the TLS certificate of the JobManager at {address}: {why}. It must"
            f" be signed by {self.trusted} and name the host it is reached by: set"
            f" {CA_KEY} to the PEM file of the CA that signed it (a local cluster's is"
            " .steward/tls/ca.pem)",
            key=CA_KEY,
        )


def client_tls(tls: TlsSettings | None = None) -> ClientTls:
    """How a client verifies JobManagers under ``tls`` (None: the defaults, system CAs)."""
    if tls is not None and tls.ca is not None:
        # Not the default context first: loading the system's CAs costs 60 to 80 ms of CPU.
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, checks host names
        context.minimum_version = _MINIMUM
        _load_ca(context, tls.ca)
        trusted = f"a CA in {CA_KEY} ({tls.ca})"
    else:
        # Loaded at the first handshake (.system_cas): a plain-HTTP cluster never loads them.
        context = SystemCasOnFirstUse(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = _MINIMUM
        trusted = "one of the system's CAs (rest.ssl.ca is not set)"
    presented = "none"
    if tls is not None and tls.certificate is not None and tls.key is not None:
        _load_certificate(context, tls.certificate, tls.key)
        presented = str(tls.certificate)
    return ClientTls(context, trusted, presented)


def verification_failure(error: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate verification failure ``error`` is or was caused by, if any."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLCertVerificationError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _client_certificate_refused(error: BaseException) -> ssl.SSLError | None:
    """The TLS alert of a server that refused our client certificate (or its absence)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLError) and current.reason in _CLIENT_CERTIFICATE_REFUSED:
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def check_private_key(path: Path, key: str = PRIVATE_KEY_KEY) -> None:
    """Refuse a private key file that is missing, or that other users may read or change."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigurationError(
            f"{key}: cannot read {path}: {exc.strerror or exc}", key=key
        ) from exc
    if mode & (stat.S_IROTH | stat.S_IWOTH):
        raise ConfigurationError(
            f"{key}: {path} may be read by any user of this machine (mode"
            f" {stat.S_IMODE(mode):04o}); a private key must not be: chmod 600 {path}",
            key=key,
        )


def _load_certificate(context: ssl.SSLContext, certificate: Path, key: Path) -> None:
    for path, name in ((certificate, CERTIFICATE_KEY), (key, PRIVATE_KEY_KEY)):
        if not path.is_file():
            raise ConfigurationError(f"{name}: {path} does not exist", key=name)
    check_private_key(key)
    try:
        # A password callback, so that an encrypted key fails here instead of prompting.
        context.load_cert_chain(certificate, key, password=_no_password)
    except ssl.SSLError as exc:
        raise ConfigurationError(
            f"{CERTIFICATE_KEY} / {PRIVATE_KEY_KEY}: cannot use {certificate} with {key}"
            f" ({exc.reason or exc}): both must be PEM files, the key unencrypted and the"
            " certificate's own",
            key=CERTIFICATE_KEY,
        ) from exc
    except OSError as exc:
        raise ConfigurationError(
            f"{CERTIFICATE_KEY} / {PRIVATE_KEY_KEY}: cannot read {certificate} or {key}:"
            f" {exc.strerror or exc}",
            key=CERTIFICATE_KEY,
        ) from exc


def _no_password() -> bytes:
    return b""


def _load_ca(context: ssl.SSLContext, ca: Path) -> None:
    if not ca.is_file():
        raise ConfigurationError(f"{CA_KEY}: {ca} does not exist", key=CA_KEY)
    try:
        context.load_verify_locations(cafile=ca)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigurationError(
            f"{CA_KEY}: {ca} is not a PEM bundle of CA certificates ({exc})", key=CA_KEY
        ) from exc
