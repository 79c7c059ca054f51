"""Credentials of test clusters, made the way ``steward cluster start`` makes them.

One admin token per test process (:func:`kit_admin_token`), registered in the ZooKeeper
namespace of every cluster the kit starts, and exported as ``$STEWARD_TOKEN`` for the test
process (:func:`export_admin_token`): every ``steward.Client`` a test builds, and every raw
request that passes :func:`auth_headers`, is an admin of every test cluster. Each cluster's
internal credential is a file of its own (``<workdir>/internal.token``, mode 0600).
:class:`MemorySecurity` is the same for an in-memory REST app (unit tests).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from steward.jobmanager.rest.auth import ApiSecurity
from steward.security import tokens
from steward.security.authenticator import Authenticator
from steward.security.credentials import (
    INTERNAL_TOKEN_FILE,
    TOKEN_ENV,
    new_internal_secret,
    write_secret,
)
from steward.security.provision import ADMIN_NAME, admin_record
from steward.wire.tokens import Role, TokenRecord

_lock = threading.Lock()
_token: str | None = None


def kit_admin_token() -> str:
    """This test process's admin token (made once)."""
    global _token
    with _lock:
        if _token is None:
            _token, _record = tokens.mint(ADMIN_NAME, Role.ADMIN)
        return _token


def export_admin_token() -> str:
    """Set ``$STEWARD_TOKEN`` to the kit's admin token (over any of the shell's: the test
    clusters know only the kit's)."""
    token = kit_admin_token()
    os.environ[TOKEN_ENV] = token
    return token


def auth_headers(token: str | None = None) -> dict[str, str]:
    """``Authorization`` for a raw request: ``token``, else the kit's admin token."""
    return {"authorization": f"Bearer {token or kit_admin_token()}"}


def internal_token_file(folder: Path) -> Path:
    """``folder``'s internal credential file, made (0600) if missing."""
    path = folder / INTERNAL_TOKEN_FILE
    if not path.is_file():
        write_secret(path, new_internal_secret())
    return path


class MemoryTokens:
    """Token records in a dict: a JobManager's token store for an in-memory REST app."""

    def __init__(self) -> None:
        self.by_id: dict[str, TokenRecord] = {}

    def create(self, record: TokenRecord) -> None:
        self.by_id[record.id] = record

    def find(self, token_id: str) -> TokenRecord | None:
        return self.by_id.get(token_id)

    def records(self) -> list[TokenRecord]:
        return list(self.by_id.values())

    def delete(self, token_id: str) -> bool:
        return self.by_id.pop(token_id, None) is not None


@dataclass
class MemorySecurity:
    """The REST security of an in-memory app (a unit test's): tokens in a dict, the kit's admin
    token among them, an internal credential of its own; :meth:`token` adds one."""

    tokens: MemoryTokens = field(default_factory=MemoryTokens)
    internal: str = field(default_factory=new_internal_secret)
    api: ApiSecurity = field(init=False)

    def __post_init__(self) -> None:
        self.api = ApiSecurity(Authenticator(self.tokens.find, self.internal), self.tokens)
        self.tokens.create(admin_record(kit_admin_token()))

    def token(
        self,
        name: str,
        role: Role,
        *,
        expires_in: float | None = None,
        teams: list[str] | None = None,
    ) -> str:
        token, record = tokens.mint(name, role, expires_in=expires_in, teams=teams)
        self.tokens.create(record)
        return token
