"""A standby's job watches against a real ZooKeeper 3.9: two persistent recursive watches
(``jobs/`` and ``results/``), whatever the job count, through dropped connections and new
sessions (issue 22); the leader holds none."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from ha_harness import expire_session
from kazoo.security import OPEN_ACL_UNSAFE, make_acl
from stores_support import Contender, write_failed_result, write_status, write_statuses

from steward.ha.session import Session
from steward.jobmanager.events.journal import Journal
from steward.jobmanager.events.source import JobEventSource
from steward.store.blob import BlobStore
from steward.store.statuses import JobStatusStore
from steward.store.watches import JobWatches, _Watch
from steward.wire.records import JobStatusRecord
from steward.wire.states import JobState
from steward.zookeeper.managed import ManagedEnsemble
from support import server_watches as watch_count
from support import wait_until

pytestmark = pytest.mark.zookeeper


def server_watches(zookeeper: ManagedEnsemble) -> int:
    (port,) = zookeeper.client_ports.values()
    return watch_count(port)


@pytest.fixture
def baseline(zookeeper: ManagedEnsemble, leader: Contender, standby_session: Session) -> int:
    """The server's watches before the standby follows any job (the leader's election's)."""
    return server_watches(zookeeper)


@pytest.fixture
def standby(standby_session: Session, blobs: BlobStore, baseline: int) -> Iterator[JobEventSource]:
    source = JobEventSource(standby_session, blobs, Journal(capacity=1000)).start()
    try:
        yield source
    finally:
        source.stop()


def _cleanup(leader: Contender, job_id: str) -> None:
    """What the leader's cleanup does to a finished job's znodes."""
    JobStatusStore(leader.session).remove(leader.fence, job_id)
    leader.session.client.delete(leader.session.layout.job(job_id), recursive=True)


def _events(journal: Journal, cursor: str) -> list[tuple[str, JobState]]:
    replay = journal.read(cursor)
    assert replay is not None, "the journal's continuity broke"
    return [(entry.event.job_id, entry.event.state) for entry in replay.entries]


def _saw(journal: Journal, cursor: str, *wanted: tuple[str, JobState]) -> None:
    wait_until(
        lambda: set(wanted) <= set(_events(journal, cursor)), 20, f"events {wanted} in the journal"
    )


def _saw_after_new_session(journal: Journal, *wanted: tuple[str, JobState]) -> None:
    """:func:`_saw` across the break of the journal's continuity (a lost session): what the
    journal holds now."""

    def held() -> set[tuple[str, JobState]]:
        with journal._lock:
            return {(event.job_id, event.state) for _, event, _ in journal._entries}

    wait_until(lambda: set(wanted) <= held(), 30, f"events {wanted} in the journal")


def _follow_fifty(standby: JobEventSource, leader: Contender) -> tuple[Journal, str, list[str]]:
    """50 jobs written and followed by the standby: its journal, a cursor before them, the ids."""
    journal, begin = standby.journal, standby.journal.head
    jobs = [f"job-{n}" for n in range(50)]
    write_statuses(leader, jobs, JobState.SCHEDULED)
    wait_until(lambda: len(_events(journal, begin)) >= 50, 20, "every job followed")
    return journal, begin, jobs


def _change_three(
    leader: Contender, blobs: BlobStore, jobs: list[str]
) -> list[tuple[str, JobState]]:
    """A status changed, a result created, a job created; the events they make."""
    write_status(leader, jobs[0], JobState.RUNNING)
    write_failed_result(leader, blobs, jobs[1])
    write_status(leader, "job-new", JobState.SCHEDULED)
    return [
        (jobs[0], JobState.RUNNING),
        (jobs[1], JobState.FAILED),
        ("job-new", JobState.SCHEDULED),
    ]


def test_a_standbys_server_watches_stay_the_same_from_10_to_200_jobs(
    zookeeper: ManagedEnsemble, leader: Contender, standby: JobEventSource, baseline: int
) -> None:
    journal, begin = standby.journal, standby.journal.head
    jobs = [f"job-{n:03d}" for n in range(200)]
    write_statuses(leader, jobs[:10], JobState.RUNNING)
    wait_until(lambda: len(_events(journal, begin)) >= 10, 20, "10 jobs followed")
    at_10 = server_watches(zookeeper)
    write_statuses(leader, jobs[10:], JobState.RUNNING)
    wait_until(lambda: len(_events(journal, begin)) >= 200, 30, "200 jobs followed")
    assert standby.watched == 200
    at_200 = server_watches(zookeeper)
    assert (at_10 - baseline, at_200 - baseline) == (2, 2)  # jobs/ and results/


def test_a_standby_learns_of_created_jobs_from_the_events_without_listing_them(
    leader: Contender,
    standby_session: Session,
    standby: JobEventSource,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A listing of ``jobs/`` per created job made a standby's work grow with the square of a
    burst (a 10,000-child listing for each new job): only a re-arm lists."""
    client, jobs_path = standby_session.client, standby_session.layout.jobs
    listings: list[str] = []
    get_children = client.get_children

    def counted(path: str, *args: object, **kwargs: object) -> object:
        if path.rstrip("/") == jobs_path.rstrip("/"):
            listings.append(path)
        return get_children(path, *args, **kwargs)

    write_status(leader, "job-00", JobState.SCHEDULED)
    wait_until(lambda: standby.watched == 1, 20, "the first job followed: the listing done")
    monkeypatch.setattr(client, "get_children", counted)
    for n in range(1, 20):
        write_status(leader, f"job-{n:02d}", JobState.SCHEDULED)
        wait_until(lambda n=n: standby.watched == n + 1, 20, f"job {n} followed")
    _cleanup(leader, "job-00")
    wait_until(lambda: standby.watched == 19, 20, "the deleted job no longer followed")
    assert listings == []


def test_a_standby_sees_creation_change_result_and_deletion_through_two_server_watches(
    zookeeper: ManagedEnsemble,
    leader: Contender,
    standby: JobEventSource,
    blobs: BlobStore,
    baseline: int,
) -> None:
    journal, begin = standby.journal, standby.journal.head
    write_status(leader, "job-1", JobState.SCHEDULED)
    _saw(journal, begin, ("job-1", JobState.SCHEDULED))
    write_status(leader, "job-1", JobState.RUNNING)
    _saw(journal, begin, ("job-1", JobState.RUNNING))
    assert server_watches(zookeeper) - baseline == 2
    write_failed_result(leader, blobs, "job-1")
    _saw(journal, begin, ("job-1", JobState.FAILED))
    _cleanup(leader, "job-1")
    wait_until(lambda: standby.watched == 0, 20, "the deleted job no longer followed")
    wait_until(lambda: standby._watches.count == 0, 20, "its callbacks dropped")
    assert _events(journal, begin) == [
        ("job-1", JobState.SCHEDULED),
        ("job-1", JobState.RUNNING),
        ("job-1", JobState.FAILED),
    ]
    assert server_watches(zookeeper) - baseline == 2


def test_after_a_dropped_connection_a_standby_sees_what_changed_meanwhile_and_after(
    zookeeper: ManagedEnsemble,
    leader: Contender,
    standby: JobEventSource,
    blobs: BlobStore,
    baseline: int,
) -> None:
    session = standby._session
    journal, begin, jobs = _follow_fifty(standby, leader)
    session_id = session.session_id
    # Kept off the server while the leader writes: nothing can be watched meanwhile.
    session.client.set_hosts("127.0.0.1:1")
    assert session.drop_connection("test")
    wait_until(lambda: not session.connected, 10, "disconnected")
    meanwhile = _change_three(leader, blobs, jobs)
    session.client.set_hosts(session.quorum)
    wait_until(lambda: session.connected, 20, "reconnected")
    assert session.session_id == session_id, "the same session"
    _saw(journal, begin, *meanwhile)
    write_status(leader, jobs[2], JobState.RUNNING)  # seen only if the watch was added again
    _saw(journal, begin, (jobs[2], JobState.RUNNING))
    assert server_watches(zookeeper) - baseline == 2


def test_on_a_new_session_a_standby_sees_what_changed_meanwhile_and_after(
    zookeeper: ManagedEnsemble,
    leader: Contender,
    standby: JobEventSource,
    blobs: BlobStore,
    baseline: int,
) -> None:
    session = standby._session
    journal, begin, jobs = _follow_fifty(standby, leader)
    old = session.session_id
    expire_session(session)
    wait_until(lambda: journal.read(begin) is None, 30, "the journal's continuity broken")
    meanwhile = _change_three(leader, blobs, jobs)
    wait_until(lambda: session.connected and session.session_id != old, 30, "a new session")
    _saw_after_new_session(journal, *meanwhile)
    write_status(leader, jobs[2], JobState.RUNNING)  # seen only if the watch was added again
    _saw_after_new_session(journal, (jobs[2], JobState.RUNNING))
    assert server_watches(zookeeper) - baseline == 2


def test_a_standby_that_leads_holds_no_watch(
    zookeeper: ManagedEnsemble, leader: Contender, standby: JobEventSource, baseline: int
) -> None:
    journal, begin = standby.journal, standby.journal.head
    write_statuses(leader, [f"job-{n}" for n in range(20)], JobState.RUNNING)
    wait_until(lambda: len(_events(journal, begin)) >= 20, 20, "every job followed")
    standby.lead()
    wait_until(lambda: server_watches(zookeeper) == baseline, 10, "the watches removed")
    standby.follow()
    wait_until(lambda: server_watches(zookeeper) == baseline + 2, 10, "two watches again")
    write_status(leader, "job-0", JobState.CANCELLING)
    _saw(journal, begin, ("job-0", JobState.CANCELLING))


def test_a_node_that_refuses_reads_does_not_hide_the_others_of_its_batch(
    leader: Contender, standby_session: Session
) -> None:
    # A batch is one multiRead; a node the server refuses to read (its ACL) fails that
    # answer whole, and the batch's other nodes are then read one by one, not dropped.
    write_statuses(leader, ["refusing", "readable"], JobState.SCHEDULED)
    layout, client = standby_session.layout, leader.session.client
    refusing = layout.job_status("refusing")
    client.set_acls(refusing, [make_acl("ip", "127.0.0.1", write=True, admin=True)])  # no read
    watches = JobWatches(standby_session)
    seen: dict[str, JobStatusRecord | None] = {}
    batch = []
    for job_id in ("refusing", "readable"):
        watch = _Watch("status", job_id, layout.job_status(job_id), _recorder(seen, job_id))
        watches._watches[("status", job_id)] = watch  # held, as status() holds it
        batch.append((watch, False))
    try:
        watches._read(batch)
    finally:
        client.set_acls(refusing, OPEN_ACL_UNSAFE)

    assert set(seen) == {"readable"}
    record = seen["readable"]
    assert record is not None and record.state is JobState.SCHEDULED


def _recorder(
    seen: dict[str, JobStatusRecord | None], job_id: str
) -> Callable[[JobStatusRecord | None, bool], bool]:
    def record(status: JobStatusRecord | None, _deleted: bool) -> bool:
        seen[job_id] = status
        return True

    return record
