"""A JobManager's REST security from its settings: the authenticator (users' tokens from
ZooKeeper, the internal credential from its file) and the audit log's file.

With ``security.auth.enabled`` (the default) a JobManager without an internal credential
refuses to start, naming ``security.internal.token-file``: its TaskManagers could not heartbeat;
one told to take client certificates as credentials refuses to start unless its TLS asks for
them. Sign-on (``security.oidc.*``) is checked here too: a bad combination stops the start.
"""

from __future__ import annotations

import logging
from pathlib import Path

from steward.config import OidcSettings, SecuritySettings, TlsSettings
from steward.errors import ConfigurationError
from steward.ha.session import Session
from steward.security import audit
from steward.security.authenticator import Authenticator
from steward.security.credentials import INTERNAL_KEY, read_secret
from steward.security.sign_on import sign_on
from steward.store.tokens import TokenStore

from .rest.auth import ApiSecurity

log = logging.getLogger(__name__)


def api_security(
    settings: SecuritySettings,
    session: Session,
    tls: TlsSettings | None = None,
    oidc: OidcSettings | None = None,
) -> ApiSecurity:
    store = TokenStore(session)
    certificates = settings.client_certificates and settings.auth_enabled
    if certificates and (tls is None or not (tls.enabled and tls.request_client_certificate)):
        raise ConfigurationError(
            "security.auth.client-certificates is true but this JobManager does not ask"
            " clients for certificates: set rest.ssl.enabled=true and rest.ssl.client-auth to"
            " optional or require (with rest.ssl.ca, the CA that signs them)",
            key="security.auth.client-certificates",
        )
    audit.configure(Path(settings.audit_file) if settings.audit_file else None)
    if not settings.auth_enabled:
        log.warning(
            "security.auth.enabled is false: anyone who can reach this JobManager may submit,"
            " cancel and manage tokens; run so on a trusted network only"
        )
        return ApiSecurity(Authenticator(store.find, None, enabled=False), store)
    if not settings.internal_token_file:
        raise ConfigurationError(
            f"{INTERNAL_KEY} is not set: a JobManager with security.auth.enabled needs the"
            " cluster's internal credential (the file `steward cluster start` writes to"
            " .steward/internal.token), or its TaskManagers cannot heartbeat",
            key=INTERNAL_KEY,
        )
    internal = read_secret(Path(settings.internal_token_file), INTERNAL_KEY)
    provider = sign_on(oidc) if oidc is not None else None
    authenticator = Authenticator(
        store.find, internal, sign_on=provider.verifier.identity if provider else None
    )
    return ApiSecurity(authenticator, store, client_certificates=certificates, sign_on=provider)
