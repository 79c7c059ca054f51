"""The in-memory job index that ``GET /v1/jobs`` pages through, and how events update it.

Pure logic: no ZooKeeper. The index on a real JobManager, fed by real watches, is tested in
tests/integration/jobmanager/test_job_listing.py.
"""

from __future__ import annotations

import pytest

from steward.jobmanager import indexed_job, job_index
from steward.jobmanager.events.journal import Journal
from steward.jobmanager.index_follower import IndexFollower, note
from steward.jobmanager.indexed_job import IndexedJob
from steward.jobmanager.job_index import (
    BadCursorError,
    JobIndex,
    JobQuery,
    decode_cursor,
    encode_cursor,
)
from steward.jobmanager.reads import result_view, status_view
from steward.wire.events import JobEvent
from steward.wire.records import AttemptRecord, ErrorInfo, JobResultEntry, JobStatusRecord
from steward.wire.rest import JobView
from steward.wire.states import AttemptState, JobState, TerminalState
from support import wait_until


def view(n: int, state: JobState = JobState.RUNNING, **fields: object) -> JobView:
    values: dict[str, object] = {
        "job_id": f"job-{n:05d}",
        "name": f"etl-{n % 3}",
        "state": state,
        "submitted_at": 1000.0 + n,
        "submitter": "alice" if n % 2 else "bob",
        "labels": {"team": "data" if n % 4 == 0 else "web"},
    }
    values.update(fields)
    return JobView.model_validate(values)


def index_of(count: int) -> JobIndex:
    return JobIndex.of(view(n) for n in range(count))


def ids(jobs: list[IndexedJob]) -> list[str]:
    return [job.job_id for job in jobs]


def every_page(index: JobIndex, query: JobQuery) -> list[list[str]]:
    pages, after = [], None
    while True:
        page = index.page(JobQuery(**{**query.__dict__, "after": after}))
        pages.append(ids(page.jobs))
        if page.next is None:
            return pages
        after = decode_cursor(page.next)


def test_pages_are_newest_first_and_cover_every_job_once() -> None:
    pages = every_page(index_of(25), JobQuery(limit=10))
    assert [len(page) for page in pages] == [10, 10, 5]
    flat = [job for page in pages for job in page]
    assert flat == [f"job-{n:05d}" for n in range(24, -1, -1)]


def test_a_cursor_stays_valid_when_newer_jobs_arrive() -> None:
    index = index_of(20)
    first = index.page(JobQuery(limit=5))
    assert first.next is not None
    for n in range(20, 30):
        index.put(IndexedJob.of(view(n)))
    second = index.page(JobQuery(limit=5, after=decode_cursor(first.next)))
    assert ids(second.jobs) == [f"job-{n:05d}" for n in range(14, 9, -1)]


def test_filters_combine_and_a_state_filter_walks_only_that_state() -> None:
    index = JobIndex.of(
        view(n, JobState.FINISHED if n % 5 == 0 else JobState.RUNNING) for n in range(40)
    )
    finished = index.page(JobQuery(limit=100, state=JobState.FINISHED))
    assert ids(finished.jobs) == [f"job-{n:05d}" for n in range(35, -1, -5)]
    assert finished.counts == {"FINISHED": 8, "RUNNING": 32}
    query = JobQuery(limit=100, label=("team", "data"), submitter="bob", name_prefix="etl-")
    assert ids(index.page(query).jobs) == [f"job-{n:05d}" for n in range(36, -1, -4)]
    assert index.page(JobQuery(name_prefix="nothing")).jobs == []


def test_a_page_walks_at_most_the_scan_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_index, "SCAN_BUDGET", 10)
    index = index_of(25)
    page = index.page(JobQuery(limit=5, name_prefix="etl-0"))
    # job-00024..15 walked: 24, 21, 18, 15 match; the cursor goes on from job-00015.
    assert ids(page.jobs) == ["job-00024", "job-00021", "job-00018", "job-00015"]
    assert page.next is not None
    assert decode_cursor(page.next) == (1015.0, "job-00015")


def test_a_job_moves_between_states_without_duplicates() -> None:
    index = index_of(3)
    index.put(IndexedJob.of(view(1, JobState.FINISHED)))
    assert ids(index.page(JobQuery()).jobs) == ["job-00002", "job-00001", "job-00000"]
    assert ids(index.page(JobQuery(state=JobState.RUNNING)).jobs) == ["job-00002", "job-00000"]
    assert index.page(JobQuery()).counts == {"RUNNING": 2, "FINISHED": 1}


def test_a_removed_job_is_no_longer_listed_nor_counted() -> None:
    index = index_of(3)
    assert index.remove("job-00001")
    assert not index.remove("job-00001")
    page = index.page(JobQuery())
    assert ids(page.jobs) == ["job-00002", "job-00000"]
    assert page.counts == {"RUNNING": 2}


@pytest.mark.parametrize("cursor", ["", "%%%", "bm90IGpzb24", encode_cursor((1.0, "x"))[:-3]])
def test_a_cursor_not_given_out_is_refused(cursor: str) -> None:
    with pytest.raises(BadCursorError):
        decode_cursor(cursor)


def test_an_indexed_job_keeps_only_the_latest_attempt_and_a_short_reason() -> None:
    attempts = [
        AttemptRecord(number=n, taskmanager=f"tm-{n}", epoch=1, state=AttemptState.FAILED)
        for n in range(1, 4)
    ]
    job = IndexedJob.of(view(1, attempts=attempts, reason="x" * 5000))
    shown = job.view("jm-1")
    assert [a.number for a in shown.attempts] == [3]
    assert shown.reason is not None
    assert len(shown.reason) == indexed_job.MAX_REASON


def test_a_listed_job_is_the_same_document_as_its_job_view() -> None:
    attempt = AttemptRecord(
        number=2, taskmanager="tm-9", epoch=3, state=AttemptState.RUNNING, started_at=5.0
    )
    job = IndexedJob.of(view(7, attempts=[attempt], reason="waits", updated_at=9.5))
    document = job.document("jm-2")
    assert JobView.model_validate(document).model_dump(mode="json") == document
    assert set(document) == set(JobView.model_fields)
    assert document["attempts"] == [
        attempt.model_copy(update={"cause": None}).model_dump(mode="json")
    ]
    assert job.view("jm-2").model_dump(mode="json") == document


def test_a_job_indexed_from_its_status_record_is_the_job_indexed_from_its_view() -> None:
    attempt = AttemptRecord(number=2, taskmanager="tm-9", epoch=3, state=AttemptState.RUNNING)
    record = JobStatusRecord(
        job_id="job-7",
        name="etl",
        state=JobState.RUNNING,
        reason="token=s3cr3t " + "x" * 900,
        submitted_at=10.0,
        updated_at=12.5,
        attempts=[attempt],
        attempt_count=2,
        failures=1,
        epoch=3,
        submitter="alice",
        labels={"team": "data"},
        timeout=60.0,
        team="data",
    )
    assert IndexedJob.of_status(record) == IndexedJob.of(status_view(record, "jm-1"))


def test_a_job_indexed_from_its_result_is_the_job_indexed_from_its_view() -> None:
    entry = JobResultEntry(
        job_id="job-8",
        name="etl",
        state=TerminalState.FAILED,
        error=ErrorInfo(type="ValueError", message="password=hunter2 bad row"),
        submitted_at=10.0,
        finished_at=20.0,
        attempts=[AttemptRecord(number=1, taskmanager="tm-1", epoch=2, state=AttemptState.FAILED)],
        attempt_count=1,
        failures=1,
        epoch=2,
        submitter="bob",
        labels={"team": "web"},
        team="web",
    )
    assert IndexedJob.of_result(entry) == IndexedJob.of(result_view(entry, "jm-1"))


def test_an_event_that_carries_its_job_is_indexed_without_a_read() -> None:
    new = view(2, JobState.SCHEDULED, attempt_count=1)
    reads = Reads([])
    follower = IndexFollower(JobIndex(), Journal(), list, reads.one)
    follower.apply(event(new, JobState.SCHEDULED, 1), IndexedJob.of(new))
    follower.apply(event(new, JobState.FINISHED, 1), IndexedJob.of(view(2, JobState.FINISHED)))
    assert reads.reads == []
    assert follower.index.get(new.job_id).state is JobState.FINISHED  # type: ignore[union-attr]


class Reads:
    """What the follower reads of ZooKeeper, counted."""

    def __init__(self, views: list[JobView]) -> None:
        self.views = {v.job_id: v for v in views}
        self.reads: list[str] = []

    def one(self, job_id: str) -> JobView | None:
        self.reads.append(job_id)
        return self.views.get(job_id)


def event(job: JobView, state: JobState, attempts: int) -> JobEvent:
    return JobEvent(job_id=job.job_id, state=state, epoch=1, at=2000.0, attempt_count=attempts)


def test_events_change_state_without_reads_and_read_new_jobs_once() -> None:
    old, new = view(1, attempt_count=1), view(2, JobState.SUBMITTED)
    reads = Reads([old, new])
    follower = IndexFollower(JobIndex.of([old]), Journal(), list, reads.one)
    follower.apply(event(old, JobState.RESTARTING, 1))
    assert reads.reads == []
    assert follower.index.page(JobQuery(state=JobState.RESTARTING)).jobs[0].job_id == old.job_id
    follower.apply(event(new, JobState.SUBMITTED, 0))
    follower.apply(event(new, JobState.SCHEDULED, 0))
    assert reads.reads == [new.job_id]
    assert follower.index.get(new.job_id).state is JobState.SCHEDULED  # type: ignore[union-attr]


def test_a_terminated_job_is_never_brought_back_by_a_late_event() -> None:
    done = view(1, JobState.FINISHED)
    index = JobIndex.of([done])
    follower = IndexFollower(index, Journal(), list, Reads([done]).one)
    follower.apply(event(done, JobState.RUNNING, 1))
    note(index, view(1, JobState.CANCELLING))
    assert index.get(done.job_id).state is JobState.FINISHED  # type: ignore[union-attr]


def test_the_follower_fills_then_follows_and_reads_everything_again_after_a_gap() -> None:
    journal = Journal()
    known = [view(1)]
    reads = Reads([view(1), view(2)])
    follower = IndexFollower(JobIndex(), journal, lambda: list(known), reads.one).start()
    try:
        wait_until(lambda: follower.index.ready, 10, message="the index is filled")
        journal.append(event(view(2), JobState.SUBMITTED, 0))
        wait_until(lambda: follower.index.get("job-00002") is not None, 10, message="job 2")
        # Changes were missed (a lost session): the next look re-reads every job.
        known[:] = [view(1, JobState.FINISHED), view(3)]
        journal.break_continuity()
        journal.append(event(view(1), JobState.FINISHED, 0))

        def reread() -> bool:
            return follower.index.get("job-00003") is not None and len(follower.index) == 2

        wait_until(reread, 10, message="the index re-read everything")
    finally:
        follower.stop()
        journal.close()
