"""The security groups of :mod:`steward.config.settings`: authentication and teams
(``security.*``), sign-on (``security.oidc.*``), rate limits (``security.rate-limits.*``) and
HTTPS (``rest.ssl.*``). Built by :meth:`steward.config.settings.Settings.from_values`, as every
group is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class SecuritySettings:
    """Authentication of the JobManagers' REST API (steward.security)."""

    auth_enabled: bool
    """Bearer tokens on every route but /healthz and /readyz."""
    internal_token_file: str
    """The cluster's internal credential; empty: none."""
    audit_file: str
    """Where the audit log is appended too; empty: the log only."""
    client_certificates: bool = False
    """A verified client certificate is a credential."""
    default_team: str = "default"
    """The team of callers in none, and of jobs stored before teams (steward.security.teams)."""
    proxy_users: tuple[tuple[str, str], ...] = ()
    """(OS user, caller) pairs: who may run jobs as whom (steward.security.proxy_users)."""


@dataclass(frozen=True, slots=True)
class OidcSettings:
    """Sign-on with an OpenID Connect provider (steward.security.oidc); off without an issuer."""

    issuer: str
    client_id: str
    client_secret_file: Path | None
    audience: str
    """Empty: the client id."""
    user_claim: str
    groups_claim: str
    group_roles: tuple[tuple[str, str], ...]
    """(group, role) pairs."""
    group_teams: tuple[tuple[str, str], ...]
    """(group, team) pairs; a group may appear more than once."""
    algorithms: tuple[str, ...]
    leeway: float
    jwks_refresh_floor: float
    scopes: str
    redirect_uri: str
    display_name: str
    ca: Path | None

    @property
    def enabled(self) -> bool:
        return bool(self.issuer)


@dataclass(frozen=True, slots=True)
class RateLimitSettings:
    """How often a caller may fail to authenticate or submit (steward.security.rate_limits);
    0 turns a limit off."""

    auth_failures_per_address: int
    """Failed authentications per window from one source address."""
    auth_failures_per_credential: int
    """Failed authentications per window with one credential."""
    auth_failure_window: float
    """Seconds."""
    submissions_per_team: int
    """Jobs per window one team submits."""
    submission_window: float
    """Seconds."""


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """HTTPS on the REST API: what a JobManager serves, what every client verifies with
    (:mod:`steward.tls.contexts`)."""

    enabled: bool
    """A JobManager serves HTTPS and advertises ``https://``."""
    certificate: Path | None
    """PEM certificate (chain) served, and presented as a client."""
    key: Path | None
    """PEM private key of the certificate."""
    ca: Path | None
    """PEM CA bundle to verify peers with; None: the system's CAs."""
    client_auth: str = "none"
    """``none``, ``optional`` (a client may present a certificate) or ``require`` (mutual
    TLS)."""

    @property
    def require_client_certificate(self) -> bool:
        return self.client_auth == "require"

    @property
    def optional_client_certificate(self) -> bool:
        return self.client_auth == "optional"

    @property
    def request_client_certificate(self) -> bool:
        """A JobManager asks clients for a certificate (and verifies one it is given)."""
        return self.require_client_certificate or self.optional_client_certificate
