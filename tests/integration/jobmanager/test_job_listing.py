"""``GET /v1/jobs`` pages, on real JobManagers over a real ZooKeeper: the leader and a standby
each page through their own in-memory index, kept current by the watches they already hold."""

from __future__ import annotations

from typing import Any

import pytest
from jobmanager_harness import JobManagerCluster, dispatcher_of

from steward.client import Client, JobFilter
from steward.jobmanager.manager import JobManager
from support import wait_until

SETTLE = 10.0


def every_page(cluster: JobManagerCluster, manager: JobManager, query: str) -> list[list[str]]:
    """The job ids of each page of ``GET /v1/jobs?<query>``, following the cursors."""
    pages: list[list[str]] = []
    cursor = ""
    while True:
        answer = cluster.get(manager, f"/v1/jobs?{query}{cursor}")
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        pages.append([job["job_id"] for job in body["jobs"]])
        if body["next"] is None:
            return pages
        cursor = f"&cursor={body['next']}"


def submit_seven(cluster: JobManagerCluster, leader: JobManager) -> list[str]:
    ids = []
    for n in range(7):
        team = "data" if n % 2 == 0 else "web"
        name = f"etl-{n}" if n < 4 else f"report-{n}"
        cluster.submitted(leader, f"job-{n}", name=name, labels={"team": team})
        ids.append(f"job-{n}")
        # The leader lists what it has just accepted (no wait for its watches).
        assert f"job-{n}" in every_page(cluster, leader, "limit=100")[0]
    return ids[::-1]


def leader_and_standby(cluster: JobManagerCluster) -> tuple[JobManager, JobManager]:
    """jm-1 leading and jm-2 a standby that knows it."""
    leader = cluster.start_leader("jm-1")
    standby = cluster.start("jm-2")
    cluster.wait_knows_leader(standby, leader)
    return leader, standby


def test_the_leader_and_a_standby_page_newest_first_with_the_same_cursors(
    cluster: JobManagerCluster,
) -> None:
    leader, standby = leader_and_standby(cluster)
    newest_first = submit_seven(cluster, leader)

    assert every_page(cluster, leader, "limit=3") == [
        newest_first[0:3],
        newest_first[3:6],
        newest_first[6:],
    ]
    wait_until(
        lambda: every_page(cluster, standby, "limit=3") == every_page(cluster, leader, "limit=3"),
        SETTLE,
        message="the standby's pages are the leader's",
    )
    # A cursor is a job's key: one JobManager's is good on another.
    first = cluster.get(leader, "/v1/jobs?limit=2").json()
    second = cluster.get(standby, f"/v1/jobs?limit=2&cursor={first['next']}").json()
    assert [job["job_id"] for job in second["jobs"]] == newest_first[2:4]
    assert second["served_by"] == "jm-2"
    assert second["counts"] == {"SCHEDULED": 7}  # no TaskManager: they wait


def test_filters_by_label_name_state_and_submitter_on_a_standby(
    cluster: JobManagerCluster,
) -> None:
    leader, standby = leader_and_standby(cluster)
    newest_first = submit_seven(cluster, leader)
    submitter = cluster.job(leader, "job-0")["submitter"]
    assert submitter
    cancelled = cluster.post(leader, "/v1/jobs/job-3/cancel")
    assert cancelled.status_code == 202, cancelled.text
    cluster.wait_state(standby, "job-3", "CANCELED")

    def listed(query: str) -> list[str]:
        return [job for page in every_page(cluster, standby, query) for job in page]

    wait_until(
        lambda: listed("state=CANCELED") == ["job-3"],
        SETTLE,
        message="the standby lists job-3 CANCELED",
    )
    assert listed("label=team%3Ddata") == ["job-6", "job-4", "job-2", "job-0"]
    assert listed("name=etl-&limit=1") == ["job-3", "job-2", "job-1", "job-0"]
    assert listed("state=SCHEDULED&name=report-") == ["job-6", "job-5", "job-4"]
    assert listed(f"submitter={submitter}") == newest_first
    assert listed("submitter=nobody") == []


@pytest.mark.parametrize(
    "query",
    [
        "limit=0",
        "limit=1001",
        "limit=many",
        "cursor=not-a-cursor",
        "label=team",
        "state=SLEEPING",
        "colour=blue",
    ],
)
def test_a_bad_listing_query_is_a_400(cluster: JobManagerCluster, query: str) -> None:
    leader = cluster.start_leader("jm-1")
    answer = cluster.get(leader, f"/v1/jobs?{query}")
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert body["code"] in ("bad_request", "bad_cursor")
    assert "Traceback" not in answer.text


def test_no_limit_answers_the_newest_hundred_and_the_client_reads_every_page(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader("jm-1")
    for n in range(105):
        cluster.submitted(leader, f"job-{n:03d}", labels={"even": str(n % 2 == 0).lower()})
    first = cluster.get(leader, "/v1/jobs").json()
    assert len(first["jobs"]) == 100
    assert first["jobs"][0]["job_id"] == "job-104"
    assert first["next"] is not None
    with Client([leader.address]) as client:
        every = client.jobs()
        assert [view.job_id for view in every] == [f"job-{n:03d}" for n in range(105)]
        newest = client.jobs(JobFilter(label="even=true"), limit=3)
        assert [view.job_id for view in newest] == ["job-100", "job-102", "job-104"]


def test_a_new_leader_lists_every_job_from_its_index(cluster: JobManagerCluster) -> None:
    first = cluster.start_leader("jm-1")
    second = cluster.start("jm-2")
    cluster.wait_knows_leader(second, first)
    newest_first = submit_seven(cluster, first)
    epoch = dispatcher_of(first).epoch
    first.stop()
    cluster.wait_leading(second)
    assert dispatcher_of(second).epoch > epoch
    assert [job for page in every_page(cluster, second, "limit=4") for job in page] == (
        newest_first
    )


def test_a_job_submitted_through_a_standby_is_listed_there_at_once(
    cluster: JobManagerCluster,
) -> None:
    _, standby = leader_and_standby(cluster)
    wait_until(lambda: standby.reader.index.ready, SETTLE, message="the standby's index filled")
    for n in range(3):
        cluster.submitted(standby, f"via-standby-{n}")
        # No wait for the standby's watches: it lists what its leader accepted for it.
        assert every_page(cluster, standby, "limit=1")[0] == [f"via-standby-{n}"]
