"""A zombie TaskManager: frozen (SIGSTOP) past its session timeout while its attempt runs.

A frozen TaskManager can neither kill its attempt nor tell anyone it is alive; its lease
(``executions/<job>``) goes with its session and the leader starts a replacement elsewhere.
rule 4 keeps the two attempts apart in time: the runner's dead-man's switch (a pipe
the TaskManager writes to) kills the runner once the TaskManager goes quiet, before the
session (and lease) can expire, and the leader waits a grace period after the lease is gone.
The runner is in its own process group, so SIGSTOP of the TaskManager does not stop it: it
really has to kill itself. When the TaskManager is resumed it must not start the old attempt
again nor report it as running; it registers again and stays up.
"""

from __future__ import annotations

import signal

import pytest

from e2e.incidents import kit
from e2e.incidents.truth import GroundTruth, pid_gone
from e2e.incidents.zkview import ZkView
from steward.testing.processes import ProcessCluster
from steward.testing.waiting import WaitTimeoutError
from steward.wire.states import AttemptState, JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper

JOB = "outlives-its-taskmanager"
DEADLINE = 60.0


def test_frozen_taskmanager_attempt_dies_before_its_replacement_starts(
    process_cluster: ProcessCluster, zk_view: ZkView, truth: GroundTruth
) -> None:
    # Given: a leader, two TaskManagers, a job running on one of them.
    kit.start(process_cluster, jobmanagers=1, taskmanagers=2)
    with process_cluster.client(timeout=60) as client:
        kit.submit(client, truth, JOB)
        kit.wait_running(client, truth, [JOB], DEADLINE)
        lease = zk_view.lease(JOB)
        assert lease is not None
        frozen = next(p for p in process_cluster.procs if p.id == lease["taskmanager"])
        first = truth.assert_started_once(JOB)
        assert first.pid != frozen.pid

        # When: its TaskManager is frozen past the session timeout.
        frozen.signal(signal.SIGSTOP)

        # Then: the attempt kills itself (its TaskManager went quiet) and a replacement runs
        # on the other TaskManager, strictly after the first one is gone.
        wait_until(lambda: len(truth.starts(JOB)) >= 2, DEADLINE, message="replacement")
        wait_until(lambda: truth.death_of(first.pid) is not None, 5, message="death seen")
        runs = truth.assert_no_overlap(JOB)
        assert runs[1].pid != first.pid
        kit.wait_state(process_cluster, client, JOB, JobState.RUNNING, DEADLINE)
        replacement = client.job(JOB).attempts[-1]
        assert replacement.taskmanager != frozen.id and replacement.number == 2

        # When: the TaskManager wakes up.
        frozen.signal(signal.SIGCONT)
        frozen.signalled = False  # it must stay alive from now on

        # Then: it registers again, and it neither restarts nor reports the old attempt.
        def back() -> bool:
            process_cluster.check_alive()
            return any(tm.id == frozen.id for tm in client.cluster().taskmanagers)

        wait_until(back, DEADLINE, interval=0.1, message="TaskManager re-registered")

        # Its first heartbeats may still carry the old attempt's ENDED report (re-sent until
        # acknowledged); once acknowledged it is forgotten, never listed as running again.
        def forgotten() -> bool:
            woken = next(tm for tm in client.cluster().taskmanagers if tm.id == frozen.id)
            return JOB not in woken.attempts

        try:
            wait_until(forgotten, DEADLINE, interval=0.1, message="old attempt's report forgotten")
        except WaitTimeoutError as exc:  # the evidence a flake needs (seen once under load)
            leader = process_cluster.leader()
            raise AssertionError(
                f"{exc}\n--- woken {frozen.id}:\n{frozen.log_tail()}\n--- leader:\n"
                f"{leader.log_tail() if leader else '(none)'}"
            ) from exc
        view = client.job(JOB)
        assert view.state is JobState.RUNNING, view
        assert [a.number for a in view.attempts if a.state is AttemptState.RUNNING] == [2], view
        assert (zk_view.lease(JOB) or {}).get("attempt") == 2
        assert pid_gone(first.pid)
    assert len(truth.starts(JOB)) == 2, truth.runs(JOB)
    process_cluster.check_alive()
