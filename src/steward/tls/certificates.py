"""A private CA and a JobManager certificate signed by it, for a cluster on this machine
(``steward cluster start --tls``), made with the ``cryptography`` package.

:func:`ensure_local_tls` keeps four files in a folder (mode 0700)::

    ca.pem          the CA's certificate: what clients verify with (rest.ssl.ca)
    ca-key.pem      the CA's key (0600): signs the next certificate, nothing else
    server.pem      the JobManagers' certificate (rest.ssl.certificate), for server and client
                    use (the processes present it to each other under mutual TLS)
    server-key.pem  its key (0600; rest.ssl.key)

Both are kept across starts, so a client that was given ``ca.pem`` keeps verifying the cluster.
A new certificate is made when there is none, when it would expire within
:data:`RENEW_BEFORE`, when it does not name every host the JobManagers are reached by, or when
the CA changed; a new CA only when there is none or it would expire within :data:`RENEW_BEFORE`.
Keys are ECDSA P-256 (a fast handshake); the certificate names ``localhost``, ``127.0.0.1``,
``::1``, this machine's host names and the hosts given.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from steward import files

CA_VALIDITY = datetime.timedelta(days=3650)
CERTIFICATE_VALIDITY = datetime.timedelta(days=397)
"""The longest validity browsers accept for a server certificate."""
RENEW_BEFORE = datetime.timedelta(days=30)
_BACKDATE = datetime.timedelta(minutes=5)  # a peer whose clock is a little behind accepts it

_WILDCARDS = frozenset({"", "0.0.0.0", "::"})

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class TlsFiles:
    """The files of a local cluster's private CA and certificate (see the module docstring)."""

    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def ca_key(self) -> Path:
        return self.folder / "ca-key.pem"

    @property
    def certificate(self) -> Path:
        return self.folder / "server.pem"

    @property
    def key(self) -> Path:
        return self.folder / "server-key.pem"

    def settings(self) -> dict[str, object]:
        """The ``rest.ssl.*`` keys that make a process serve and verify with these files."""
        return {
            "rest.ssl.enabled": True,
            "rest.ssl.certificate": str(self.certificate.absolute()),
            "rest.ssl.key": str(self.key.absolute()),
            "rest.ssl.ca": str(self.ca.absolute()),
        }


def local_hosts(extra: Iterable[str] = ()) -> list[str]:
    """The names and addresses of this machine a certificate should name, plus ``extra``."""
    return _normalized(
        ["localhost", "127.0.0.1", "::1", socket.gethostname(), socket.getfqdn(), *extra]
    )


def ensure_local_tls(
    folder: Path,
    hosts: Sequence[str],
    *,
    name: str = "Steward",
    now: datetime.datetime | None = None,
) -> TlsFiles:
    """The CA and certificate in ``folder``, made or renewed as the module docstring says;
    the certificate names every one of ``hosts``. ``name`` goes into the subjects."""
    now = now or datetime.datetime.now(datetime.UTC)
    files = TlsFiles(folder)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    loaded = _load_ca(files, now)
    renewed_ca = loaded is None
    if loaded is None:
        loaded = _new_ca(files, name, now)
    ca, ca_key = loaded
    if renewed_ca or not _current(files, ca, hosts, now):
        _new_certificate(files, ca=ca, ca_key=ca_key, hosts=hosts, name=name, now=now)
    return files


def certificate_hosts(certificate: x509.Certificate) -> set[str]:
    """The DNS names and IP addresses a certificate names (its subject alternative names)."""
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    dns = names.get_values_for_type(x509.DNSName)
    addresses = names.get_values_for_type(x509.IPAddress)
    return {name.lower() for name in dns} | {str(address) for address in addresses}


# ---------------------------------------------------------------------------- the CA


def _load_ca(
    files: TlsFiles, now: datetime.datetime
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None:
    certificate = _read_certificate(files.ca)
    key = _read_key(files.ca_key)
    if certificate is None or key is None or _public(key) != _public(certificate.public_key()):
        return None
    if certificate.not_valid_after_utc - RENEW_BEFORE <= now:
        return None
    return certificate, key


def _new_ca(
    files: TlsFiles, name: str, now: datetime.datetime
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} local CA")])
    certificate = (
        _builder(subject, subject, key.public_key(), now, CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_signing_only(certificates=True), critical=True)
        .sign(key, hashes.SHA256())
    )
    _write_private(files.ca_key, _pem_key(key))
    _write_public(files.ca, certificate.public_bytes(serialization.Encoding.PEM))
    return certificate, key


_NO_CIPHER = dict.fromkeys(
    (
        "content_commitment",
        "key_encipherment",
        "data_encipherment",
        "key_agreement",
        "encipher_only",
        "decipher_only",
    ),
    False,
)
"""The key usages a signing-only key has not."""


def _signing_only(*, certificates: bool) -> x509.KeyUsage:
    """A key that signs, and nothing else: certificates and revocation lists too (a CA's),
    or not (an end entity's)."""
    return x509.KeyUsage(
        digital_signature=True, key_cert_sign=certificates, crl_sign=certificates, **_NO_CIPHER
    )


# ---------------------------------------------------------------------------- the certificate


def _current(
    files: TlsFiles, ca: x509.Certificate, hosts: Sequence[str], now: datetime.datetime
) -> bool:
    """Whether the certificate on disk is signed by ``ca``, valid for a while yet, names
    every host and matches its key."""
    certificate = _read_certificate(files.certificate)
    if certificate is None:
        return False
    try:
        certificate.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    if certificate.not_valid_after_utc - RENEW_BEFORE <= now:
        return False
    if not set(_normalized(hosts)) <= certificate_hosts(certificate):
        return False
    key = _read_key(files.key)
    return key is not None and _public(key) == _public(certificate.public_key())


def _new_certificate(
    files: TlsFiles,
    *,
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    hosts: Sequence[str],
    name: str,
    now: datetime.datetime,
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} JobManager")])
    alternative: list[x509.GeneralName] = []
    for host in _normalized(hosts):
        address = _ip(host)
        alternative.append(x509.IPAddress(address) if address else x509.DNSName(host))
    certificate = _signed_leaf(
        _builder(subject, ca.subject, key.public_key(), now, CERTIFICATE_VALIDITY)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName(alternative), critical=False),
        ca_key,
    )
    _write_private(files.key, _pem_key(key))
    _write_public(files.certificate, certificate.public_bytes(serialization.Encoding.PEM))


# ---------------------------------------------------------------------------- clients


@dataclass(frozen=True)
class ClientCertificate:
    """A client certificate and its key, as :func:`issue_client_certificate` wrote them."""

    certificate: Path
    key: Path


def issue_client_certificate(
    ca_folder: Path,
    name: str,
    role: str,
    out: Path,
    *,
    validity: datetime.timedelta = CERTIFICATE_VALIDITY,
    now: datetime.datetime | None = None,
    teams: Sequence[str] = (),
) -> ClientCertificate:
    """A certificate for the client ``name`` with ``role`` in ``teams`` (its subject's CN, O
    and OUs, what ``security.auth.client-certificates`` reads), signed by the CA in
    ``ca_folder`` (a local cluster's ``.steward/tls``), written to ``out`` as ``<name>.pem``
    and ``<name>-key.pem`` (0600). ValueError when the folder holds no usable CA."""
    now = now or datetime.datetime.now(datetime.UTC)
    ca_files = TlsFiles(ca_folder)
    loaded = _load_ca(ca_files, now)
    if loaded is None:
        raise ValueError(
            f"{ca_folder} holds no usable CA (ca.pem and ca-key.pem, valid for a while yet)"
        )
    ca, ca_key = loaded
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, name),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, role),
            *(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, team) for team in teams),
        ]
    )
    certificate = _signed_leaf(
        _builder(subject, ca.subject, key.public_key(), now, validity).add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        ),
        ca_key,
    )
    out.mkdir(parents=True, exist_ok=True)
    issued = ClientCertificate(out / f"{name}.pem", out / f"{name}-key.pem")
    _write_private(issued.key, _pem_key(key))
    _write_public(issued.certificate, certificate.public_bytes(serialization.Encoding.PEM))
    return issued


# ---------------------------------------------------------------------------- helpers


def _signed_leaf(
    builder: x509.CertificateBuilder, ca_key: ec.EllipticCurvePrivateKey
) -> x509.Certificate:
    """``builder``'s certificate as an end entity (not a CA; signatures only), signed."""
    return (
        builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_signing_only(certificates=False), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    now: datetime.datetime,
    validity: datetime.timedelta,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + validity)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def _read_certificate(path: Path) -> x509.Certificate | None:
    """The certificate in ``path``; None when it cannot be read (it is made anew)."""
    try:
        return x509.load_pem_x509_certificate(path.read_bytes())
    except (ValueError, OSError):
        return None


def _normalized(hosts: Iterable[str]) -> list[str]:
    """Host names lower-cased, IPv6 brackets and wildcards dropped, each once, in order."""
    unique: list[str] = []
    for host in hosts:
        name = host.strip().strip("[]").lower().rstrip(".")
        address = _ip(name)
        name = str(address) if address is not None else name  # one spelling per address
        if name not in _WILDCARDS and name not in unique and (address or name.isascii()):
            unique.append(name)
    return unique


def _read_key(path: Path) -> ec.EllipticCurvePrivateKey | None:
    """The EC key in ``path``; None when it is something else or cannot be read."""
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError, OSError):
        return None
    return key if isinstance(key, ec.EllipticCurvePrivateKey) else None


def _ip(host: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _public(key: object) -> bytes:
    public = key.public_key() if isinstance(key, ec.EllipticCurvePrivateKey) else key
    if not isinstance(public, ec.EllipticCurvePublicKey):
        return b""
    return public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` readable by its owner only (0600) from the first byte, atomically."""
    files.write_atomically(path, data, mode=0o600)


def _write_public(path: Path, data: bytes) -> None:
    files.write_atomically(path, data, mode=0o644)
