"""Access tokens: ``stw_<id>_<secret>``, stored as the SHA-256 of their secret.

The id (12 hex digits) is public: it names the token's record (``auth/tokens/<id>``), appears
in ``steward token list`` and the audit log. The secret (32 random bytes, urlsafe base64) is
shown once, when the token is made; only its hash is kept. A presented token is checked with
:func:`hmac.compare_digest` against the hash of its record, and against its expiry.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from steward.wire.tokens import Role, TokenRecord

PREFIX = "stw_"
ID_LENGTH = 12
SECRET_BYTES = 32
_MAX_TOKEN_LENGTH = 256


@dataclass(frozen=True)
class ParsedToken:
    """A presented token split into its public id and its secret."""

    id: str
    secret: str


def parse(token: str) -> ParsedToken | None:
    """``token``'s id and secret, or None if it is not shaped like a Steward token."""
    if len(token) > _MAX_TOKEN_LENGTH or not token.startswith(PREFIX):
        return None
    rest = token[len(PREFIX) :]
    token_id, separator, secret = rest[:ID_LENGTH], rest[ID_LENGTH : ID_LENGTH + 1], rest[13:]
    if separator != "_" or not secret or not _is_hex(token_id):
        return None
    return ParsedToken(token_id, secret)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()


def mint(
    name: str, role: Role, *, expires_in: float | None = None, teams: list[str] | None = None
) -> tuple[str, TokenRecord]:
    """A new token and its record (to be stored): the token is shown once, never stored."""
    token_id = secrets.token_hex(ID_LENGTH // 2)
    secret = secrets.token_urlsafe(SECRET_BYTES)
    now = time.time()
    record = TokenRecord(
        id=token_id,
        name=name,
        role=role,
        sha256=digest(secret),
        created_at=now,
        expires_at=None if expires_in is None else now + expires_in,
        teams=teams or [],
    )
    return f"{PREFIX}{token_id}_{secret}", record


def matches(record: TokenRecord, presented: ParsedToken, *, now: float | None = None) -> bool:
    """The presented secret is the record's, and the record has not expired."""
    if presented.id != record.id:
        return False
    if not hmac.compare_digest(digest(presented.secret), record.sha256):
        return False
    now = time.time() if now is None else now
    return record.expires_at is None or now < record.expires_at


def _is_hex(text: str) -> bool:
    return len(text) == ID_LENGTH and all(c in "0123456789abcdef" for c in text)
