"""``leader/history``: the latest terms of leadership, written by each leader through its fence.

Each leader appends its own term once it has recovered (so the entry says how long recovery
took and what it adopted); the list keeps the newest :data:`KEPT` terms. A term whose leader
died before it recovered leaves no entry: its epoch is the gap between two entries. The write
is fenced, so a deposed leader cannot add itself after its successor did; a concurrent
change (only a deposed leader's write that raced the check) is retried on the new version.
"""

from __future__ import annotations

import logging

from steward.errors import ConcurrentModificationError, CorruptStateError, NodeExistsError
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store import zk
from steward.wire.records import LeadershipHistory, LeadershipTerm

log = logging.getLogger(__name__)

KEPT = 100
"""Terms kept: about 200 bytes each, far below a znode's 1 MB."""


class LeadershipHistoryStore:
    def __init__(self, session: Session) -> None:
        self._client = session.client
        self._path = session.layout.leader_history

    def terms(self) -> list[LeadershipTerm]:
        """The recorded terms, oldest first; none if nothing was recorded yet.

        Raises CorruptStateError if the node does not decode.
        """
        found = zk.read(self._client, self._path)
        return [] if found is None else LeadershipHistory.from_json(found[0]).terms

    def record(self, fence: Fence, term: LeadershipTerm, *, kept: int = KEPT) -> None:
        """Append ``term`` (replacing an entry of the same epoch); FencedError if deposed."""
        for _ in range(3):
            found = zk.read(self._client, self._path)
            try:
                terms = [] if found is None else LeadershipHistory.from_json(found[0]).terms
            except CorruptStateError as exc:
                log.warning("leadership history unreadable, started anew error=%s", exc)
                terms = []
            terms = [t for t in terms if t.epoch != term.epoch] + [term]
            data = LeadershipHistory(terms=terms[-kept:]).to_json()
            try:
                if found is None:
                    fence.transaction().create(self._path, data).commit()
                else:
                    fence.transaction().set_data(self._path, data, found[1].version).commit()
                return
            except (ConcurrentModificationError, NodeExistsError):
                continue
        log.warning("leadership history not recorded epoch=%d: kept changing", term.epoch)
