"""``steward doctor``'s checks against a real ZooKeeper and real blob storage.

Each test builds the HA state a leader builds (through the real stores, fenced by a granted
leader), checks that the doctor finds nothing, then breaks one invariant on purpose and
checks that exactly the finding for it appears. ``Limits(grace=0)`` makes the checks that
wait for a live cluster to converge look at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from stores_support import Contender, make_graph

from steward.doctor import Limits, examine
from steward.ha.membership import MemberNode
from steward.ha.session import Session
from steward.store.blob import BlobStore
from steward.store.job_graphs import JobGraphStore
from steward.store.leases import ExecutionLeases
from steward.store.results import JobResultStore
from steward.store.statuses import JobStatusStore
from steward.wire.doctor import DoctorReport, Severity
from steward.wire.records import AttemptRecord, JobResultEntry, JobStatusRecord, TaskManagerInfo
from steward.wire.states import AttemptState, JobState, TerminalState

pytestmark = pytest.mark.zookeeper

NOW = Limits(grace=0.0, stuck_cleanup=60.0, orphan_age=0.0)


@pytest.fixture
def taskmanager(zk_quorum: str, zk_root: str) -> Iterator[Session]:
    """A TaskManager's session, registered as tm-1 (leases are ephemerals of this session)."""
    session = Session(zk_quorum, zk_root, session_timeout=4.0, name="tm-1").start()
    MemberNode(session, session.layout.taskmanager("tm-1")).create(
        TaskManagerInfo(address="http://tm-1:9091", slots=2).to_json()
    )
    yield session
    session.close()


def doctor(session: Session, blobs: BlobStore, limits: Limits = NOW) -> DoctorReport:
    return examine(session, blobs, "test", limits=limits)


def checks(report: DoctorReport) -> list[tuple[str, str]]:
    return sorted((f.check, f.subject) for f in report.findings)


def submit(leader: Contender, blobs: BlobStore, job_id: str, *, running: bool = False) -> None:
    """What a leader stores for a submitted job: its graph, then its status record."""
    JobGraphStore(leader.session, blobs).put(leader.fence, make_graph(job_id))
    now = time.time()
    attempts = (
        [
            AttemptRecord(
                number=1,
                taskmanager="tm-1",
                epoch=leader.fence.epoch,
                state=AttemptState.RUNNING,
                started_at=now,
            )
        ]
        if running
        else []
    )
    JobStatusStore(leader.session).write(
        leader.fence,
        JobStatusRecord(
            job_id=job_id,
            state=JobState.RUNNING if running else JobState.SCHEDULED,
            submitted_at=now,
            updated_at=now,
            attempts=attempts,
            attempt_count=len(attempts),
            epoch=leader.fence.epoch,
        ),
    )


def finish(
    leader: Contender, blobs: BlobStore, job_id: str, *, finished_at: float | None = None
) -> None:
    JobResultStore(leader.session, blobs).create_dirty(
        leader.fence,
        JobResultEntry(
            job_id=job_id,
            state=TerminalState.FINISHED,
            finished_at=time.time() if finished_at is None else finished_at,
            epoch=leader.fence.epoch,
        ),
    )


def test_a_healthy_state_has_no_finding_and_the_server_is_described(
    leader: Contender, session: Session, blobs: BlobStore, taskmanager: Session
) -> None:
    submit(leader, blobs, "job-a")
    submit(leader, blobs, "job-b", running=True)
    ExecutionLeases(taskmanager, tm_id="tm-1").acquire("job-b", 1, leader.fence.epoch)

    report = doctor(session, blobs)

    assert report.findings == []
    assert (report.epoch, report.jobs) == (leader.fence.epoch, 2)
    [server] = report.servers
    assert server.answered and server.version == "3.9.5"
    assert server.mode == "standalone" and server.tick_time_ms == 500


def test_a_job_graph_whose_blob_is_gone_or_corrupt_is_an_error(
    leader: Contender, session: Session, blobs: BlobStore, blob_root: object
) -> None:
    submit(leader, blobs, "job-gone")
    submit(leader, blobs, "job-bent")
    graphs = JobGraphStore(session, blobs)
    blobs.delete(graphs.pointer("job-gone").blob)
    bent = blobs.path(graphs.pointer("job-bent").blob)
    with blobs.filesystem.open(bent, "r+b") as out:
        out.seek(-3, 2)
        out.write(b"XXX")

    # The listing shows the deleted blob missing; reading each back shows the bent one too
    assert checks(doctor(session, blobs)) == [
        ("job-graph-unreadable", session.layout.jobgraph("job-gone"))
    ]
    report = examine(session, blobs, "test", limits=NOW, verify_blobs=True)

    assert checks(report) == [
        ("job-graph-unreadable", session.layout.jobgraph("job-bent")),
        ("job-graph-unreadable", session.layout.jobgraph("job-gone")),
    ]
    assert all(f.severity is Severity.ERROR for f in report.findings)


def test_a_job_with_state_but_neither_pointer_nor_result_is_lost(
    leader: Contender, session: Session, blobs: BlobStore
) -> None:
    submit(leader, blobs, "job-lost")
    JobGraphStore(session, blobs).remove(leader.fence, "job-lost")  # a lost pointer

    assert checks(doctor(session, blobs)) == [("job-lost", "job job-lost")]
    # Within the grace period it may be a submission or a cleanup under way: no finding.
    assert doctor(session, blobs, Limits(grace=60.0)).findings == []


def test_a_finished_job_whose_pointer_came_back_is_an_error(
    leader: Contender, session: Session, blobs: BlobStore
) -> None:
    submit(leader, blobs, "job-done")
    finish(leader, blobs, "job-done")
    JobStatusStore(session).remove(leader.fence, "job-done")
    assert doctor(session, blobs).findings == []  # DIRTY with its pointer: cleanup under way

    JobResultStore(session, blobs).mark_clean(leader.fence, "job-done")

    assert checks(doctor(session, blobs)) == [
        ("pointer-of-finished-job", session.layout.jobgraph("job-done"))
    ]


def test_a_result_dirty_for_longer_than_cleanup_takes_is_a_warning(
    leader: Contender, session: Session, blobs: BlobStore
) -> None:
    finish(leader, blobs, "job-stuck", finished_at=time.time() - 3600)
    finish(leader, blobs, "job-fresh")

    report = doctor(session, blobs)

    assert checks(report) == [("cleanup-stuck", session.layout.result("job-stuck"))]
    assert report.findings[0].severity is Severity.WARNING


def test_leases_must_belong_to_a_registered_taskmanager_and_a_live_job(
    leader: Contender, session: Session, blobs: BlobStore, taskmanager: Session, zk_quorum: str
) -> None:
    submit(leader, blobs, "job-rogue", running=True)
    submit(leader, blobs, "job-ended", running=True)
    rogue = Session(zk_quorum, session.layout.root, session_timeout=4.0, name="rogue").start()
    try:
        # A lease taken under tm-1's name by a session that is not tm-1's registration
        ExecutionLeases(rogue, tm_id="tm-1").acquire("job-rogue", 1, leader.fence.epoch)
        # And a lease of a job whose result is recorded
        ExecutionLeases(taskmanager, tm_id="tm-1").acquire("job-ended", 1, leader.fence.epoch)
        finish(leader, blobs, "job-ended")

        assert checks(doctor(session, blobs)) == [
            ("lease-of-ended-job", session.layout.execution("job-ended")),
            ("lease-without-taskmanager", session.layout.execution("job-rogue")),
        ]
    finally:
        rogue.close()


def test_a_running_attempt_without_its_lease_is_an_error(
    leader: Contender, session: Session, blobs: BlobStore
) -> None:
    submit(leader, blobs, "job-bare", running=True)

    assert checks(doctor(session, blobs)) == [
        ("attempt-without-lease", session.layout.job_status("job-bare"))
    ]

    # Unless it ended and left its outcome with its lease's release (no leader read it yet)
    session.client.create(session.layout.attempt_outcome("job-bare", 1), b"{}")
    assert [f.check for f in doctor(session, blobs).findings] == ["outcome-not-acknowledged"]


def test_a_blob_no_pointer_names_is_an_orphan_once_old(
    leader: Contender, session: Session, blobs: BlobStore
) -> None:
    submit(leader, blobs, "job-kept")
    orphan = blobs.put("jobgraphs/job-gone/1-orphan", b"{}").key

    assert checks(doctor(session, blobs)) == [("orphan-blob", orphan)]
    assert doctor(session, blobs, Limits(grace=0.0, orphan_age=3600.0)).findings == []


def test_epochs_leader_info_and_corrupt_records(
    leader: Contender, session: Session, blobs: BlobStore
) -> None:
    submit(leader, blobs, "job-future")
    submit(leader, blobs, "job-garbled")
    epoch = leader.fence.epoch
    statuses = JobStatusStore(session)
    record = statuses.find("job-future")
    assert record is not None
    statuses.write(leader.fence, record.model_copy(update={"epoch": epoch + 5}))
    session.client.set(session.layout.job_status("job-garbled"), b"not json")
    assert sorted(f.check for f in doctor(session, blobs).findings) == [
        "corrupt-status",
        "epoch-went-back",
    ]

    # The epoch moves on without the leader publishing itself under it
    for version in range(epoch + 1, epoch + 6):  # each set is one more version: an epoch
        session.client.set(session.layout.leader_epoch, str(version).encode())

    assert sorted(f.check for f in doctor(session, blobs).findings) == [
        "corrupt-status",
        "leader-info-stale",
    ]


def test_results_still_whole_in_zookeeper_an_unmarked_dirty_one_and_a_lost_body_are_findings(
    leader: Contender, session: Session, blobs: BlobStore
) -> None:
    old = JobResultEntry(
        job_id="job-old", state=TerminalState.FINISHED, finished_at=time.time(), epoch=1
    )
    session.client.create(session.layout.result("job-old"), old.to_json())  # before the move
    finish(leader, blobs, "job-unmarked")
    session.client.delete(session.layout.dirty_result("job-unmarked"))
    finish(leader, blobs, "job-lost")
    for body in blobs.list("results/job-lost"):
        blobs.delete(body.key)

    without_reads = checks(doctor(session, blobs, Limits(grace=60.0)))
    verified = checks(examine(session, blobs, "test", limits=Limits(grace=60.0), verify_blobs=True))

    assert sorted(without_reads) == [
        ("dirty-result-unmarked", session.layout.result("job-unmarked")),
        ("result-in-zookeeper", "1 result(s), e.g. job job-old"),
    ]
    assert ("result-body-unreadable", session.layout.result("job-lost")) in verified
