"""Who may call a TaskManager's port: the authenticator from its settings.

The same credentials as the JobManagers' API: users' tokens, verified against their records in
ZooKeeper (the TaskManager reads them through its own session, so a revoke holds here within
the authenticator's cache time too), and the cluster's internal credential (what JobManagers
proxy logs with). With ``security.auth.enabled`` false everyone is let in, as on the API.
"""

from __future__ import annotations

from steward.config import SecuritySettings, TlsSettings
from steward.ha.session import Session
from steward.security.authenticator import Authenticator
from steward.security.credentials import internal_credential
from steward.store.tokens import TokenStore


def authenticator(settings: SecuritySettings, session: Session) -> Authenticator:
    store = TokenStore(session)
    if not settings.auth_enabled:
        return Authenticator(store.find, None, enabled=False)
    return Authenticator(store.find, internal_credential(settings))


def takes_certificates(settings: SecuritySettings, tls: TlsSettings) -> bool:
    """Client certificates are credentials here when they are on the API and this port's TLS
    asks for them (the same rest.ssl.* settings)."""
    return (
        settings.client_certificates
        and settings.auth_enabled
        and tls.enabled
        and tls.request_client_certificate
    )
