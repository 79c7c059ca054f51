"""The REST long poll (steward.jobmanager.rest.events.long_poll) keeps the deadline it names."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import uvloop

from steward.jobmanager.rest.events import EventFeed, long_poll
from steward.wire.rest import JobView
from steward.wire.states import JobState


def test_an_idle_long_poll_never_answers_before_its_deadline_on_uvloop() -> None:
    # uvloop (what uvicorn picks when it is installed) counts its timers in whole milliseconds,
    # so a timeout fires up to a millisecond early now and then: a fresh clone's CI run saw an
    # idle poll of wait=1 answered after 0.999 s.
    feed = EventFeed()
    running = cast(JobView, SimpleNamespace(state=JobState.RUNNING))

    async def polls() -> list[float]:
        waited = []
        for _ in range(40):
            view, took = await long_poll(feed, "idle", 0.0137, "RUNNING", lambda: running)
            assert view is running
            waited.append(took)
        return waited

    assert min(uvloop.run(polls())) >= 0.0137
