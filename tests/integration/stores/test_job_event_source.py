"""Live events' source against a real ZooKeeper: a standby's watches on the status records and
results a (real, fenced) leader writes become journal events; a session loss breaks the
journal's continuity so that every stream resets."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from ha_harness import expire_session
from stores_support import Contender, write_failed_result, write_status

from steward.ha.session import Session
from steward.jobmanager.events.journal import Journal
from steward.jobmanager.events.source import JobEventSource
from steward.jobmanager.indexed_job import IndexedJob
from steward.store.blob import BlobStore
from steward.wire.events import JobEvent
from steward.wire.records import JobStatusRecord
from steward.wire.states import JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def standby(
    zk_quorum: str, zk_root: str, leader: Contender, blobs: BlobStore
) -> Iterator[JobEventSource]:
    session = Session(zk_quorum, zk_root, session_timeout=4.0, name="standby").start()
    source = JobEventSource(session, blobs, Journal()).start()
    try:
        yield source
    finally:
        source.stop()
        session.close()


def _events(journal: Journal, cursor: str) -> list[JobEvent]:
    replay = journal.read(cursor)
    assert replay is not None
    return [entry.event for entry in replay.entries]


def _wait_for(journal: Journal, cursor: str, count: int) -> list[JobEvent]:
    return wait_until(
        lambda: (events := _events(journal, cursor)) and len(events) >= count and events,
        10,
        f"{count} events",
    )


def test_a_jobs_changes_and_its_result_become_events_once_each(
    leader: Contender, standby: JobEventSource, blobs: BlobStore
) -> None:
    journal, start = standby.journal, standby.journal.head
    write_status(leader, "job-1", JobState.SCHEDULED, "waiting for a slot")
    _wait_for(journal, start, 1)
    write_status(leader, "job-1", JobState.SCHEDULED, "waiting for a slot")  # nothing new
    write_status(leader, "job-1", JobState.RUNNING)
    _wait_for(journal, start, 2)
    write_failed_result(leader, blobs, "job-1")
    events = _wait_for(journal, start, 3)
    write_status(leader, "job-1", JobState.RUNNING, "late")  # after the result: adds nothing
    wait_until(lambda: standby.watched == 1, 5)
    assert [(e.state, e.reason) for e in _events(journal, start)] == [
        (JobState.SCHEDULED, "waiting for a slot"),
        (JobState.RUNNING, None),
        (JobState.FAILED, "bad input"),
    ], events
    assert {(e.job_id, e.submitter, e.epoch) for e in events} == {
        ("job-1", "alice", leader.leadership.epoch)
    }


def test_jobs_there_at_start_are_events_too_and_so_are_their_changes(
    zk_quorum: str, zk_root: str, leader: Contender, blobs: BlobStore
) -> None:
    write_status(leader, "old", JobState.RUNNING)
    session = Session(zk_quorum, zk_root, session_timeout=4.0, name="late-standby").start()
    source = JobEventSource(session, blobs, Journal()).start()
    try:
        start = source.journal.head
        wait_until(lambda: source.watched == 1, 10, "the old job watched")
        write_failed_result(leader, blobs, "old")
        events = _wait_for(source.journal, start, 2)
        # Its state when the watch was set (a consumer may have read it before), then the end.
        assert [(e.job_id, e.state) for e in events] == [
            ("old", JobState.RUNNING),
            ("old", JobState.FAILED),
        ]
    finally:
        source.stop()
        session.close()


def test_a_lost_session_breaks_continuity_and_events_flow_again(
    leader: Contender, standby: JobEventSource
) -> None:
    journal = standby.journal
    before = journal.head
    expire_session(standby._session)
    wait_until(lambda: journal.read(before) is None, 20, "continuity broken")
    after = journal.head
    write_status(leader, "job-2", JobState.SCHEDULED)
    events = _wait_for(journal, after, 1)
    assert events[0].job_id == "job-2"


def test_a_reconnect_with_many_jobs_spawns_no_thread_per_job_and_events_still_flow(
    leader: Contender, standby: JobEventSource
) -> None:
    journal, begin = standby.journal, standby.journal.head
    jobs = [f"job-{n}" for n in range(150)]
    for job_id in jobs:
        write_status(leader, job_id, JobState.SCHEDULED)
    wait_until(lambda: standby.watched == len(jobs), 20, "every job watched")
    _wait_for(journal, begin, len(jobs))
    handler = standby._session.client.handler
    spawned: list[object] = []
    spawn = handler.spawn

    def counting_spawn(*args: object, **kwargs: object) -> object:
        spawned.append(args[0])
        return spawn(*args, **kwargs)

    handler.spawn = counting_spawn
    try:
        start = journal.head
        assert standby._session.drop_connection("test")
        wait_until(lambda: standby._session.connected, 20, "reconnected")
        write_status(leader, jobs[-1], JobState.RUNNING)  # seen only if its watch was re-armed
        events = _wait_for(journal, start, 1)
    finally:
        handler.spawn = spawn
    assert [(e.job_id, e.state) for e in events] == [(jobs[-1], JobState.RUNNING)]
    # kazoo's DataWatch spawned one re-read thread per watch (two per job) on each reconnect.
    assert len(spawned) < 10, f"{len(spawned)} threads spawned for {len(jobs)} jobs"


def _record(job_id: str, state: JobState, epoch: int) -> JobStatusRecord:
    now = time.time()
    return JobStatusRecord(
        job_id=job_id, name="etl", state=state, submitted_at=now, updated_at=now, epoch=epoch
    )


def test_a_leading_source_publishes_its_recoverys_reads_unless_it_wrote_the_job_since(
    leader: Contender, standby: JobEventSource
) -> None:
    journal, start, epoch = standby.journal, standby.journal.head, leader.leadership.epoch
    standby.lead()
    standby.wrote([_record("job-w", JobState.RUNNING, epoch)])
    # Recovery's reads: one of a job this leader wrote since the grant (older: dropped), one
    # of a job it did not write (the previous leader's last write: published).
    standby.read(
        [_record("job-w", JobState.SCHEDULED, epoch), _record("job-r", JobState.RUNNING, epoch)]
    )
    standby.recovered()
    wait_until(lambda: standby._fed_since_lead is None, 10, "recovery noted")
    standby.read([_record("job-late", JobState.RUNNING, epoch)])  # after recovery: nothing

    assert [(e.job_id, e.state) for e in _events(journal, start)] == [
        ("job-w", JobState.RUNNING),
        ("job-r", JobState.RUNNING),
    ]
    assert standby.watched == 0


def test_a_record_as_last_seen_builds_no_event_nor_index_entry(
    leader: Contender, standby: JobEventSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A takeover reads every live job's record, then rewrites each adopted one: nearly all
    # as the standby last saw them (the same state, reason and attempt count).
    built: list[str] = []
    of_status = IndexedJob.of_status

    def counted(record: JobStatusRecord, **shown: Any) -> IndexedJob:
        built.append(record.job_id)
        return of_status(record, **shown)

    monkeypatch.setattr(IndexedJob, "of_status", counted)
    journal, start, epoch = standby.journal, standby.journal.head, leader.leadership.epoch
    standby.lead()
    first = _record("job-a", JobState.RUNNING, epoch)
    standby.read([first])
    standby.read([first.model_copy(update={"updated_at": first.updated_at + 1})])
    standby.wrote([first.model_copy(update={"epoch": epoch + 1})])  # adopted, rewritten
    standby.wrote([first.model_copy(update={"reason": "cancel requested"})])

    replay = journal.read(start)
    assert replay is not None
    assert [(e.event.job_id, e.event.reason) for e in replay.entries] == [
        ("job-a", None),
        ("job-a", "cancel requested"),
    ]
    assert all(entry.job is not None for entry in replay.entries)
    assert built == ["job-a", "job-a"]  # one entry a change, none for what adds nothing
