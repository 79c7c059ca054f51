"""The notification outbox on a real ZooKeeper: an event is written with the result that makes
it true or not at all, and the leader's delivery keeps the outbox under its cap.

The delivery test's webhook is a port nothing listens on: every call fails at once and is
retried, so the events stay in the outbox for the cap to act on."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from stores_support import Contender

from steward.config import load
from steward.errors import FencedError, JobExistsError
from steward.jobmanager.leader.delivery import Delivery
from steward.jobmanager.leader.term import Term
from steward.store.blob import BlobStore
from steward.store.outbox import NotificationOutbox
from steward.store.results import JobResultStore
from steward.wire.notifications import NotificationEvent, NotificationRecord, event_id
from steward.wire.records import JobResultEntry
from steward.wire.states import TerminalState
from support import wait_until

pytestmark = pytest.mark.zookeeper


def _record(job_id: str, at: float = 1.0) -> NotificationRecord:
    event = NotificationEvent.FINISHED
    return NotificationRecord(
        event_id=event_id(job_id, 1, event),
        job_id=job_id,
        event=event,
        state="FINISHED",
        attempt=1,
        at=at,
    )


def _entry(job_id: str, epoch: int) -> JobResultEntry:
    return JobResultEntry(job_id=job_id, state=TerminalState.FINISHED, finished_at=2.0, epoch=epoch)


def test_an_end_event_is_written_with_its_result_once_and_never_by_a_deposed_leader(
    leader: Contender, blobs: BlobStore, depose: Callable[[], Contender]
) -> None:
    results, outbox = JobResultStore(leader.session, blobs), NotificationOutbox(leader.session)
    epoch = leader.leadership.epoch
    results.create_dirty(leader.fence, _entry("a", epoch), [outbox.create_of(_record("a"))])
    assert outbox.event_ids() == ["a:1:FINISHED"]
    assert [r.job_id for r in outbox.records(outbox.event_ids())] == ["a"]
    # A second end of the same job: refused with its result, the event not duplicated
    with pytest.raises(JobExistsError):
        results.create_dirty(leader.fence, _entry("a", epoch), [outbox.create_of(_record("a"))])
    # A deposed leader writes neither the result nor the event
    depose()
    with pytest.raises(FencedError):
        results.create_dirty(leader.fence, _entry("b", epoch), [outbox.create_of(_record("b"))])
    assert not results.has_result("b")
    assert outbox.event_ids() == ["a:1:FINISHED"]


def _refused_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"  # closed again: connections are refused


def test_past_the_cap_the_oldest_events_are_dropped_from_the_outbox(
    leader: Contender, tmp_path: Path
) -> None:
    config = load(
        environ={},
        overrides={"notifications.webhooks": _refused_url(), "notifications.outbox-max": "2"},
    )
    term = Term(leader.leadership.epoch, leader.fence, config, "jm-1")
    outbox = NotificationOutbox(leader.session)
    now = time.time()
    records = [_record(job_id, now + n) for n, job_id in enumerate(("old", "mid", "new"))]
    for record in records[:2]:  # two in the outbox when the term starts
        leader.fence.transaction().create(*_create(outbox, record)).commit()
    delivery = Delivery(term, outbox, "test")
    worker = threading.Thread(target=delivery.run, daemon=True)
    worker.start()
    try:
        leader.fence.transaction().create(*_create(outbox, records[2])).commit()
        delivery.add(records[2])  # a third, written by this term: the oldest goes
        wait_until(
            lambda: outbox.event_ids() == ["mid:1:FINISHED", "new:1:FINISHED"],
            10,
            message="the oldest dropped",
        )
        assert _count(term, "dropped") == 1
        wait_until(
            lambda: _count(term, "retried") >= 2,
            10,
            message="the refused webhook retried",
        )
        assert outbox.event_ids() == ["mid:1:FINISHED", "new:1:FINISHED"]
    finally:
        term.stop()
        worker.join(10)
    assert not worker.is_alive()


def _create(outbox: NotificationOutbox, record: NotificationRecord) -> tuple[str, bytes]:
    create = outbox.create_of(record)
    return create.path, create.data


def _count(term: Term, outcome: str) -> float:
    found = term.metrics.registry.get_sample_value(
        "steward_notifications_total", {"outcome": outcome}
    )
    return found or 0.0
