"""A cluster's credentials: the internal credential and an admin token, as files (0600) in a
folder, the token's record in ZooKeeper. ``steward cluster start`` and the testing kit call it.

Both files are kept across starts (a restarted cluster keeps its tokens). The admin token's
record is (re)written when ZooKeeper lacks it, from the token itself (a new ZooKeeper, a purged
namespace): the file is what the user holds, so the file wins.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from steward.config import Configuration
from steward.errors import ConfigurationError
from steward.ha.session import Session
from steward.store.tokens import TokenStore
from steward.wire.tokens import Role, TokenRecord

from . import tokens
from .credentials import (
    ADMIN_TOKEN_FILE,
    INTERNAL_TOKEN_FILE,
    new_internal_secret,
    read_secret,
    write_secret,
)

log = logging.getLogger(__name__)

ADMIN_NAME = "admin"


@dataclass(frozen=True)
class ClusterCredentials:
    internal_file: Path
    admin_file: Path

    @property
    def admin_token(self) -> str:
        return read_secret(self.admin_file, "the admin token file")

    @property
    def internal_secret(self) -> str:
        return read_secret(self.internal_file, "security.internal.token-file")


def ensure_files(folder: Path) -> ClusterCredentials:
    """The credential files in ``folder``, made (0600) where missing."""
    credentials = ClusterCredentials(folder / INTERNAL_TOKEN_FILE, folder / ADMIN_TOKEN_FILE)
    if not credentials.internal_file.is_file():
        write_secret(credentials.internal_file, new_internal_secret())
    if not credentials.admin_file.is_file():
        token, _record = tokens.mint(ADMIN_NAME, Role.ADMIN)
        write_secret(credentials.admin_file, token)
    return credentials


def register(session: Session, token: str, *, name: str = ADMIN_NAME) -> TokenRecord:
    """Make sure ZooKeeper holds the record of admin token ``token``; returns it."""
    parsed = tokens.parse(token)
    if parsed is None:
        raise ConfigurationError("the admin token file does not hold a Steward token")
    store = TokenStore(session)
    found = store.find(parsed.id)
    if found is not None and tokens.matches(found, parsed):
        return found
    if found is not None:
        store.delete(parsed.id)
    record = admin_record(token, name=name)
    store.create(record)
    log.info("admin token registered id=%s", parsed.id)
    return record


def admin_record(token: str, *, name: str = ADMIN_NAME) -> TokenRecord:
    """The record of an existing admin token ``token`` (made from the token itself)."""
    parsed = tokens.parse(token)
    if parsed is None:
        raise ConfigurationError("the admin token file does not hold a Steward token")
    _, fresh = tokens.mint(name, Role.ADMIN)
    return fresh.model_copy(update={"id": parsed.id, "sha256": tokens.digest(parsed.secret)})


def register_admin_token(config: Configuration, token: str) -> TokenRecord:
    """:func:`register` over a short session of its own, to the cluster ``config`` names."""
    with Session.from_config(config, name="steward-credentials") as session:
        return register(session, token)
