"""Fenced writes against a real ZooKeeper (rule 2): a deposed leader's transaction is
rejected whole and changes nothing, and seed 002's interleaving cannot corrupt the stores."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from ha_harness import SESSION_TIMEOUT, expire_session

from steward.errors import (
    ConcurrentModificationError,
    CoordinationError,
    FencedError,
    LeadershipLostError,
    NodeExistsError,
    NoNodeError,
    ZooKeeperUnavailableError,
)
from steward.ha.election import LeaderElection, Leadership
from steward.ha.fencing import Fence, FencedTransaction
from steward.ha.session import Session
from steward.wire.jobs import JobGraphPointer
from support import wait_until

pytestmark = pytest.mark.zookeeper
JOB = "job-i"


@dataclass
class JobManager:
    """A contender that remembers every term it was granted, as a JobMaster would."""

    name: str
    session: Session
    election: LeaderElection | None = None
    terms: list[Leadership] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def granted(self, leadership: Leadership) -> None:
        with self.lock:
            self.terms.append(leadership)

    def term(self, index: int = -1) -> Leadership | None:
        with self.lock:
            return self.terms[index] if self.terms else None


@pytest.fixture
def root(cluster_id: str) -> str:
    return f"/steward-tests/{cluster_id}"


@pytest.fixture
def cluster(zk_quorum: str, root: str) -> Iterator[dict[str, JobManager]]:
    """JM1 leading and JM2 standing by, each on its own session; both closed afterwards."""
    managers: dict[str, JobManager] = {}
    for name in ("jm-1", "jm-2"):
        session = Session(zk_quorum, root, session_timeout=SESSION_TIMEOUT, name=name).start()
        manager = JobManager(name, session)
        manager.election = LeaderElection(
            session, name, f"http://{name}:8081", on_granted=manager.granted
        ).start()
        managers[name] = manager
        if name == "jm-1":
            wait_until(manager.term, 10, message="jm-1 granted")
    try:
        yield managers
    finally:
        for manager in managers.values():
            assert manager.election is not None
            manager.election.stop()
            manager.session.close()


@pytest.fixture
def observer(zk_quorum: str, root: str) -> Iterator[Session]:
    session = Session(zk_quorum, root, session_timeout=SESSION_TIMEOUT, name="observer").start()
    yield session
    session.close()


def depose(cluster: dict[str, JobManager]) -> tuple[Leadership, Leadership]:
    """Expire JM1's session; return JM1's old term and JM2's new one, once JM1 is back on a
    new session (so its fence's client is connected and only the epoch can stop it)."""
    jm1, jm2 = cluster["jm-1"], cluster["jm-2"]
    old = jm1.term()
    assert old is not None
    old_session = jm1.session.session_id
    expire_session(jm1.session)
    new = wait_until(jm2.term, 10, message="jm-2 granted")
    wait_until(
        lambda: jm1.session.session_id not in (None, old_session) and jm1.session.connected,
        10,
        message="jm-1 on a new session",
    )
    assert new.epoch > old.epoch
    return old, new


def snapshot(session: Session, *paths: str) -> dict[str, Any]:
    """Data and full stat of each path (None if absent): any write shows up as a difference."""
    result: dict[str, Any] = {}
    for path in paths:
        stat = session.client.exists(path)
        result[path] = None if stat is None else session.client.get(path)
    return result


def pointer(epoch: int, blob: str = "file:///blobs/job-i") -> bytes:
    return JobGraphPointer(blob=blob, sha256="0" * 64, epoch=epoch).to_json()


# ---------------------------------------------------------------- the deposed leader


def test_deposed_leader_fence_rejects_every_write_and_changes_nothing(
    cluster: dict[str, JobManager], observer: Session
) -> None:
    # Given JM1 wrote a job graph pointer and a counter during its term
    layout = observer.layout
    graph, counter = layout.jobgraph(JOB), layout.checkpoint_counter(JOB)
    old_term = cluster["jm-1"].term()
    assert old_term is not None
    (
        old_term.fence.transaction()
        .create(graph, pointer(old_term.epoch))
        .create(layout.job(JOB), b"")
        .create(counter, b"1")
        .commit()
    )
    # When JM1 is deposed (its session expired) and JM2 is granted a newer epoch
    old, new = depose(cluster)
    assert cluster["jm-1"].session.connected
    watched = (graph, counter, layout.leader_epoch, layout.leader_info, layout.jobgraph("job-new"))
    before = snapshot(observer, *watched)
    # Then every kind of write through JM1's old fence is rejected as fenced
    attempts: dict[str, Callable[[FencedTransaction], FencedTransaction]] = {
        "create": lambda t: t.create(layout.jobgraph("job-new"), pointer(old.epoch)),
        "set": lambda t: t.set_data(graph, pointer(old.epoch, "file:///stale")),
        "delete": lambda t: t.delete(graph),
        "counter": lambda t: t.set_data(counter, b"2", 0),
        "multi": lambda t: t.set_data(counter, b"2").delete(graph).create(f"{graph}-x", b""),
        "check only": lambda t: t.check(graph, 0),
        "nothing": lambda t: t,
    }
    for what, build in attempts.items():
        with pytest.raises(FencedError) as caught:
            build(old.fence.transaction()).commit()
        assert caught.value.epoch == old.epoch, what
        assert isinstance(caught.value, LeadershipLostError)
        assert str(old.epoch) in str(caught.value)
    # And nothing changed: same data, same versions, same zxids
    assert snapshot(observer, *watched) == before
    assert not old.fence.is_current()
    assert new.fence.is_current()


def test_an_old_term_stays_fenced_when_the_same_process_leads_again(
    cluster: dict[str, JobManager], observer: Session
) -> None:
    # Given JM1 was deposed, then JM2 stepped down so JM1 leads again in a later term
    jm1, jm2 = cluster["jm-1"], cluster["jm-2"]
    old, new = depose(cluster)
    assert jm2.election is not None
    jm2.election.stop()
    latest = wait_until(lambda: (term := jm1.term()) is not old and term, 10, message="re-grant")
    assert latest.epoch > new.epoch > old.epoch
    # When JM1 writes through its first term's fence and through its current one
    path = observer.layout.jobgraph(JOB)
    with pytest.raises(FencedError):
        old.fence.transaction().create(path, pointer(old.epoch)).commit()
    latest.fence.transaction().create(path, pointer(latest.epoch)).commit()
    # Then only the current term's write landed
    data, _stat = observer.client.get(path)
    assert JobGraphPointer.from_json(data).epoch == latest.epoch


def test_leader_whose_session_is_closed_cannot_write(
    cluster: dict[str, JobManager], observer: Session
) -> None:
    # Given JM1 leads, then its process closes its ZooKeeper session
    jm1 = cluster["jm-1"]
    term = jm1.term()
    assert term is not None
    jm1.session.close()
    # When a stale JobMaster of JM1 writes through the term's fence
    path = observer.layout.jobgraph(JOB)
    with pytest.raises(ZooKeeperUnavailableError):
        term.fence.transaction().create(path, pointer(term.epoch)).commit()
    # Then nothing was written
    assert observer.client.exists(path) is None


# ---------------------------------------------------------------- the current leader


def test_current_leader_writes_through_its_fence(
    cluster: dict[str, JobManager], observer: Session
) -> None:
    # Given JM1 leads
    term = cluster["jm-1"].term()
    assert term is not None
    layout = observer.layout
    graph = layout.jobgraph(JOB)
    # When it creates, updates and deletes znodes through its fence
    created = term.fence.transaction().create(graph, pointer(term.epoch)).commit()
    updated = (
        term.fence.transaction().set_data(graph, pointer(term.epoch, "file:///v2"), 0).commit()
    )
    # Then each write landed, and the results exclude the epoch check
    assert created == [graph]
    assert len(updated) == 1
    assert updated[0].version == 1
    data, stat = observer.client.get(graph)
    assert JobGraphPointer.from_json(data).blob == "file:///v2"
    term.fence.transaction().delete(graph, stat.version).commit()
    assert observer.client.exists(graph) is None
    # And the epoch itself did not move
    assert term.fence.is_current()


def test_a_connection_broken_by_a_protocol_error_is_an_unknown_outcome_not_a_crash(
    cluster: dict[str, JobManager], observer: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kazoo's connection thread, on a protocol error ("xids do not match",
    # python-zk/kazoo#254), hands the pending requests a bare RuntimeError. It cannot be
    # provoked on demand from a real server, so the pending commit is given one here.
    term = cluster["jm-1"].term()
    assert term is not None
    client = term.fence.client
    real_transaction = client.transaction

    def breaking_transaction() -> Any:
        transaction = real_transaction()

        def commit_async() -> Any:
            broken = client.handler.async_result()
            broken.set_exception(RuntimeError("xids do not match, expected 7 received 8"))
            return broken

        transaction.commit_async = commit_async  # type: ignore[method-assign]
        return transaction

    monkeypatch.setattr(client, "transaction", breaking_transaction)
    graph = observer.layout.jobgraph(JOB)
    # When a fenced write meets it
    with pytest.raises(ZooKeeperUnavailableError, match="connection broke"):
        term.fence.transaction().create(graph, pointer(term.epoch)).commit()
    # Then it is the error of a lost connection (the caller retries with the same body), not
    # a RuntimeError that would reach a submission as a 500
    assert observer.client.exists(graph) is None


def test_ephemeral_and_sequential_creates_go_through_the_fence(
    cluster: dict[str, JobManager], observer: Session
) -> None:
    term = cluster["jm-1"].term()
    assert term is not None
    base = f"{observer.layout.jobs}/seq-"
    (path,) = term.fence.transaction().create(base, b"x", sequence=True).commit()
    assert path.startswith(base)
    assert path[len(base) :].isdigit()
    (ephemeral,) = (
        term.fence.transaction().create(f"{observer.layout.jobs}/e", b"", ephemeral=True).commit()
    )
    _data, stat = observer.client.get(ephemeral)
    assert stat.ephemeralOwner == cluster["jm-1"].session.session_id


@pytest.mark.parametrize(
    ("failing_op", "error", "failing_path"),
    [
        ("set missing", NoNodeError, "missing"),
        ("delete missing", NoNodeError, "missing"),
        ("create existing", NodeExistsError, "existing"),
        ("set stale version", ConcurrentModificationError, "existing"),
        ("delete stale version", ConcurrentModificationError, "existing"),
        ("check stale version", ConcurrentModificationError, "existing"),
        ("create under missing parent", NoNodeError, "missing/child"),
    ],
)
def test_multi_op_with_a_failing_op_applies_nothing(
    cluster: dict[str, JobManager],
    observer: Session,
    failing_op: str,
    error: type[CoordinationError],
    failing_path: str,
) -> None:
    # Given the current leader and one existing znode
    term = cluster["jm-1"].term()
    assert term is not None
    jobs = observer.layout.jobs
    existing, fresh = f"{jobs}/existing", f"{jobs}/fresh"
    term.fence.transaction().create(existing, b"v0").commit()
    before = snapshot(observer, existing, fresh, observer.layout.leader_epoch)
    ops = {
        "set missing": lambda t: t.set_data(f"{jobs}/missing", b"x"),
        "delete missing": lambda t: t.delete(f"{jobs}/missing"),
        "create existing": lambda t: t.create(existing, b"x"),
        "set stale version": lambda t: t.set_data(existing, b"x", 7),
        "delete stale version": lambda t: t.delete(existing, 7),
        "check stale version": lambda t: t.check(existing, 7),
        "create under missing parent": lambda t: t.create(f"{jobs}/missing/child", b"x"),
    }
    # When it commits a multi-op whose last op fails, after a create and a set that would work
    txn = term.fence.transaction().create(fresh, b"new").set_data(existing, b"v1")
    with pytest.raises(error) as caught:
        ops[failing_op](txn).commit()
    # Then the error is the failing op's, naming its path, and nothing was applied
    assert not isinstance(caught.value, FencedError)
    assert f"{jobs}/{failing_path}" in str(caught.value)
    if isinstance(caught.value, NoNodeError | NodeExistsError):
        assert caught.value.path == f"{jobs}/{failing_path}"
    assert snapshot(observer, existing, fresh, observer.layout.leader_epoch) == before


def test_stale_epoch_wins_over_a_failing_op(
    cluster: dict[str, JobManager], observer: Session
) -> None:
    # Given a deposed leader whose transaction would also fail on its own op
    old, _new = depose(cluster)
    # When it commits / Then the caller learns it is fenced, the reason that matters most
    with pytest.raises(FencedError):
        old.fence.transaction().delete(f"{observer.layout.jobs}/missing").commit()


def test_fence_with_an_epoch_from_the_future_is_rejected(
    cluster: dict[str, JobManager], observer: Session
) -> None:
    # Given a fence whose epoch is ahead of leader/epoch (a bug, or a stale reading of it)
    term = cluster["jm-1"].term()
    assert term is not None
    ahead = Fence(observer.client, observer.layout.leader_epoch, term.epoch + 1)
    # When writing through it / Then it is rejected: only the exact epoch writes
    with pytest.raises(FencedError):
        ahead.transaction().create(observer.layout.jobgraph(JOB), b"").commit()
    assert observer.client.exists(observer.layout.jobgraph(JOB)) is None


# ---------------------------------------------------------------- seed 002


def test_seed002_old_leader_cannot_remove_a_job_graph_the_new_leader_re_added(
    cluster: dict[str, JobManager], observer: Session
) -> None:
    # Given JM1 leads and job i runs: its pointer exists
    layout = observer.layout
    graph = layout.jobgraph(JOB)
    jm1_term = cluster["jm-1"].term()
    assert jm1_term is not None
    jm1_term.fence.transaction().create(graph, pointer(jm1_term.epoch)).commit()
    # When JM2 is granted before JM1 has acted on its revocation,
    old, new = depose(cluster)
    # JM2 re-adds job i (recovery rewrites the pointer under its own epoch),
    _data, stat = observer.client.get(graph)
    (
        new.fence.transaction()
        .delete(graph, stat.version)
        .create(graph, pointer(new.epoch, "file:///blobs/job-i-recovered"))
        .commit()
    )
    readded = snapshot(observer, graph)
    # and JM1, seeing job i finish, removes its pointer
    with pytest.raises(FencedError):
        old.fence.transaction().delete(graph).commit()
    # Then the removal is rejected and JM2's pointer remains: the invariant "a pointer exists
    # iff the job must be recovered" holds
    assert snapshot(observer, graph) == readded
    data, _stat = observer.client.get(graph)
    assert JobGraphPointer.from_json(data) == JobGraphPointer.from_json(
        pointer(new.epoch, "file:///blobs/job-i-recovered")
    )


def test_seed002_old_leader_cannot_set_the_checkpoint_counter(
    cluster: dict[str, JobManager], observer: Session
) -> None:
    # Given JM1 leads and the job's checkpoint counter is at 5
    layout = observer.layout
    counter = layout.checkpoint_counter(JOB)
    jm1_term = cluster["jm-1"].term()
    assert jm1_term is not None
    jm1_term.fence.transaction().create(layout.job(JOB), b"").create(counter, b"5").commit()
    value, stat = observer.client.get(counter)
    # When JM2 takes over and advances the counter with a compare-and-set
    old, new = depose(cluster)
    new.fence.transaction().set_data(counter, b"6", stat.version).commit()
    after_new = snapshot(observer, counter)
    # And JM1 then sets it from the version it read before (and also blindly)
    for version in (stat.version, -1):
        with pytest.raises(FencedError):
            old.fence.transaction().set_data(counter, b"6", version).commit()
    # Then JM1's sets are rejected as fenced and the counter is JM2's
    assert value == b"5"
    assert snapshot(observer, counter) == after_new
    assert observer.client.get(counter)[0] == b"6"
