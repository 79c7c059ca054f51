"""The event journal's cursors: what can be replayed, what needs a reset, and waking."""

from __future__ import annotations

import asyncio
import threading

from steward.client.events import Event, parse
from steward.jobmanager.events.journal import Journal
from steward.wire.events import JobEvent, comment, frame
from steward.wire.states import JobState


def _event(job_id: str, state: JobState = JobState.RUNNING) -> JobEvent:
    return JobEvent(job_id=job_id, state=state, epoch=1, at=1.0)


def test_read_replays_the_events_after_a_cursor() -> None:
    journal = Journal()
    start = journal.head
    journal.append(_event("a"))
    middle = journal.head
    journal.append(_event("b"))
    replay = journal.read(start)
    assert replay is not None
    assert [entry.event.job_id for entry in replay.entries] == ["a", "b"]
    assert replay.cursor == journal.head
    after_a = journal.read(middle)
    assert after_a is not None and [e.event.job_id for e in after_a.entries] == ["b"]


def test_a_cursor_of_another_journal_or_a_dropped_event_cannot_be_replayed() -> None:
    journal, other = Journal(capacity=2), Journal()
    old = journal.head
    for name in ("a", "b", "c"):
        journal.append(_event(name))
    assert journal.read(old) is None  # "a" is no longer kept
    assert journal.read(other.head) is None
    assert journal.read("nonsense") is None
    assert journal.read(journal.head.rsplit("-", 1)[0] + "-99") is None  # from the future


def test_a_full_journal_replays_exactly_the_kept_events_after_a_cursor() -> None:
    journal = Journal(capacity=3)
    for name in ("a", "b", "c", "d"):  # "a" falls out
        journal.append(_event(name))
    cursors = {}
    for name in ("e", "f"):
        cursors[name] = journal.head
        journal.append(_event(name))
    replay = journal.read(cursors["f"])
    assert replay is not None and [e.event.job_id for e in replay.entries] == ["f"]
    assert replay.entries[0].cursor == journal.head
    journal.break_continuity()
    journal.append(_event("g"))
    fresh = journal.head
    journal.append(_event("h"))
    after = journal.read(fresh)
    assert after is not None and [e.event.job_id for e in after.entries] == ["h"]


def test_broken_continuity_invalidates_every_cursor() -> None:
    journal = Journal()
    cursor = journal.head
    journal.break_continuity()
    assert journal.read(cursor) is None
    assert journal.read(journal.head) is not None


def test_an_append_from_another_thread_wakes_a_waiter() -> None:
    journal = Journal()

    async def wait() -> bool:
        with journal.waiting() as waiter:
            threading.Timer(0.05, journal.append, args=(_event("a"),)).start()
            return await waiter.wait(10)

    assert asyncio.run(wait()) is True
    assert journal.waiters == 0


def test_the_client_parses_what_the_server_frames() -> None:
    text = (
        frame("reset", '{"cursor":"x-0","why":"new"}', "x-0")
        + comment("keep-alive")
        + frame("job", _event("a").model_dump_json(), "x-1")
    ).decode()
    events = list(parse(iter(text.split("\n"))))
    assert [(e.name, e.id) for e in events] == [("reset", "x-0"), ("job", "x-1")]
    assert JobEvent.model_validate_json(events[1].data).job_id == "a"
    assert events[0] == Event("reset", '{"cursor":"x-0","why":"new"}', "x-0")


def test_a_batch_is_appended_in_order_and_wakes_each_waiter_once() -> None:
    journal = Journal()
    start = journal.head
    wakes: list[int] = []

    async def append_while_waiting() -> None:
        with journal.waiting() as waiter:
            real_wake = waiter.wake

            def counted() -> None:
                wakes.append(1)
                real_wake()

            waiter.wake = counted  # type: ignore[method-assign]
            journal.append_many([(_event(name), None) for name in ("a", "b", "c")])
            assert await waiter.wait(5.0)

    asyncio.run(append_while_waiting())
    assert wakes == [1]
    replay = journal.read(start)
    assert replay is not None
    assert [entry.event.job_id for entry in replay.entries] == ["a", "b", "c"]
