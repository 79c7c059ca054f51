"""The ``security.oidc.*`` keys: sign-on with the company's OpenID Connect provider.

Each key is checked on its own here; what only holds across keys (an issuer needs a client id
and at least one group mapped to a role) is checked when a JobManager starts
(:func:`steward.security.oidc_settings.check`), so a bad combination stops it with the key named.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from steward.config.option import Option, optional_path
from steward.config.units import to_duration, to_str

ROLES = ("viewer", "submitter", "admin")
ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
"""Algorithms a token may be signed with: public-key ones only. ``none`` and the HMAC family
(a shared secret, which a JWKS of public keys could be mistaken for) are never accepted."""


def group_map(value: object) -> tuple[tuple[str, str], ...]:
    """``"group=value, group2=value"`` into pairs (a group may appear more than once)."""
    pairs: list[tuple[str, str]] = []
    for part in to_str(value).split(","):
        if not part.strip():
            continue
        group, _, mapped = part.strip().rpartition("=")
        pairs.append((group.strip(), mapped.strip()))
    return tuple(pairs)


TEAM_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@\-]{0,63}")
"""A team's name: what a token's name may be (it travels in headers, logs and URLs)."""


def _pairs_problem(
    pairs: tuple[tuple[str, str], ...], allowed: tuple[str, ...] | None
) -> str | None:
    for group, mapped in pairs:
        if not group or not mapped:
            return f"{group}={mapped!r} is not group=value (e.g. steward-admins=admin)"
        if allowed is not None and mapped not in allowed:
            return f"{group}={mapped}: the role must be one of {', '.join(allowed)}"
        if allowed is None and not TEAM_PATTERN.fullmatch(mapped):
            return f"{group}={mapped}: a team is 1-64 letters, digits, '.', '_', '@' or '-'"
    return None


def _url(value: str) -> str | None:
    """An https URL, or http on the loopback (a provider the tests run, a dev setup)."""
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "http" and parts.hostname in ("localhost", "127.0.0.1", "::1"):
        return None
    return "must be an https:// URL (http:// only on localhost)"


def _algorithms(value: str) -> str | None:
    names = [name.strip() for name in value.split(",") if name.strip()]
    wrong = [name for name in names if name not in ASYMMETRIC]
    if not names:
        return "must name at least one algorithm, e.g. RS256"
    if wrong:
        return f"{', '.join(wrong)}: only public-key algorithms ({', '.join(sorted(ASYMMETRIC))})"
    return None


def _algorithm_names(value: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in value.split(",") if name.strip())


OIDC_OPTIONS: tuple[Option, ...] = (
    Option(
        "security.oidc.issuer",
        to_str,
        "",
        "The OpenID Connect provider's issuer URL (its discovery document is"
        " `<issuer>/.well-known/openid-configuration`). Set, the API also takes the provider's JWT"
        " access tokens and the web UI offers to sign in with it; empty: sign-on is off. See"
        " [security.md](security.md#single-sign-on-openid-connect).",
        _url,
        setting="oidc.issuer",
    ),
    Option(
        "security.oidc.client-id",
        to_str,
        "",
        "Steward's client id at the provider (the web UI's sign-in). Required with an issuer.",
        setting="oidc.client_id",
    ),
    Option(
        "security.oidc.client-secret-file",
        to_str,
        "",
        "File holding the client's secret (chmod 600; never logged nor answered). Empty: a public"
        " client (PKCE alone).",
        setting="oidc.client_secret_file",
        to_setting=optional_path,
    ),
    Option(
        "security.oidc.audience",
        to_str,
        "",
        "The `aud` an access token must carry to be taken by the API. Empty: the client id.",
        setting="oidc.audience",
    ),
    Option(
        "security.oidc.user-claim",
        to_str,
        "sub",
        "The claim that names the caller (audit log, a job's submitter). `sub` never changes;"
        " `preferred_username` or `email` read better where the provider keeps them unique.",
        lambda v: None if v else "must name a claim",
        setting="oidc.user_claim",
    ),
    Option(
        "security.oidc.groups-claim",
        to_str,
        "groups",
        "The claim listing the caller's groups (a list of strings, or one string).",
        lambda v: None if v else "must name a claim",
        setting="oidc.groups_claim",
    ),
    Option(
        "security.oidc.group-roles",
        group_map,
        "",
        "Groups to roles, `group=role` separated by commas (e.g. `steward-admins=admin,"
        " data-eng=submitter, analysts=viewer`). A caller gets the highest role any of its groups"
        " maps to; a token with no mapped group is refused (403).",
        lambda v: _pairs_problem(v, ROLES),
        setting="oidc.group_roles",
    ),
    Option(
        "security.oidc.group-teams",
        group_map,
        "",
        "Groups to teams, `group=team` separated by commas; a group may name several teams by"
        " appearing again. A caller belongs to every team any of its groups maps to.",
        lambda v: _pairs_problem(v, None),
        setting="oidc.group_teams",
    ),
    Option(
        "security.oidc.algorithms",
        to_str,
        "RS256,PS256,ES256,EdDSA",
        "Signature algorithms an access token may use, comma-separated; public-key ones only"
        " (never `none` nor HS*).",
        _algorithms,
        setting="oidc.algorithms",
        to_setting=_algorithm_names,
    ),
    Option(
        "security.oidc.leeway",
        to_duration,
        "30s",
        "Clock skew allowed when checking a token's `exp`, `nbf` and `iat`.",
        lambda v: None if 0 <= v <= 300 else "must be between 0 and 5m",
        setting="oidc.leeway",
    ),
    Option(
        "security.oidc.jwks-refresh-floor",
        to_duration,
        "30s",
        "Least time between two fetches of the provider's keys (JWKS) caused by a token signed"
        " with an unknown key id: a rotated key is taken within this time without a restart,"
        " and forged key ids cannot make Steward hammer the provider. The keys are also"
        " refetched every hour.",
        lambda v: None if v >= 0 else "must not be negative",
        setting="oidc.jwks_refresh_floor",
    ),
    Option(
        "security.oidc.scopes",
        to_str,
        "openid profile",
        "Scopes the web UI's sign-in asks for, space-separated (`openid` is added if missing).",
        setting="oidc.scopes",
    ),
    Option(
        "security.oidc.redirect-uri",
        to_str,
        "",
        "The web UI's callback as registered at the provider (`https://<host>/ui/login/callback`)."
        " Empty: derived from each request's own address (register every JobManager's).",
        _url,
        setting="oidc.redirect_uri",
    ),
    Option(
        "security.oidc.display-name",
        to_str,
        "",
        "The provider's name on the login page (\"Sign in with ...\"). Empty: the issuer's host.",
        setting="oidc.display_name",
    ),
    Option(
        "security.oidc.ca",
        to_str,
        "",
        "PEM CA bundle to verify the provider's TLS certificate with. Empty: the system's CAs.",
        setting="oidc.ca",
        to_setting=optional_path,
    ),
)
