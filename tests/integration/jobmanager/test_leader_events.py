"""Where each JobManager's job events come from (steward.jobmanager.events.source): the leader's
from its own writes, with no watch per job; a standby's from watches on those records; and the
switch between the two when leadership moves (a catch-up read at the grant, the watches set
again when a term ends).

In-process JobManagers on a real ZooKeeper (jobmanager_harness).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from jobmanager_harness import SETTLE, START_TIMEOUT, JobManagerCluster, leader_id

from steward.jobmanager.events.journal import Journal
from steward.jobmanager.manager import JobManager
from steward.wire.states import JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper


def states(journal: Journal, since: str) -> dict[str, list[JobState]]:
    """Each job's states in the journal after cursor ``since``, in order."""
    replay = journal.read(since)
    assert replay is not None, "the journal lost its continuity"
    found: dict[str, list[JobState]] = {}
    for entry in replay.entries:
        found.setdefault(entry.event.job_id, []).append(entry.event.state)
    return found


def wait_state(journal: Journal, since: str, job_id: str, state: JobState) -> None:
    wait_until(
        lambda: state in states(journal, since).get(job_id, []),
        SETTLE,
        message=f"{job_id} {state} in the journal",
    )


def count_reads(manager: JobManager, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path ``manager``'s ZooKeeper client reads from now on (get, exists, children)."""
    client, paths = manager.session.client, []

    def counted(method: Callable[..., Any]) -> Callable[..., Any]:
        def read(path: str, *args: Any, **kwargs: Any) -> Any:
            paths.append(path)
            return method(path, *args, **kwargs)

        return read

    for name in ("get", "get_async", "exists", "exists_async", "get_children"):
        monkeypatch.setattr(client, name, counted(getattr(client, name)))
    return paths


def test_the_leader_holds_no_watch_per_job_and_streams_its_own_writes(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    since = {m.id: m.events.journal.head for m in (leader, standby)}
    ids = ["job-a", "job-b", "job-c"]

    for job_id in ids:
        cluster.submitted(leader, job_id)

    wait_until(lambda: standby.events.watched == 3, SETTLE, message="the standby watches 3")
    for manager in (leader, standby):
        for job_id in ids:
            wait_state(manager.events.journal, since[manager.id], job_id, JobState.SCHEDULED)
    assert leader.events.watched == 0
    assert leader.events.leading


def test_a_submission_reads_neither_the_jobs_result_nor_its_record_back(
    cluster: JobManagerCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader = cluster.start_leader("jm-1")
    cluster.submitted(leader, "job-warm")  # the first submission's one-off reads
    since = leader.events.journal.head
    reads = count_reads(leader, monkeypatch)

    cluster.submitted(leader, "job-one")
    wait_state(leader.events.journal, since, "job-one", JobState.SCHEDULED)
    wait_until(
        lambda: leader.reader.index.get("job-one") is not None, SETTLE, message="job-one listed"
    )

    mine = [path for path in reads if path.rstrip("/").endswith(("job-one", "job-one/status"))]
    assert mine == [], "the result check is in the transaction; events come from the write"


def test_an_id_with_a_result_is_refused_by_the_submissions_own_transaction(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    cluster.submitted(leader, "job-done")
    assert cluster.post(leader, "/v1/jobs/job-done/cancel").status_code == 202
    cluster.wait_result_clean(leader, "job-done")

    again = cluster.submit(leader, "job-done")

    assert again.status_code == 409, again.text
    assert again.json()["code"] == "job_terminated"
    assert not cluster.exists(cluster.layout.jobgraph("job-done"))
    assert not cluster.exists(cluster.layout.job("job-done"))


def test_a_new_leader_catches_up_then_streams_its_own_writes(cluster: JobManagerCluster) -> None:
    first = cluster.start_leader("jm-1")
    second = cluster.start("jm-2")
    cluster.wait_knows_leader(second, first)
    for job_id in ("job-a", "job-b"):
        cluster.submitted(first, job_id)
    wait_until(lambda: second.events.watched == 2, SETTLE, message="the standby watches 2")
    since = second.events.journal.head

    first.stop()
    cluster.wait_leading(second)
    assert cluster.post(second, "/v1/jobs/job-a/cancel").status_code == 202

    wait_state(second.events.journal, since, "job-a", JobState.CANCELED)
    wait_until(
        lambda: getattr(second.reader.index.get("job-a"), "state", None) is JobState.CANCELED,
        SETTLE,
        message="job-a listed CANCELED",
    )
    assert second.events.watched == 0
    assert second.events.leading


def test_a_deposed_leader_follows_the_records_through_watches_again(
    cluster: JobManagerCluster,
) -> None:
    one = cluster.start_leader("jm-1")
    two = cluster.start("jm-2")
    cluster.wait_knows_leader(two, one)
    for job_id in ("job-a", "job-b"):
        cluster.submitted(one, job_id)

    # A write of another leader's term moves the epoch's version: jm-1's next write is fenced.
    epoch = cluster.layout.leader_epoch
    cluster.zk.set(epoch, cluster.zk.get(epoch)[0])
    cluster.submit(one, "job-c")  # fenced: jm-1 steps down and contends again

    def settled() -> JobManager | None:
        leaders = [m for m in (one, two) if m.is_leader and m.dispatcher and m.dispatcher.ready]
        if len(leaders) != 1 or not leader_id(one) == leader_id(two) == leaders[0].id:
            return None
        return leaders[0]

    new = wait_until(settled, START_TIMEOUT * 2, message="one JobManager leads again")
    other = two if new is one else one
    wait_until(lambda: other.events.watched == 2, SETTLE, message="the standby watches 2")
    assert new.events.watched == 0
    assert new.events.leading
    assert not other.events.leading
