"""The notification outbox: job events waiting for their webhooks, ``notifications/<event-id>``.

An event's record is created in the same fenced transaction as the write that makes the event
true (a terminal job's DIRTY result, a restarting job's status record), so an event is kept
exactly when it happened, whichever leader dies when; the leader deletes it once every webhook
took it, or it gave up. The records are small (:class:`NotificationRecord`, about 1 KB) and
bounded in number by the leader (``notifications.outbox-max``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from steward.errors import CorruptStateError, NoNodeError
from steward.ha.fencing import Fence
from steward.ha.session import Session
from steward.store import zk
from steward.store.group_commit import Create
from steward.wire.notifications import NotificationRecord

log = logging.getLogger(__name__)


class NotificationOutbox:
    """Read, create (as part of another write) and delete the outbox's records."""

    def __init__(self, session: Session) -> None:
        self._client = session.client
        self._layout = session.layout

    def create_of(self, record: NotificationRecord) -> Create:
        """The create of ``record``, for the fenced transaction of the write it reports."""
        return Create(self._layout.notification(record.event_id), record.to_json())

    def event_ids(self) -> list[str]:
        return zk.children(self._client, self._layout.notifications)

    def records(self, event_ids: list[str]) -> Iterator[NotificationRecord]:
        """The readable records of ``event_ids``, reads pipelined in bounded batches; a gone
        one is skipped, an unreadable one logged and skipped."""
        paths = [self._layout.notification(event_id) for event_id in event_ids]
        for event_id, read in zip(event_ids, zk.read_batched(self._client, paths), strict=True):
            if read is None:
                continue
            try:
                record = NotificationRecord.from_json(read[0])
            except CorruptStateError as exc:
                log.error("unreadable notification dropped event=%s error=%s", event_id, exc)
                continue
            if record.event_id == event_id:
                yield record

    def delete(self, fence: Fence, event_id: str) -> bool:
        """Delete a record through the fence; False if it was gone already."""
        try:
            fence.transaction().delete(self._layout.notification(event_id)).commit()
        except NoNodeError:
            return False
        return True
