"""A submission through a standby whose leader stored the job and died before answering
(issue 23, item 4).

The leader is started with the test fault point ``submit.stored``: it stops itself (SIGSTOP)
right after the job's graph and pointer are stored, before its answer leaves; the test then
SIGKILLs it. The standby's forward was sent and never answered, so the outcome is unknown;
the client waits out its backoff until the standby leads and is ready (the test holds its
backoff until then, so no retry meets a ``not_ready`` of the recovering term, which would also
have counted as "may have been carried out"), then retries. Before the fix the
standby answered ``no_leader`` (never carried out), the retry got ``job_exists`` and
``Client.submit`` raised JobExistsError for a job it had itself submitted: ``steward submit``
reported a failure, and running it again under a new id ran the job twice.
"""

from __future__ import annotations

import signal
import threading

import httpx
import psutil
import pytest

from e2e.incidents import kit
from e2e.incidents.truth import GroundTruth
from steward.client import Client, failover
from steward.jobmanager.faults import FREEZE_AT, SUBMIT_STORED
from steward.testing.credentials import kit_admin_token
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.states import JobState
from support import wait_until

pytestmark = pytest.mark.zookeeper

DEADLINE = 60.0
JOB = "answer-lost"


def _stopped(proc: Proc) -> bool:
    return psutil.Process(proc.pid).status() == psutil.STATUS_STOPPED


def test_a_submission_whose_answer_died_with_the_leader_succeeds_once(
    process_cluster: ProcessCluster, truth: GroundTruth, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: a leader that freezes once it has stored a submission, a standby, a TaskManager.
    monkeypatch.setenv(FREEZE_AT, SUBMIT_STORED)
    leader = process_cluster.start_jobmanager("jm-1")
    wait_until(lambda: kit.role(leader) == "leader", DEADLINE, message="jm-1 leads")
    monkeypatch.delenv(FREEZE_AT)
    standby = process_cluster.start_jobmanager("jm-2")
    process_cluster.start_taskmanager("tm-1")
    process_cluster.wait_ready(taskmanagers=1)
    wait_until(lambda: kit.role(standby) == "standby", DEADLINE, message="jm-2 stands by")

    # When: a client that knows only the standby submits; the leader stores the job, freezes
    # before answering, and is killed.
    client = Client(
        [standby.address],
        timeout=DEADLINE,
        config=process_cluster.rest_config(),
        token=kit_admin_token(),
    )
    outcome: dict[str, object] = {}

    def submit() -> None:
        try:
            outcome["view"] = kit.submit(client, truth, JOB, "--ticks", "3")
        except Exception as exc:
            outcome["error"] = exc

    def ready(proc: Proc) -> bool:
        try:
            return httpx.get(proc.address + "/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    # The client's backoff lasts until the standby leads, recovered: its retry then meets the
    # job the dead leader stored.
    monkeypatch.setattr(
        failover,
        "_sleep",
        lambda _seconds: wait_until(
            lambda: kit.role(standby) == "leader" and ready(standby), DEADLINE
        ),
    )
    submitter = threading.Thread(target=submit, name="submitter")
    submitter.start()
    wait_until(lambda: _stopped(leader), DEADLINE, message="jm-1 froze after storing the job")
    leader.signal(signal.SIGKILL)
    submitter.join(DEADLINE + 10)

    # Then: the client reports success for its job, and the job ran exactly once.
    with client:
        assert "error" not in outcome, f"the client reported {outcome.get('error')!r}"
        assert getattr(outcome["view"], "job_id", None) == JOB
        assert client.wait(JOB, timeout=DEADLINE).state.value == JobState.FINISHED.value
        assert [view.job_id for view in client.jobs()] == [JOB]
        assert len(truth.starts(JOB)) == 1
    process_cluster.check_alive()
