"""A submission's team over the in-memory JobManager of test_rest_app: the one it names if the
caller is in it (403 otherwise, nothing stored), a name that cannot be a team's is a 400, and a
job of another team is the 404 of an unknown id. The process-level proofs, route by route, are
in tests/e2e/cluster/test_teams.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from test_rest_app import InMemoryJobManager, InMemoryTerm, submission

from steward.jobmanager.app import create_app
from steward.store.blob import BlobStore
from steward.testing.credentials import MemorySecurity, auth_headers
from steward.wire.records import LeaderInfo
from steward.wire.tokens import Role

LEADER = LeaderInfo(contender="jm-1", address="http://127.0.0.1:1", epoch=3)


@pytest.fixture
def leader(tmp_path: Path) -> InMemoryJobManager:
    return InMemoryJobManager(
        blobs=BlobStore(str(tmp_path)), dispatcher=InMemoryTerm(), known_leader=LEADER
    )


def as_member(manager: InMemoryJobManager, security: MemorySecurity, *teams: str) -> TestClient:
    token = security.token("alice", Role.SUBMITTER, teams=list(teams))
    return TestClient(create_app(manager, security.api), headers=auth_headers(token))


def with_team(job_id: str, team: Any) -> dict[str, Any]:
    body = submission(job_id)
    body["spec"]["team"] = team
    return body


def test_a_job_is_stored_as_the_team_it_names_or_the_callers_only_one(
    leader: InMemoryJobManager,
) -> None:
    security = MemorySecurity()
    alice = as_member(leader, security, "team-a")
    assert alice.post("/v1/jobs", json=submission("plain")).json()["team"] == "team-a"
    assert alice.post("/v1/jobs", json=with_team("named", "team-a")).json()["team"] == "team-a"
    assert leader.dispatcher is not None
    assert {v.team for v in leader.dispatcher.live.values()} == {"team-a"}


@pytest.mark.parametrize("team", ["no spaces", "", 7, ["team-a"], "x" * 65])
def test_a_team_that_cannot_be_a_teams_name_is_a_400_and_stores_nothing(
    leader: InMemoryJobManager, team: Any
) -> None:
    alice = as_member(leader, MemorySecurity(), "team-a")
    answer = alice.post("/v1/jobs", json=with_team("bad-team", team))
    assert answer.status_code == 400, answer.text
    assert "team" in answer.json()["message"]
    assert leader.dispatcher is not None and leader.dispatcher.live == {}


def test_a_team_the_caller_is_not_in_is_a_403_and_stores_nothing(
    leader: InMemoryJobManager,
) -> None:
    alice = as_member(leader, MemorySecurity(), "team-a")
    answer = alice.post("/v1/jobs", json=with_team("as-b", "team-b"))
    assert answer.status_code == 403
    assert answer.json()["code"] == "forbidden" and "team-b" in answer.json()["message"]
    assert leader.dispatcher is not None and leader.dispatcher.live == {}


def test_another_teams_job_is_a_404_like_an_unknown_one(leader: InMemoryJobManager) -> None:
    security = MemorySecurity()
    as_member(leader, security, "team-a").post("/v1/jobs", json=submission("a-job"))
    bob = as_member(leader, security, "team-b")
    hidden, unknown = bob.get("/v1/jobs/a-job"), bob.get("/v1/jobs/no-job")
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.json() == {"code": "job_not_found", "message": "no job 'a-job'"}
    assert unknown.json() == {"code": "job_not_found", "message": "no job 'no-job'"}
