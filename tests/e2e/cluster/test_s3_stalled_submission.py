"""A submission retried while the leader is still storing its first try (the store stalled) is
the same submission, not someone else's job (found by the chaos campaign, seed 3,
``storage_stall_failover``; docs/reliability.md, "Faults around a failover").

The leader's store hangs on an S3 server that stopped answering (moto frozen with SIGSTOP), so
the client's first call gives up ("may have been submitted"); the user submits again with the
same id and spec. Before the fix the leader answered ``409 job_exists`` without the digest of
the submission it was storing, and the client, which had no earlier try of its own in that call,
raised JobExistsError: ``steward submit`` reported a failure for a job that was then stored and
ran. A retry of the submission being stored now hears "not ready, try again" until that store
ends, and then its own job's digest.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from steward.client import Client
from steward.errors import StewardError
from steward.testing.credentials import kit_admin_token
from steward.testing.processes import ProcessCluster
from steward.testing.s3 import S3Server
from steward.wire.states import TerminalState
from steward.zookeeper.managed import ManagedEnsemble
from support import require_modules, wait_until

require_modules(
    s3fs="s3:// needs s3fs (pip install steward[s3])",
    moto="the S3 server of these tests is moto's (the dev extra)",
)

pytestmark = pytest.mark.zookeeper

JOB = "stalled-retry"
PIPELINE = "def main(ctx):\n    return 'once'\n"
DEADLINE = 60.0


class Answers(httpx.HTTPTransport):
    """The client's transport, noting the status of every answer it got."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        self.statuses.append(response.status_code)
        return response


def test_a_retry_while_the_first_try_is_still_stored_is_the_same_submission(
    tmp_path: Path, zookeeper: ManagedEnsemble, s3: S3Server
) -> None:
    cluster = ProcessCluster(
        tmp_path,
        zookeeper.connect_string,
        f"t-s3s-{tmp_path.name[-6:]}",
        extra={"high-availability.storage-dir": s3.url("cluster")},
    )
    pipeline = tmp_path / "once.py"
    pipeline.write_text(PIPELINE)
    try:
        leader = cluster.start_jobmanager("jm-1")
        cluster.start_taskmanager("tm-1", slots=1)
        cluster.wait_ready(taskmanagers=1)
        token = kit_admin_token()
        # Given: the store stops answering, and a first try that gives up while it hangs
        s3.freeze()
        impatient = Client([leader.address], timeout=3.0, token=token)
        with impatient, pytest.raises(StewardError, match="may have been submitted"):
            impatient.submit(pipeline, job_id=JOB)
        # When: the same submission is made again, and the store answers again meanwhile
        answers = Answers()
        outcome: dict[str, object] = {}
        retry = Client([leader.address], timeout=DEADLINE, transport=answers, token=token)

        def submit_again() -> None:
            try:
                outcome["view"] = retry.submit(pipeline, job_id=JOB)
            except StewardError as exc:
                outcome["error"] = exc

        again = threading.Thread(target=submit_again, name="submit-again")
        again.start()
        wait_until(lambda: answers.statuses, DEADLINE, message="the retry's first answer")
        s3.thaw()
        again.join(DEADLINE + 10)
        # Then: the client reports success, and the job was stored and ran once
        with retry:
            assert "error" not in outcome, f"the client reported {outcome.get('error')!r}"
            assert answers.statuses[0] == 503, answers.statuses
            assert retry.wait(JOB, timeout=DEADLINE).state is TerminalState.FINISHED
            assert [view.job_id for view in retry.jobs()] == [JOB]
            assert retry.result(JOB).value == "once"
        cluster.check_alive()
    finally:
        s3.thaw()
        cluster.stop()
