"""A revoke on a JobManager holds at once there, even for a lookup that was inside its
ZooKeeper read while the revoke ran (issue 23, item 7): the record that read returns is the
token's record before the revoke, and it must not be cached after ``forget()`` ran (before the
fix it was, and the revoked token was accepted for the cache's whole TTL).
"""

from __future__ import annotations

import threading

from steward.ha.session import Session
from steward.security import tokens
from steward.security.authenticator import Authenticator
from steward.store.tokens import TokenStore
from steward.wire.tokens import Role, TokenRecord

HOLD = 10.0


def test_a_lookup_that_overlapped_the_revoke_is_not_cached(session: Session) -> None:
    store = TokenStore(session)
    token, record = tokens.mint("alice", Role.SUBMITTER)
    store.create(record)
    read_done, release = threading.Event(), threading.Event()

    def held_lookup(token_id: str) -> TokenRecord | None:
        found = store.find(token_id)  # the real read, before the revoke
        read_done.set()
        release.wait(HOLD)  # still "inside" the read while the revoke runs
        return found

    # A long TTL: a record cached now would be trusted for the rest of the test.
    auth = Authenticator(held_lookup, None, cache_ttl=60.0)
    verdicts: list[object] = []
    racing = threading.Thread(target=lambda: verdicts.append(auth.verify(token)))
    racing.start()
    assert read_done.wait(HOLD)

    assert store.delete(record.id)  # the revoke, as DELETE /v1/tokens/{id} does it
    auth.forget(record.id)
    release.set()
    racing.join(HOLD)

    assert not racing.is_alive()
    assert verdicts == [None]  # the overlapping request read again and saw the revoke
    assert auth.verify(token) is None  # and what is cached is the token's absence
