"""Credential files (mode 0600) and how a client finds its token.

A client (the CLI, ``steward.Client``) uses the first of:

1. a token given explicitly (``token=``, ``--token``);
2. ``$STEWARD_TOKEN``;
3. the file ``client.token-file`` names;
4. the local cluster's admin token, ``<workdir>/.steward/admin.token`` (``steward cluster
   start`` writes it), when present and the client talks to that cluster's JobManagers only
   (never sent to an address the caller named elsewhere).

None of them: requests go without credentials (a JobManager with auth on answers 401).
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from steward import files
from steward.config import SecuritySettings
from steward.errors import ConfigurationError

log = logging.getLogger(__name__)

TOKEN_ENV = "STEWARD_TOKEN"
ADMIN_TOKEN_FILE = "admin.token"
INTERNAL_TOKEN_FILE = "internal.token"
INTERNAL_PREFIX = "stwi_"


def new_internal_secret() -> str:
    """A cluster's internal credential: 32 random bytes, distinct in shape from users' tokens."""
    return INTERNAL_PREFIX + secrets.token_urlsafe(32)


def write_secret(path: Path, secret: str) -> None:
    """Write ``secret`` to ``path``, readable by its owner only (0600), atomically."""
    files.write_atomically(path, secret + "\n", mode=0o600)


def read_secret(path: Path, key: str) -> str:
    """The secret in ``path`` (the value of configuration key ``key``), or a clear error."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigurationError(
            f"{key}: cannot read {path}: {exc.strerror or exc}", key=key
        ) from exc
    if not text:
        raise ConfigurationError(f"{key}: {path} is empty", key=key)
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning("credential file %s is readable by others (chmod 600 it); key=%s", path, key)
    return text


def find_token(
    explicit: str | None,
    *,
    token_file: str,
    workdir: Path,
    local_cluster: bool = True,
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """The token a client sends: see the module docstring for the order."""
    if explicit:
        return explicit.strip()
    environ = os.environ if environ is None else environ
    if environ.get(TOKEN_ENV, "").strip():
        return environ[TOKEN_ENV].strip()
    if token_file:
        return read_secret(Path(token_file).expanduser(), "client.token-file")
    local = workdir.absolute() / ".steward" / ADMIN_TOKEN_FILE
    if local_cluster and local.is_file():
        return read_secret(local, "the local cluster's admin token")
    return None


INTERNAL_KEY = "security.internal.token-file"


def internal_credential(settings: SecuritySettings) -> str | None:
    """The cluster's internal credential a TaskManager sends (None with auth off); a clear
    error naming the key when auth is on and the file is not configured or unreadable."""
    if not settings.auth_enabled:
        return None
    if not settings.internal_token_file:
        raise ConfigurationError(
            f"{INTERNAL_KEY} is not set: with security.auth.enabled a TaskManager needs the"
            " cluster's internal credential to heartbeat (the file `steward cluster start`"
            " writes to .steward/internal.token)",
            key=INTERNAL_KEY,
        )
    return read_secret(Path(settings.internal_token_file), INTERNAL_KEY)
