"""A new leader is ready before it rewrites the records of the jobs it recovered from them, and
that late write never replaces a record a transition wrote meanwhile (issue 22).

Rewriting every adopted job's record (only to add ``adopted_by``) before the term was ready
cost a third of a takeover at 1,000 running jobs; it is made after, each record only if its
znode is still the version recovery read (``leader/late_records.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest
from adoption_harness import STARTED_AT, leased_jobs, running_report
from jobmanager_harness import SETTLE, JobManagerCluster, dispatcher_of

from steward.jobmanager.leader.late_records import LateRecords
from steward.store.statuses import JobStatusStore
from steward.wire.record_format import decode_status
from steward.wire.records import JobStatusRecord
from support import wait_until

pytestmark = pytest.mark.zookeeper

JOBS = 4


def stored(cluster: JobManagerCluster, job_id: str) -> JobStatusRecord:
    """The job's status record as ZooKeeper holds it."""
    return decode_status(cluster.data(cluster.layout.job_status(job_id)) or b"", job_id)


def adopted_by(cluster: JobManagerCluster, job_id: str) -> list[int]:
    attempts = stored(cluster, job_id).attempts
    return attempts[-1].adopted_by if attempts else []


def hold(
    monkeypatch: pytest.MonkeyPatch, target: Any, name: str
) -> tuple[threading.Event, threading.Event]:
    """Hold ``target.name`` until the returned ``release`` is set; ``reached`` is set when it
    is first called."""
    reached, release = threading.Event(), threading.Event()
    real = getattr(target, name)

    def held(*args: Any, **kwargs: Any) -> Any:
        reached.set()
        release.wait(SETTLE)
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, held)
    return reached, release


def wait_written(cluster: JobManagerCluster, job_ids: Sequence[str], epoch: int) -> None:
    wait_until(
        lambda: all(adopted_by(cluster, job_id) == [epoch] for job_id in job_ids),
        SETTLE,
        message="the adopted records are written late",
    )


def test_a_takeover_is_ready_before_the_adopted_records_are_rewritten(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_ids = [f"job-{i}" for i in range(JOBS)]
    leased_jobs(cluster, job_ids)
    _reached, release = hold(monkeypatch, LateRecords, "run")

    successor = cluster.start_leader("jm-2")

    epoch = dispatcher_of(successor).epoch
    assert dispatcher_of(successor).recovery_summary["adopted"] == JOBS
    for job_id in job_ids:
        assert cluster.job(successor, job_id)["attempts"][-1]["adopted_by"] == [epoch]
        assert adopted_by(cluster, job_id) == []  # ready, and the record not rewritten yet
    release.set()
    wait_written(cluster, job_ids, epoch)
    assert all(stored(cluster, job_id).epoch == epoch for job_id in job_ids)


def test_a_late_record_never_overwrites_one_a_transition_wrote_meanwhile(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed, unchanged = "job-0", "job-1"
    tm = leased_jobs(cluster, [changed, unchanged])
    # The late records are built (the adopted attempt not started yet), then held unwritten.
    reached, release = hold(monkeypatch, JobStatusStore, "write_many_unchanged")
    successor = cluster.start_leader("jm-2")
    epoch = dispatcher_of(successor).epoch
    wait_until(reached.is_set, SETTLE, message="the late records are built")

    tm.heartbeat(successor, running_report(changed))  # news: the record now has its start
    assert stored(cluster, changed).attempts[-1].started_at == STARTED_AT
    release.set()

    wait_written(cluster, [unchanged], epoch)
    record = stored(cluster, changed)
    assert record.attempts[-1].started_at == STARTED_AT
    assert record.attempts[-1].adopted_by == [epoch]
