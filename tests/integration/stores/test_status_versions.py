"""A status record written over only if it is still the version read (issue 22): a new leader
rewrites its recovered jobs' records after it is ready, and a late write must never replace a
newer record with an older one."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from stores_support import Contender

from steward.errors import FencedError
from steward.ha.session import Session
from steward.store.statuses import JobStatusStore
from steward.wire.records import JobStatusRecord
from steward.wire.states import JobState

pytestmark = pytest.mark.zookeeper


def status(job_id: str, epoch: int, reason: str) -> JobStatusRecord:
    now = time.time()
    return JobStatusRecord(
        job_id=job_id,
        state=JobState.SCHEDULED,
        reason=reason,
        submitted_at=now,
        updated_at=now,
        epoch=epoch,
    )


def test_a_record_changed_or_removed_since_it_was_read_is_skipped_and_the_rest_written(
    leader: Contender, session: Session
) -> None:
    store, fence = JobStatusStore(session), leader.fence
    job_ids = ["job-a", "job-b", "job-c"]
    for job_id in job_ids:
        store.write(fence, status(job_id, fence.epoch, "as recovery read it"))
    _records, versions = store.find_many_versioned(job_ids)
    store.write(fence, status("job-b", fence.epoch, "newer, by a transition"))
    store.remove(fence, "job-c")

    late = [(status(job_id, fence.epoch, "late"), versions[job_id]) for job_id in job_ids]
    skipped = store.write_many_unchanged(fence, late)

    assert sorted(skipped) == ["job-b", "job-c"]
    found = store.find_many_quietly(job_ids)
    assert {job_id: r and r.reason for job_id, r in found.items()} == {
        "job-a": "late",
        "job-b": "newer, by a transition",
        "job-c": None,
    }


def test_a_deposed_leaders_late_write_is_fenced(
    leader: Contender, session: Session, depose: Callable[[], Contender]
) -> None:
    store, fence = JobStatusStore(session), leader.fence
    store.write(fence, status("job-a", fence.epoch, "as recovery read it"))
    _records, versions = store.find_many_versioned(["job-a"])
    depose()

    with pytest.raises(FencedError):
        store.write_many_unchanged(
            fence, [(status("job-a", fence.epoch, "late"), versions["job-a"])]
        )

    found = store.find("job-a")
    assert found is not None and found.reason == "as recovery read it"
