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
