"""Users' access tokens in ZooKeeper: ``auth/tokens/<token-id>``, one :class:`TokenRecord` each.

Not fenced: a token is not job state, and any JobManager (an admin's request, or ``steward
cluster start``) may create or revoke one; the znode's existence is the token's validity, so a
revoke (the znode deleted) holds on every JobManager at its next read.
"""

from __future__ import annotations

import logging

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from steward.errors import CorruptStateError
from steward.ha.kazoo_errors import KAZOO_ERRORS, translate
from steward.ha.session import Session
from steward.store import zk
from steward.wire.tokens import TokenRecord, check_token_id

log = logging.getLogger(__name__)


class TokenStore:
    def __init__(self, session: Session) -> None:
        self._session = session
        self._layout = session.layout

    @property
    def _client(self) -> KazooClient:
        # Asked each time: the session's watchdog may have replaced a dead client.
        return self._session.client

    def create(self, record: TokenRecord) -> None:
        path = self._layout.auth_token(check_token_id(record.id))
        try:
            self._client.create(path, record.to_json(), makepath=True)
        except KAZOO_ERRORS as exc:
            raise translate(exc, path) from exc

    def find(self, token_id: str) -> TokenRecord | None:
        """The token's record, or None (revoked, never created, or unreadable: logged)."""
        found = zk.read(self._client, self._layout.auth_token(check_token_id(token_id)))
        if found is None:
            return None
        try:
            return TokenRecord.from_json(found[0])
        except CorruptStateError as exc:
            log.warning("token record unreadable id=%s error=%s", token_id, exc)
            return None

    def records(self) -> list[TokenRecord]:
        records = []
        for name in zk.children(self._client, self._layout.auth_tokens):
            try:
                record = self.find(name)
            except ValueError:
                continue  # a stray znode names no token
            if record is not None:
                records.append(record)
        return records

    def delete(self, token_id: str) -> bool:
        """Revoke: True if the token existed."""
        path = self._layout.auth_token(check_token_id(token_id))
        try:
            self._client.delete(path)
        except NoNodeError:
            return False
        except KAZOO_ERRORS as exc:
            raise translate(exc, path) from exc
        return True
