"""Teams own their jobs (issue 27 part 2), through real JobManagers and a TaskManager.

One cluster for the module (a leader, a standby, one TaskManager) and tokens of two teams:
team A's submitter runs a job to its end, a Livy batch and a job that keeps running; team B's
viewer then asks every job route of both JobManagers about them (status, long poll, result,
the attempt's log through the log proxy, Livy's batch routes) and gets exactly the 404 an
unknown id gets; its listings, Livy's listing, the cluster's running jobs and its live event
stream show team B's jobs only; team B's submitter cannot cancel team A's job (404) nor learn
its result by submitting its id. An admin sees all. A submission as a team one is not in is
403 and stores nothing.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from steward.client import Client, JobTerminatedError
from steward.client.events import Event, parse
from steward.errors import ApiError, JobNotFoundError
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.events import JOB_EVENT, JobEvent
from steward.wire.states import JobState
from steward.wire.tokens import Role
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

PRINTER = """
def main(ctx):
    print("team a's secret line", flush=True)
    return {"owner": "team-a"}
"""
GATED = """
import os, time

def main(ctx):
    while not os.path.exists(ctx.args[0]):
        time.sleep(0.05)
    return {"gate": ctx.args[0]}
"""
LIVY_SCRIPT = """
if __name__ == "__main__":
    print("a livy batch of team a", flush=True)
"""


class Teams:
    """The module's cluster, its tokens and team A's jobs."""

    def __init__(self, cluster: ProcessCluster, folder: Path) -> None:
        self.cluster = cluster
        self.folder = folder
        leader = cluster.leader()
        assert leader is not None
        self.leader = leader
        self.standby = next(p for p in cluster.jobmanagers() if p.id != leader.id)
        with cluster.client() as admin:
            self.tokens = {
                name: admin.create_token(name, role, teams=teams).token
                for name, role, teams in (
                    ("alice", Role.SUBMITTER, ["team-a"]),
                    ("avery", Role.VIEWER, ["team-a"]),
                    ("bob", Role.VIEWER, ["team-b"]),
                    ("bea", Role.SUBMITTER, ["team-b"]),
                    ("max", Role.SUBMITTER, ["team-a", "team-b"]),
                    ("nemo", Role.SUBMITTER, []),
                )
            }
        self.batch = -1
        self.gate = folder / "a-running.gate"

    def client(self, name: str, proc: Proc | None = None) -> Client:
        addresses = [proc.address] if proc else [p.address for p in self.cluster.jobmanagers()]
        return Client(
            addresses, timeout=30, config=self.cluster.rest_config(), token=self.tokens[name]
        )

    def request(self, name: str, proc: Proc, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"authorization": f"Bearer {self.tokens[name]}"}
        return httpx.request(
            method,
            proc.address + path,
            headers=headers,
            verify=self.cluster.tls.context,
            timeout=30,
            **kw,
        )


@pytest.fixture(scope="module")
def teams(tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble) -> Iterator[Teams]:
    folder = tmp_path_factory.mktemp("teams")
    (folder / "printer.py").write_text(PRINTER)
    (folder / "gated.py").write_text(GATED)
    (folder / "livy_batch.py").write_text(LIVY_SCRIPT)
    cluster = ProcessCluster(
        folder,
        zookeeper.connect_string,
        f"t-teams-{uuid.uuid4().hex[:8]}",
        extra={
            "jobmanager.livy.allowed-sources": str(folder),
            "jobmanager.events.keep-alive": "1s",
        },
    )
    try:
        cluster.start_jobmanager("jm-1")
        assert cluster.wait_ready(taskmanagers=0).id == "jm-1"
        cluster.start_jobmanager("jm-2")
        cluster.start_taskmanager("tm-1", slots=4)
        cluster.wait_ready(taskmanagers=1)
        wait_until(lambda: len((cluster.cluster_view() or {}).get("jobmanagers", [])) == 2, 30)
        found = Teams(cluster, folder)
        _run_team_a_jobs(found)
        yield found
    finally:
        cluster.stop()


def _run_team_a_jobs(teams: Teams) -> None:
    """Team A's finished job (result, log), Livy batch and running job; team B's own job."""
    with teams.client("alice") as alice:
        alice.submit(teams.folder / "printer.py", job_id="a-done")
        assert alice.wait("a-done", timeout=60).state.value == "FINISHED"
        alice.submit(teams.folder / "gated.py", args=[str(teams.gate)], job_id="a-running")
        wait_until(lambda: alice.job("a-running").state is JobState.RUNNING, 60)
    answer = teams.request(
        "alice",
        teams.leader,
        "POST",
        "/batches",
        json={"file": str(teams.folder / "livy_batch.py")},
    )
    assert answer.status_code == 201, answer.text
    teams.batch = answer.json()["id"]
    with teams.client("bea") as bea:
        bea.submit(teams.folder / "printer.py", job_id="b-done")
        assert bea.wait("b-done", timeout=60).state.value == "FINISHED"
    with teams.client("alice") as alice:
        wait_until(lambda: alice.job(f"livy-{teams.batch}").state.is_terminal, 60)


ROUTES = [
    ("bob", "GET", "/v1/jobs/{id}"),
    ("bob", "GET", "/v1/jobs/{id}?wait=1&since=RUNNING"),
    ("bob", "GET", "/v1/jobs/{id}/result"),
    ("bob", "GET", "/v1/jobs/{id}/attempts/1/log"),
    ("bob", "GET", "/v1/jobs/{id}/attempts/1/log?tail=5&follow=true"),
    ("bea", "POST", "/v1/jobs/{id}/cancel"),
]
LIVY_ROUTES = [
    ("bob", "GET", "/batches/{n}"),
    ("bob", "GET", "/batches/{n}/state"),
    ("bob", "GET", "/batches/{n}/log"),
    ("bea", "DELETE", "/batches/{n}"),
]


@pytest.mark.parametrize("where", ["leader", "standby"])
@pytest.mark.parametrize("route", ROUTES, ids=[f"{m} {p}" for _, m, p in ROUTES])
@pytest.mark.parametrize("job_id", ["a-done", "a-running"])
def test_another_teams_job_is_answered_as_an_unknown_id(
    teams: Teams, where: str, route: tuple[str, str, str], job_id: str
) -> None:
    who, method, path = route
    proc = teams.leader if where == "leader" else teams.standby
    hidden = teams.request(who, proc, method, path.format(id=job_id))
    unknown = teams.request(who, proc, method, path.format(id="never-submitted"))
    assert hidden.status_code == unknown.status_code == 404, hidden.text
    assert hidden.json() == json.loads(unknown.text.replace("never-submitted", job_id))
    assert "secret" not in hidden.text
    # The same route answers the job's own team (so the 404 above is the team's doing).
    own = teams.request("avery" if who == "bob" else "alice", proc, "GET", f"/v1/jobs/{job_id}")
    assert own.status_code == 200, own.text


@pytest.mark.parametrize("where", ["leader", "standby"])
@pytest.mark.parametrize(("who", "method", "path"), LIVY_ROUTES)
def test_another_teams_livy_batch_is_answered_as_an_unknown_batch(
    teams: Teams, where: str, who: str, method: str, path: str
) -> None:
    proc = teams.leader if where == "leader" else teams.standby
    hidden = teams.request(who, proc, method, path.format(n=teams.batch))
    unknown = teams.request(who, proc, method, path.format(n=99999))
    assert hidden.status_code == unknown.status_code == 404, hidden.text
    assert hidden.json() == json.loads(unknown.text.replace("99999", str(teams.batch)))
    own = teams.request("avery", proc, "GET", path.format(n=teams.batch))
    assert own.status_code == 200, own.text


@pytest.mark.parametrize("where", ["leader", "standby"])
def test_listings_show_a_viewer_its_teams_jobs_only_and_an_admin_all(
    teams: Teams, where: str
) -> None:
    proc = teams.leader if where == "leader" else teams.standby
    livy = f"livy-{teams.batch}"
    listed = teams.request("bob", proc, "GET", "/v1/jobs").json()
    assert [job["job_id"] for job in listed["jobs"]] == ["b-done"]
    assert listed["counts"] == {"FINISHED": 1}
    assert listed["jobs"][0]["team"] == "team-b"
    assert teams.request("bob", proc, "GET", "/v1/jobs?team=team-a").json()["jobs"] == []
    batches = teams.request("bob", proc, "GET", "/batches").json()
    assert (batches["total"], batches["sessions"]) == (0, [])
    own = {job["job_id"] for job in teams.request("avery", proc, "GET", "/v1/jobs").json()["jobs"]}
    assert own == {"a-done", "a-running", livy}
    assert teams.request("avery", proc, "GET", "/batches").json()["total"] == 1
    everything = teams.cluster.get(proc, "/v1/jobs?limit=1000")
    assert {"a-done", "a-running", livy, "b-done"} <= {job["job_id"] for job in everything["jobs"]}


def test_the_cluster_view_shows_a_viewer_only_its_teams_running_jobs(teams: Teams) -> None:
    # The leader knows where each job runs (a standby lists TaskManagers without their jobs).
    by_admin = teams.cluster.get(teams.leader, "/v1/cluster")["taskmanagers"][0]["attempts"]
    assert "a-running" in by_admin
    for who, sees in (("bob", False), ("avery", True)):
        view = teams.request(who, teams.leader, "GET", "/v1/cluster").json()
        assert ("a-running" in view["taskmanagers"][0]["attempts"]) is sees


class Stream:
    """One ``/v1/events`` stream read on a thread of its own."""

    def __init__(self, teams: Teams, who: str, proc: Proc) -> None:
        self.events: list[Event] = []
        self._client = httpx.Client(
            timeout=httpx.Timeout(30, connect=5), verify=teams.cluster.tls.context
        )
        headers = {"authorization": f"Bearer {teams.tokens[who]}"}
        request = self._client.build_request("GET", proc.address + "/v1/events", headers=headers)
        self._thread = threading.Thread(target=self._read, args=(request,), daemon=True)
        self._thread.start()

    def _read(self, request: httpx.Request) -> None:
        try:
            response = self._client.send(request, stream=True)
            self.events.extend(parse(response.iter_lines()))
        except httpx.HTTPError:
            pass

    def jobs(self) -> list[JobEvent]:
        return [
            JobEvent.model_validate_json(e.data) for e in list(self.events) if e.name == JOB_EVENT
        ]

    def close(self) -> None:
        self._client.close()
        self._thread.join(5)


@pytest.mark.parametrize("where", ["leader", "standby"])
def test_the_event_stream_carries_a_viewers_teams_jobs_only(teams: Teams, where: str) -> None:
    proc = teams.leader if where == "leader" else teams.standby
    bobs, averys = Stream(teams, "bob", proc), Stream(teams, "avery", proc)
    try:
        wait_until(lambda: bool(bobs.events and averys.events), 10, "both streams began")
        a_job, b_job = f"a-streamed-{where}", f"b-streamed-{where}"
        with teams.client("alice") as alice:
            alice.submit(teams.folder / "printer.py", job_id=a_job)
            assert alice.wait(a_job, timeout=60).state.value == "FINISHED"
        wait_until(
            lambda: JobState.FINISHED in [e.state for e in averys.jobs() if e.job_id == a_job],
            30,
            "team A's viewer streamed its job's end",
        )
        with teams.client("bea") as bea:
            bea.submit(teams.folder / "printer.py", job_id=b_job)
        # Events are streamed in order: team A's job ended before team B's was submitted.
        wait_until(
            lambda: JobState.FINISHED in [e.state for e in bobs.jobs() if e.job_id == b_job],
            60,
            "team B's viewer streamed its job's end",
        )
        assert {e.team for e in bobs.jobs()} == {"team-b"}
        assert a_job not in {e.job_id for e in bobs.jobs()}
        assert b_job not in {e.job_id for e in averys.jobs()}
    finally:
        bobs.close()
        averys.close()


def test_a_submission_as_a_team_one_is_not_in_is_refused_and_stores_nothing(
    teams: Teams,
) -> None:
    pipeline = teams.folder / "printer.py"
    # Through the standby: forwarded, the leader decides.
    with teams.client("alice", teams.standby) as alice, pytest.raises(ApiError) as refused:
        alice.submit(pipeline, job_id="a-as-b", team="team-b")
    assert refused.value.status == 403
    assert "team-b" in str(refused.value)
    with teams.client("max") as several:
        with pytest.raises(ApiError) as must_choose:
            several.submit(pipeline, job_id="max-unnamed")
        assert must_choose.value.status == 403
        assert several.submit(pipeline, job_id="max-as-b", team="team-b").team == "team-b"
    with teams.client("nemo") as nobody:
        assert nobody.submit(pipeline, job_id="nemo-default").team == "default"
    with teams.cluster.client() as admin:
        for job_id in ("a-as-b", "max-unnamed"):
            with pytest.raises(JobNotFoundError):
                admin.job(job_id)
        assert admin.job("a-done").team == "team-a"


def test_a_taken_id_of_another_team_is_refused_without_its_result(teams: Teams) -> None:
    data = base64.b64encode(PRINTER.encode()).decode()
    body = {"spec": {"job_id": "a-done"}, "artifact": {"filename": "p.py", "data_b64": data}}
    for proc in (teams.leader, teams.standby):
        refused = teams.request("bea", proc, "POST", "/v1/jobs", json=body)
        assert refused.status_code == 409, refused.text
        assert refused.json()["code"] == "job_exists"
        assert "result" not in refused.json() and "team-a" not in refused.text
    # Its own team's submitter learns the result, as before teams, when it sends the same
    # submission that ran the job (another body is a changed spec: refused as job_exists).
    with teams.client("alice") as alice, pytest.raises(JobTerminatedError) as ended:
        alice.submit(teams.folder / "printer.py", job_id="a-done")
    assert ended.value.result is not None and ended.value.result.value == {"owner": "team-a"}


def test_a_token_keeps_its_teams(teams: Teams) -> None:
    with teams.cluster.client() as admin:
        views = {view.name: view for view in admin.tokens()}
    assert views["max"].teams == ["team-a", "team-b"]
    assert views["nemo"].teams == []
    with teams.client("alice") as alice:
        assert alice.job("a-done").team == "team-a"


def test_a_job_of_another_team_cannot_be_cancelled_and_keeps_running(teams: Teams) -> None:
    with teams.client("bea", teams.standby) as bea, pytest.raises(JobNotFoundError):
        bea.cancel("a-running")
    with teams.client("alice") as alice:
        assert alice.job("a-running").state is JobState.RUNNING
        teams.gate.touch()
        assert alice.wait("a-running", timeout=60).state.value == "FINISHED"
