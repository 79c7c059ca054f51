"""Records a newer release wrote (with optional fields this one does not know) are read
through the real stores, so a cluster can be upgraded one process at a time."""

from __future__ import annotations

import json
import time

import pytest
from stores_support import Contender, make_graph

from steward.doctor import Limits, examine
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.job_graphs import JobGraphStore
from steward.store.results import JobResultStore
from steward.store.statuses import JobStatusStore
from steward.wire.records import JobResultEntry, JobStatusRecord
from steward.wire.states import JobState, TerminalState

pytestmark = pytest.mark.zookeeper


def with_newer_fields(data: bytes) -> bytes:
    raw = json.loads(data)
    raw["preemption"] = {"class": "gold", "preemptible": False}  # a field of a future release
    return json.dumps(raw).encode()


def test_a_newer_releases_records_are_read_and_found_sound(
    leader: Contender, session: Session, blobs: BlobStore
) -> None:
    now = time.time()
    JobGraphStore(session, blobs).put(leader.fence, make_graph("job-new"))
    status = JobStatusRecord(
        job_id="job-new",
        state=JobState.SCHEDULED,
        submitted_at=now,
        updated_at=now,
        epoch=leader.fence.epoch,
    )
    JobStatusStore(session).write(leader.fence, status)
    result = JobResultEntry(
        job_id="job-old", state=TerminalState.FINISHED, finished_at=now, epoch=leader.fence.epoch
    )
    JobResultStore(session, blobs).create_dirty(leader.fence, result)
    # As a newer JobManager would write them
    for path in (session.layout.job_status("job-new"), session.layout.result("job-old")):
        data, _stat = session.client.get(path)
        session.client.set(path, with_newer_fields(data))

    assert JobStatusStore(session).find("job-new") == status
    assert JobResultStore(session, blobs).find("job-old") == result
    assert examine(session, blobs, "test", limits=Limits(grace=60.0)).findings == []


def test_a_status_record_is_stored_without_nulls_and_one_stored_whole_still_reads(
    leader: Contender, session: Session
) -> None:
    # Issue 22: a record is written without its default-valued fields; the previous
    # release wrote them all (nulls included), and a new leader must read those as they are.
    now = time.time()
    status = JobStatusRecord(
        job_id="job-both",
        state=JobState.SCHEDULED,
        submitted_at=now,
        updated_at=now,
        epoch=leader.fence.epoch,
        queue="default",
        priority=0,
        slots=1,
    )
    # Schema 1's compact form (record format 2 says null where it implies another value).
    store = JobStatusStore(session, record_format=1)
    store.write(leader.fence, status)
    path = session.layout.job_status("job-both")
    stored, _stat = session.client.get(path)
    assert b"null" not in stored and b'"reason"' not in stored

    session.client.set(path, status.model_dump_json(by_alias=True).encode())  # stored whole

    assert b"null" in session.client.get(path)[0]
    assert store.find("job-both") == status
