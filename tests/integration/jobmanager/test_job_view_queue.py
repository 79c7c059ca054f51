"""A job's queue and priority in its view (issue 27 part 3): the REST job view, from the
leader's memory and from the status record a standby reads, and ``steward status``.

Fails without them: the views have no ``queue`` nor ``priority``.
"""

from __future__ import annotations

import pytest
from jobmanager_harness import JobManagerCluster
from rich.console import Console

from steward.cli.render import job_details
from steward.wire.rest import JobView
from support import wait_until

pytestmark = pytest.mark.zookeeper


def test_a_jobs_view_shows_its_queue_and_priority_on_leader_and_standby(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader(**{"scheduling.queues": "etl:guarantee=0.5"})
    standby = cluster.start("jm-2", **{"scheduling.queues": "etl:guarantee=0.5"})
    stored = cluster.submitted(leader, "queued", queue="etl", priority=7)
    assert (stored["queue"], stored["priority"]) == ("etl", 7)
    again = cluster.job(leader, "queued")
    assert (again["queue"], again["priority"]) == ("etl", 7)

    def from_standby() -> dict[str, object] | None:
        answer = cluster.get(standby, "/v1/jobs/queued")
        return answer.json() if answer.status_code == 200 else None

    seen = wait_until(from_standby, 30, message="the standby reads the job's record")
    assert (seen["queue"], seen["priority"]) == ("etl", 7)


def test_steward_status_shows_the_queue_and_priority() -> None:
    view = JobView.model_validate(
        {"job_id": "j", "state": "SCHEDULED", "queue": "etl", "priority": 7}
    )
    console = Console(width=120, record=True)
    console.print(job_details(view))
    assert any(
        line.split() == ["queue", "etl", "(priority", "7)"]
        for line in console.export_text().splitlines()
    )
