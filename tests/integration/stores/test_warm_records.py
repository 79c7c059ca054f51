"""A standby's copy of every live job's pointer and record against a real ZooKeeper: handed to
its recovery only if it is as new as the grant's fencing write (docs/architecture.md, "A warm
standby"; issue 22).

Each test makes the copy lag where it could go stale (a re-read not yet answered at the grant,
a read answered before a write and kept after its event, a reconnect during which a job
changed) and checks that what :meth:`WarmRecords.take` hands over is what ZooKeeper holds, or
nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss
from stores_support import Contender, make_graph, write_status

from steward.ha.election import LeaderElection
from steward.ha.session import Session
from steward.store import warm_records
from steward.store.blob import BlobStore
from steward.store.job_graphs import JobGraphStore
from steward.store.warm_records import WarmRecords
from steward.store.warm_snapshot import WarmSnapshot
from steward.wire.record_format import decode_status
from steward.wire.records import ExecutionLease
from steward.wire.states import JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper

GATE_TIMEOUT = 20.0
JOB = "job-a"


@pytest.fixture
def job(leader: Contender, blobs: BlobStore) -> str:
    """A live job of the leader: its graph pointer, and its record at RUNNING."""
    JobGraphStore(leader.session, blobs).put(leader.fence, make_graph(JOB))
    write_status(leader, JOB, JobState.RUNNING)
    return JOB


@pytest.fixture
def warm(standby_session: Session, job: str) -> Iterator[WarmRecords]:
    records = WarmRecords(standby_session).start()
    try:
        wait_until(lambda: records.held == 1, 20, "the standby holds the job")
        yield records
    finally:
        records.stop()


@pytest.fixture
def grant(leader: Contender, standby_session: Session, contenders: Any) -> Callable[[], None]:
    """The leader steps down and the standby is granted: its fencing write acknowledged."""

    def _grant() -> None:
        leader.election.stop()
        election = LeaderElection(standby_session, "jm-2", "http://jm-2:8081").start()
        contenders.callback(election.stop)
        wait_until(lambda: election.leadership, 20, "jm-2 granted")

    return _grant


def in_zookeeper(leader: Contender, job_id: str) -> tuple[JobState, int]:
    """The job's record's state and znode version, as ZooKeeper holds them now."""
    data, stat = leader.session.client.get(leader.session.layout.job_status(job_id))
    return JobState(decode_status(data, job_id).state), stat.version


def held(snapshot: WarmSnapshot, job_id: str) -> tuple[JobState, int]:
    return snapshot.records[job_id].state, snapshot.versions[job_id]


def gated(monkeypatch: pytest.MonkeyPatch, target: Any, name: str) -> threading.Event:
    """Hold every call of ``target.name`` until the returned gate opens."""
    gate = threading.Event()
    real = getattr(target, name)

    def held_back(*args: Any, **kwargs: Any) -> Any:
        assert gate.wait(GATE_TIMEOUT), "the test never opened the gate"
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, held_back)
    return gate


def lagging_until_the_barrier(monkeypatch: pytest.MonkeyPatch, warm: WarmRecords) -> None:
    """Hold the standby's re-reads back until :meth:`WarmRecords.take` queues its barrier."""
    gate = gated(monkeypatch, warm, "_read_batch")
    real_put = warm._queue.put

    def put(item: Any, *args: Any, **kwargs: Any) -> None:
        real_put(item, *args, **kwargs)
        if isinstance(item, warm_records._Barrier):
            gate.set()

    monkeypatch.setattr(warm._queue, "put", put)


def take_lease(session: Session, job_id: str) -> ExecutionLease:
    """``job_id``'s execution lease, taken as a TaskManager takes it (ephemeral)."""
    lease = ExecutionLease(taskmanager="tm-1", attempt=1, epoch=1)
    session.client.create(session.layout.execution(job_id), lease.to_json(), ephemeral=True)
    return lease


def test_a_record_written_just_before_the_grant_is_handed_over_as_written(
    leader: Contender,
    warm: WarmRecords,
    job: str,
    grant: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The standby's re-reads lag: the one the write's event queues is not answered before the
    # grant, and is let through only once take() has queued its barrier behind it.
    lagging_until_the_barrier(monkeypatch, warm)
    write_status(leader, job, JobState.RESTARTING)
    grant()

    snapshot = warm.take(GATE_TIMEOUT)

    assert snapshot is not None and snapshot.vouches(job)
    assert held(snapshot, job) == in_zookeeper(leader, job) == (JobState.RESTARTING, 1)


def test_a_read_answered_before_a_write_is_not_kept_after_its_event(
    leader: Contender,
    warm: WarmRecords,
    job: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first re-read is answered (RESTARTING), then held back while the next write's event
    # arrives; what it read must not be kept, and the next re-read is held back too.
    answered, second_asked = threading.Event(), threading.Event()
    first_done, second_go = threading.Event(), threading.Event()
    real_read = warm_records.zk.read_many
    calls: list[int] = []

    def lagging(client: Any, paths: list[str]) -> Any:
        calls.append(1)
        if len(calls) == 1:
            answers = real_read(client, paths)
            answered.set()
            assert first_done.wait(GATE_TIMEOUT)
            return answers
        second_asked.set()
        assert second_go.wait(GATE_TIMEOUT)
        return real_read(client, paths)

    monkeypatch.setattr(warm_records.zk, "read_many", lagging)
    write_status(leader, job, JobState.RESTARTING)
    assert answered.wait(GATE_TIMEOUT)
    write_status(leader, job, JobState.SCHEDULED)
    wait_until(lambda: job not in warm._records, 10, "the event drops what is held")
    first_done.set()
    assert second_asked.wait(GATE_TIMEOUT)

    assert job not in warm._records  # the lagging answer was not kept
    second_go.set()
    wait_until(lambda: job in warm._records, 10, "the re-read is kept")
    assert warm._records[job][0].state is JobState.SCHEDULED


def test_a_standby_whose_watches_are_not_added_again_after_a_reconnect_hands_nothing_over(
    leader: Contender,
    standby_session: Session,
    warm: WarmRecords,
    grant: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused() -> None:
        raise ConnectionLoss("the test refuses the watches")

    monkeypatch.setattr(warm, "_watch", refused)
    assert standby_session.drop_connection("the test drops it")
    wait_until(lambda: warm.held == 0, 10, "the reconnect forgets what is held")
    write_status(leader, JOB, JobState.RESTARTING)  # no watch, no event
    grant()

    assert warm.take(GATE_TIMEOUT) is None


def test_a_job_changed_during_a_reconnect_is_read_again_before_it_is_handed_over(
    leader: Contender,
    standby_session: Session,
    warm: WarmRecords,
    grant: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = gated(monkeypatch, warm, "_watch")
    assert standby_session.drop_connection("the test drops it")
    wait_until(lambda: warm.held == 0, 10, "the reconnect forgets what is held")
    write_status(leader, JOB, JobState.RESTARTING)  # no watch, no event
    gate.set()
    wait_until(lambda: warm.held == 1, 10, "the re-arm reads every job again")
    grant()

    snapshot = warm.take(GATE_TIMEOUT)

    assert snapshot is not None
    assert held(snapshot, JOB) == in_zookeeper(leader, JOB) == (JobState.RESTARTING, 1)


def test_a_lease_taken_just_before_the_grant_is_handed_over(
    leader: Contender,
    warm: WarmRecords,
    job: str,
    grant: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lagging_until_the_barrier(monkeypatch, warm)
    lease = take_lease(leader.session, job)
    grant()

    snapshot = warm.take(GATE_TIMEOUT)

    assert snapshot is not None
    assert snapshot.leases == {job: lease}


def test_a_lease_released_just_before_the_grant_is_not_handed_over(
    leader: Contender,
    warm: WarmRecords,
    job: str,
    grant: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    take_lease(leader.session, job)
    wait_until(lambda: job in warm._leases, 10, "the standby holds the lease")
    lagging_until_the_barrier(monkeypatch, warm)
    leader.session.client.delete(leader.session.layout.execution(job))
    grant()

    snapshot = warm.take(GATE_TIMEOUT)

    assert snapshot is not None
    assert snapshot.leases == {}
