"""A verified client certificate into an :class:`Identity` (mutual TLS, for machines).

With ``security.auth.client-certificates`` on, a JobManager whose TLS handshake verified the
client's certificate against ``rest.ssl.ca`` takes that certificate as a credential: its
subject's common name (CN) names the caller, its organization (O) is the role, ``viewer``,
``submitter`` or ``admin``, as Kubernetes reads a client certificate's user (CN) and groups (O).
Each organizational unit (OU) that could name a team is a team the caller is in (none: the
default team, :mod:`.teams`).
A certificate without such an O, or with a CN that could not name a token, is no credential
(401), so the JobManagers' own certificates, which carry no role, never become one.

The handshake did the verification (chain, validity, key usage): this module only reads the
subject of what the server put in the request's scope (the ASGI TLS extension's
``client_cert_chain``, see :mod:`steward.tls.peer`). There is no revocation list: a
certificate is withdrawn by its expiry, or by turning the key off (see docs/security.md).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from starlette.types import Scope

from steward.wire.patterns import TEAM_PATTERN
from steward.wire.tokens import TOKEN_NAME_PATTERN, Role

from .identity import Identity

if TYPE_CHECKING:
    from cryptography import x509

_NAME = re.compile(TOKEN_NAME_PATTERN)
_TEAM = re.compile(TEAM_PATTERN)


def certificate_identity(scope: Scope) -> Identity | None:
    """The caller named by the request's verified client certificate, or None."""
    tls = scope.get("extensions", {}).get("tls") or {}
    chain = tls.get("client_cert_chain") or ()
    if not chain or not isinstance(chain[0], str):
        return None
    return identity_of(chain[0])


@functools.lru_cache(maxsize=1024)
def identity_of(pem: str) -> Identity | None:
    """The identity a PEM client certificate's subject names, or None (see the module)."""
    # Imported here: cryptography's x509 costs every JobManager and TaskManager start tens of
    # ms of CPU, and only a cluster that takes client certificates reads one.
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    try:
        subject = x509.load_pem_x509_certificate(pem.encode("ascii")).subject
    except ValueError:
        return None
    names = _values(subject, NameOID.COMMON_NAME)
    roles = {value for value in _values(subject, NameOID.ORGANIZATION_NAME) if value in _ROLES}
    if len(names) != 1 or len(roles) != 1 or not _NAME.fullmatch(names[0]):
        return None
    teams = frozenset(
        unit for unit in _values(subject, NameOID.ORGANIZATIONAL_UNIT_NAME) if _TEAM.fullmatch(unit)
    )
    return Identity(name=names[0], role=Role(roles.pop()), teams=teams)


_ROLES = frozenset(role.value for role in Role)


def _values(subject: x509.Name, oid: x509.ObjectIdentifier) -> list[str]:
    return [
        value
        for attribute in subject.get_attributes_for_oid(oid)
        if isinstance(value := attribute.value, str)
    ]
