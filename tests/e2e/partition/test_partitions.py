"""Network partitions between Steward's processes and ZooKeeper, with real namespaces.

Each test runs ZooKeeper, JobManagers and TaskManagers in namespaces of their own (see
network.py), cuts one member off, heals it, and checks the guarantees against the ground truth
the pipeline writes (truth.py), not only against what Steward reports.

- leader cut off past its session timeout: a standby takes over with a higher epoch and adopts
  the running attempt (rule 8); the healed old leader writes nothing (rule 2) and rejoins as
  a standby;
- TaskManager cut off from ZooKeeper past its session timeout: it kills its attempt before the
  replacement starts elsewhere (rule 4: no overlap in the ground truth), and after healing it
  re-registers without claiming the old attempt;
- a cut shorter than the session timeout: the leader keeps its leadership and its epoch, and
  no job restarts (rule 5).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from e2e.partition import truth
from e2e.partition.netns_cluster import ZK, NetnsCluster
from steward.client import Client
from steward.ha.layout import Layout
from steward.wire.record_format import decode_status
from steward.wire.rest import JobView
from steward.wire.states import AttemptState, JobState
from support import ZK_TEST_ROOT, wait_until

pytestmark = pytest.mark.zookeeper

SESSION = 4.0
"""The clusters' session timeout (the fixture's default), in seconds."""


def _job(cluster: NetnsCluster, job_id: str) -> JobView:
    return cluster.with_client(lambda client: client.job(job_id))


def _submit(cluster: NetnsCluster, tmp_path: Path, job_id: str, ticks: int) -> Path:
    ground = tmp_path / "truth.jsonl"
    pipeline = truth.write_pipeline(tmp_path)

    def submit(client: Client) -> None:
        client.submit(pipeline, args=[str(ground), str(ticks), "0.1"], job_id=job_id)

    cluster.with_client(submit)
    wait_until(lambda: truth.starts(ground, job_id), 30, message="attempt started")
    wait_until(lambda: _job(cluster, job_id).state is JobState.RUNNING, 30)
    return ground


class StatusWatch:
    """Every version of a job's status record, seen from the private network."""

    def __init__(self, cluster: NetnsCluster, job_id: str) -> None:
        self.epochs: list[int] = []
        self._job_id = job_id
        self._lock = threading.Lock()
        root = f"{ZK_TEST_ROOT}/{cluster.settings['high-availability.cluster-id']}"
        path = Layout(root).job_status(job_id)
        quorum = cluster.settings["high-availability.zookeeper.quorum"]
        options = cluster.zookeeper_access.kazoo_options()

        def start() -> KazooClient:
            client = KazooClient(hosts=quorum, timeout=10, **options)
            client.start(timeout=15)
            client.DataWatch(path, self._changed)
            return client

        self._client = cluster.call(start)

    def _changed(self, data: bytes | None, _stat: Any) -> None:
        if data:
            with self._lock:
                self.epochs.append(decode_status(data, self._job_id).epoch)

    def seen(self) -> list[int]:
        with self._lock:
            return list(self.epochs)

    def close(self) -> None:
        self._client.stop()
        self._client.close()


@pytest.mark.slow  # ~35 s: two session timeouts and a 15 s job
def test_leader_cut_off_is_replaced_adopts_and_old_leader_is_fenced(
    partitioned: NetnsCluster, tmp_path: Path
) -> None:
    cluster = partitioned
    old = cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    cluster.start_jobmanager("jm-2")
    cluster.start_taskmanager("tm-1")
    cluster.start_taskmanager("tm-2")
    assert cluster.wait_ready(taskmanagers=2).id == "jm-1"
    ground = _submit(cluster, tmp_path, "adopt-me", ticks=150)
    before = cluster.with_client(lambda c: c.leader())
    assert before is not None and before.id == "jm-1"

    # When: the leader is unplugged (from ZooKeeper and from everyone) past its session.
    cluster.network.cut("jm-1")
    try:

        def taken_over() -> Any:
            leader = cluster.with_client(lambda c: c.leader(), timeout=5)
            return leader if leader is not None and leader.id == "jm-2" else None

        after = wait_until(taken_over, 5 * SESSION, interval=0.2, message="jm-2 takes over")
        assert after.epoch > before.epoch
        adopted = wait_until(
            lambda: (v := _job(cluster, "adopt-me")).attempts and v.attempts[-1].adopted_by and v,
            5 * SESSION,
            message="the new leader adopts the running attempt",
        )
        watch = StatusWatch(cluster, "adopt-me")
    finally:
        cluster.network.heal("jm-1")
    try:
        # Then: the healed old leader steps down and rejoins as a standby ...
        wait_until(lambda: cluster.role(old) == "standby", 5 * SESSION, message="jm-1 standby")
        view = cluster.with_client(lambda c: c.cluster())
        assert view.leader is not None and (view.leader.id, view.leader.epoch) == (
            "jm-2",
            after.epoch,
        )
        assert {jm.id for jm in view.jobmanagers} == {"jm-1", "jm-2"}
        # ... the job runs to the end as the one adopted attempt ...
        result = cluster.with_client(lambda c: c.wait("adopt-me", timeout=60), timeout=60)
        assert result.state.value == "FINISHED", result
        # ... and nothing the old leader wrote after the takeover got through its fence.
        assert watch.seen() and set(watch.seen()) == {after.epoch}, watch.seen()
    finally:
        watch.close()
    starts = truth.starts(ground, "adopt-me")
    assert len(starts) == 1, f"the job ran more than once: {starts}"
    assert result.value == {"pid": starts[0].pid, "attempt": 1}
    assert adopted.state is JobState.RUNNING and adopted.attempt_count == 1
    assert adopted.attempts[-1].adopted_by == [after.epoch]
    cluster.check_alive()


@pytest.mark.parametrize(
    "reaches_leader",
    [False, pytest.param(True, marks=pytest.mark.slow)],
    ids=["unplugged", "zk-only"],
)
def test_taskmanager_cut_off_fences_itself_before_the_replacement_starts(
    partitioned: NetnsCluster, tmp_path: Path, reaches_leader: bool
) -> None:
    cluster = partitioned
    cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    cluster.start_taskmanager("tm-1")
    cluster.wait_ready(taskmanagers=1)
    ground = _submit(cluster, tmp_path, "fence-me", ticks=400)
    assert _job(cluster, "fence-me").attempts[-1].taskmanager == "tm-1"
    cluster.start_taskmanager("tm-2")
    cluster.wait_ready(taskmanagers=2)

    # When: tm-1 loses ZooKeeper (and, unplugged, the leader too) past its session timeout.
    if reaches_leader:
        cluster.network.block("tm-1", ZK)
    else:
        cluster.network.cut("tm-1")
    try:
        wait_until(
            lambda: len(truth.starts(ground, "fence-me")) >= 2,
            5 * SESSION,
            message="the replacement starts",
        )
    finally:
        if reaches_leader:
            cluster.network.unblock("tm-1", ZK)
        else:
            cluster.network.heal("tm-1")
    first, second = truth.starts(ground, "fence-me")[:2]
    # Then: the old attempt was dead (its last tick) before the replacement started.
    assert first.attempt == 1 and second.attempt == 2
    assert truth.last_seen(ground, "fence-me", 1) < second.t, "two attempts ran at once"
    view = _job(cluster, "fence-me")
    assert view.attempts[-1].number == 2 and view.attempts[-1].taskmanager == "tm-2"

    # And after healing tm-1 re-registers, without claiming attempt 1 as live.
    def tm1_back() -> bool:
        return any(
            tm.id == "tm-1" for tm in cluster.with_client(lambda c: c.cluster()).taskmanagers
        )

    wait_until(tm1_back, 5 * SESSION, interval=0.2, message="tm-1 re-registers")
    view = _job(cluster, "fence-me")
    assert view.state is JobState.RUNNING
    assert view.attempts[-1].number == 2 and view.attempts[-1].taskmanager == "tm-2"
    old = [a for a in view.attempts if a.number == 1]
    assert all(a.state is not AttemptState.RUNNING for a in old), old
    tms = {tm.id: tm for tm in cluster.with_client(lambda c: c.cluster()).taskmanagers}
    assert "fence-me" not in tms["tm-1"].attempts
    assert truth.last_seen(ground, "fence-me", 1) < second.t
    cluster.with_client(lambda c: c.cancel("fence-me"))
    cluster.check_alive()


def test_short_cut_keeps_leadership_epoch_and_jobs(
    partitioned: NetnsCluster, tmp_path: Path
) -> None:
    cluster = partitioned
    session = 10.0
    cluster.settings["high-availability.zookeeper.session-timeout"] = f"{session:g}s"
    leader = cluster.start_jobmanager("jm-1")
    cluster.wait_ready(taskmanagers=0)
    cluster.start_jobmanager("jm-2")
    cluster.start_taskmanager("tm-1")
    assert cluster.wait_ready(taskmanagers=1).id == "jm-1"
    ground = _submit(cluster, tmp_path, "keep-me", ticks=400)
    before = cluster.with_client(lambda c: c.leader())
    assert before is not None

    # When: the leader loses ZooKeeper until its connection is SUSPENDED (kazoo notices
    # within 2/3 of the session timeout), then gets it back well before the session expires.
    cluster.network.block("jm-1", ZK)
    try:
        wait_until(
            lambda: "state=SUSPENDED" in leader.log_text(),
            session,
            interval=0.05,
            message="the leader's connection is suspended",
        )
    finally:
        cluster.network.unblock("jm-1", ZK)
    wait_until(
        lambda: "state=RECONNECTED" in leader.log_text(),
        session,
        interval=0.05,
        message="the leader reconnects",
    )

    # Then: same leader, same epoch, the job untouched.
    after = cluster.with_client(lambda c: c.leader())
    assert after is not None and (after.id, after.epoch) == (before.id, before.epoch)
    assert cluster.role(leader) == "leader"
    view = _job(cluster, "keep-me")
    assert view.state is JobState.RUNNING and view.attempt_count == 1
    assert len(truth.starts(ground, "keep-me")) == 1
    assert "leadership revoked" not in leader.log_text()
    cluster.with_client(lambda c: c.cancel("keep-me"))
    cluster.check_alive()
