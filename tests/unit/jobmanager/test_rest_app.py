"""The REST routers over an in-memory :class:`~steward.jobmanager.rest.backend.ApiBackend`.

No ZooKeeper and no Dispatcher: :class:`InMemoryJobManager` keeps jobs in dicts and plays
leader or standby, so these tests check the routes' own logic (status codes, ErrorBody codes,
which JobManager answers). The real API on real JobManagers is tested in
tests/integration/jobmanager/test_jobmanager_api.py.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from steward.config import Configuration
from steward.config.configuration import validate
from steward.errors import (
    BlobStoreError,
    JobExistsError,
    JobNotFoundError,
    ZooKeeperUnavailableError,
)
from steward.jobmanager.app import create_app
from steward.jobmanager.job_index import JobIndex, JobQuery, Page
from steward.jobmanager.rest import batch_submission
from steward.jobmanager.rest import jobs as rest_jobs
from steward.jobmanager.rest.backend import ApiBackend
from steward.jobmanager.rest.internal import MAX_HEARTBEAT_BYTES
from steward.store.blob import BlobStore
from steward.testing.credentials import MemorySecurity, auth_headers
from steward.wire.doctor import DoctorReport
from steward.wire.heartbeat import HEARTBEAT_PATH, Heartbeat, HeartbeatReply
from steward.wire.jobs import JobGraph, JobSpec
from steward.wire.queues import QueueList, QueueView
from steward.wire.records import JobResultEntry, LeaderInfo
from steward.wire.rest import JobManagerView, JobView, TaskManagerView
from steward.wire.states import JobState

PIPELINE = b"def main(ctx):\n    return {'rows': 3}\n"


@dataclass
class Connected:
    connected: bool = True


def small_uploads() -> Configuration:
    """A real configuration with 1 MiB uploads; auth is MemorySecurity's business here, so the
    configuration's own is off (the log proxy then needs no internal token file)."""
    raw = {"jobmanager.upload.max-size": str(1 << 20), "security.auth.enabled": "false"}
    return validate(raw, sources={})


@dataclass
class InMemoryReads:
    """ZooKeeper's answers, kept in memory: what a standby serves."""

    known_leader: LeaderInfo | None = None
    views: dict[str, JobView] = field(default_factory=dict)
    index: JobIndex = field(default_factory=JobIndex)

    def leader(self) -> LeaderInfo | None:
        return self.known_leader

    def jobmanagers(self, leader: LeaderInfo | None) -> list[JobManagerView]:
        if leader is None:
            return []
        return [JobManagerView(id=leader.contender, address=leader.address, leader=True)]

    def taskmanagers(self) -> list[TaskManagerView]:
        return []

    def jobs(self) -> list[JobView]:
        return list(self.views.values())

    def terminated(self) -> list[JobView]:
        return []

    def page(self, query: JobQuery) -> Page | None:
        return None  # an index still being filled: the route reads every job

    def note(self, view: JobView) -> None:
        pass

    def job(self, job_id: str) -> JobView | None:
        return self.views.get(job_id)

    def result(self, job_id: str) -> JobResultEntry | None:
        return None


class NoContentGC:
    @contextmanager
    def pinned(self, hashes: Iterable[str]) -> Iterator[None]:
        list(hashes)
        yield


@dataclass
class InMemoryTerm:
    """A leader's term holding its jobs in a dict; ``refuse`` makes every write raise it."""

    ready: bool = True
    stopped: bool = False
    content_gc: NoContentGC = field(default_factory=NoContentGC)
    live: dict[str, JobView] = field(default_factory=dict)
    beats: list[Heartbeat] = field(default_factory=list)
    refuse: Exception | None = None

    def submit(self, spec: JobSpec, graph: JobGraph) -> JobView:
        if self.refuse is not None:
            raise self.refuse
        if spec.job_id in self.live:
            raise JobExistsError(spec.job_id)
        view = JobView(
            job_id=spec.job_id,
            state=JobState.SCHEDULED,
            submitted_at=1.0,
            submitter=spec.submitter,
            team=spec.team,
        )
        self.live[spec.job_id] = view
        return view

    def cancel(self, job_id: str) -> JobView:
        if job_id not in self.live:
            raise JobNotFoundError(job_id)
        return self.live[job_id].model_copy(update={"state": JobState.CANCELLING})

    def take_heartbeat(self, beat: Heartbeat, *, block: bool) -> HeartbeatReply:
        self.beats.append(beat)
        return HeartbeatReply(epoch=1, leader="jm-1")

    def view(self, job_id: str, *, with_checkpoints: bool = True) -> JobView | None:
        return self.live.get(job_id)

    def views(self) -> list[JobView]:
        return list(self.live.values())

    def taskmanagers(self) -> list[TaskManagerView]:
        return []

    def queues(self) -> QueueList:
        etl = QueueView(name="etl", guarantee=0.5, maximum=1.0, weight=1.0, running=2, waiting=3)
        return QueueList(queues=[etl], slots=4)


@dataclass
class InMemoryJobManager:
    """Leader (with a term) or standby (without); satisfies ApiBackend structurally."""

    blobs: BlobStore
    id: str = "jm-1"
    session: Connected = field(default_factory=Connected)
    reader: InMemoryReads = field(default_factory=InMemoryReads)
    dispatcher: InMemoryTerm | None = None
    config: Configuration = field(default_factory=small_uploads)
    known_leader: LeaderInfo | None = None
    blocker: str | None = None
    doctor_asked: list[bool] = field(default_factory=list)

    @property
    def is_leader(self) -> bool:
        return self.dispatcher is not None and not self.dispatcher.stopped

    def leader(self) -> LeaderInfo | None:
        return self.known_leader

    def cluster_id(self) -> str:
        return "test-cluster"

    def takeover_blocker(self) -> str | None:
        return self.blocker

    def doctor(self, *, verify_blobs: bool = False) -> DoctorReport:
        self.doctor_asked.append(verify_blobs)
        return DoctorReport(cluster_id="test-cluster", checked_at=1.0, epoch=3, jobs=0)


LEADER = LeaderInfo(contender="jm-1", address="http://127.0.0.1:1", epoch=3)


@pytest.fixture
def leader(tmp_path: Path) -> InMemoryJobManager:
    return InMemoryJobManager(
        blobs=BlobStore(str(tmp_path)),
        dispatcher=InMemoryTerm(),
        known_leader=LEADER,
        reader=InMemoryReads(known_leader=LEADER),
    )


@pytest.fixture
def standby(tmp_path: Path) -> InMemoryJobManager:
    return InMemoryJobManager(blobs=BlobStore(str(tmp_path)), id="jm-2")


def client_of(manager: ApiBackend, security: MemorySecurity | None = None) -> TestClient:
    """The app of ``manager``, asked as the cluster's admin (steward.testing.credentials)."""
    security = security or MemorySecurity()
    return TestClient(create_app(manager, security.api), headers=auth_headers())


def internal_client_of(manager: ApiBackend) -> TestClient:
    """The app of ``manager``, asked with the cluster's internal credential (a TaskManager)."""
    security = MemorySecurity()
    return TestClient(create_app(manager, security.api), headers=auth_headers(security.internal))


def submission(job_id: str | None, source: bytes = PIPELINE) -> dict[str, Any]:
    spec = {"job_id": job_id} if job_id else {}
    data = base64.b64encode(source).decode()
    return {"spec": spec, "artifact": {"filename": "pipeline.py", "data_b64": data}}


def test_health_and_readiness_say_the_role_and_what_is_missing(
    leader: InMemoryJobManager, standby: InMemoryJobManager
) -> None:
    api = client_of(leader)
    assert api.get("/healthz").json() == {"status": "ok", "id": "jm-1", "role": "leader"}
    assert api.get("/readyz").json() == {"ready": True, "id": "jm-1", "role": "leader"}

    assert leader.dispatcher is not None
    leader.dispatcher.ready = False
    recovering = api.get("/readyz")
    assert (recovering.status_code, recovering.json()["code"]) == (503, "not_ready")
    assert recovering.headers["retry-after"] == "1"

    api = client_of(standby)
    assert api.get("/healthz").json()["role"] == "standby"
    no_leader = api.get("/readyz")
    assert (no_leader.status_code, no_leader.json()["code"]) == (503, "no_leader")
    standby.session.connected = False
    assert api.get("/readyz").json() == {
        "code": "not_ready",
        "message": "not connected to ZooKeeper",
    }


def test_a_standby_is_ready_only_once_it_could_take_over_at_once(
    leader: InMemoryJobManager, standby: InMemoryJobManager
) -> None:
    standby.known_leader = LEADER
    standby.blocker = "the crash detector has not yet seen leader jm-1"
    api = client_of(standby)
    not_ready = api.get("/readyz")
    assert not_ready.status_code == 503
    assert not_ready.json() == {"code": "not_ready", "message": standby.blocker}
    assert not_ready.headers["retry-after"] == "1"
    standby.blocker = None
    assert api.get("/readyz").json() == {"ready": True, "id": "jm-2", "role": "standby"}
    # A leader is never held back by what a standby would need
    leader.blocker = "not yet in line for leadership (no latch node)"
    assert client_of(leader).get("/readyz").status_code == 200


def test_submit_read_cancel_and_result_on_the_leader(leader: InMemoryJobManager) -> None:
    api = client_of(leader)
    created = api.post("/v1/jobs", json=submission("job-1"))
    assert created.status_code == 201, created.text
    assert created.json()["job_id"] == "job-1"

    again = api.post("/v1/jobs", json=submission("job-1"))
    assert (again.status_code, again.json()["code"]) == (409, "job_exists")

    assert api.get("/v1/jobs/job-1").json()["state"] == "SCHEDULED"
    listed = api.get("/v1/jobs").json()
    assert ([v["job_id"] for v in listed["jobs"]], listed["served_by"]) == (["job-1"], "jm-1")

    cancelled = api.post("/v1/jobs/job-1/cancel")
    assert (cancelled.status_code, cancelled.json()["state"]) == (202, "CANCELLING")

    running = api.get("/v1/jobs/job-1/result")
    assert running.status_code == 409
    assert running.json() == {
        "code": "job_not_terminated",
        "message": "job 'job-1' has not terminated yet (state SCHEDULED)",
    }


def test_unknown_and_malformed_jobs_are_404_everywhere(leader: InMemoryJobManager) -> None:
    api = client_of(leader)
    for job_id in ("job-x", "not a job id!"):
        for answer in (
            api.get(f"/v1/jobs/{job_id}"),
            api.get(f"/v1/jobs/{job_id}/result"),
            api.post(f"/v1/jobs/{job_id}/cancel"),
        ):
            assert answer.status_code == 404, answer.text
            assert answer.json()["code"] == "job_not_found"


def test_bad_submissions_are_400_with_the_reason(leader: InMemoryJobManager) -> None:
    api = client_of(leader)
    not_json = api.post("/v1/jobs", content=b"{")
    assert (not_json.status_code, not_json.json()["code"]) == (400, "bad_request")

    body = submission("job-2")
    body["artifact"]["data_b64"] = "***"
    bad_b64 = api.post("/v1/jobs", json=body)
    assert bad_b64.json() == {
        "code": "bad_request",
        "message": "artifact.data_b64 is not valid base64",
    }

    syntax = api.post("/v1/jobs", json=submission("job-3", source=b"def main(:\n"))
    assert (syntax.status_code, syntax.json()["code"]) == (400, "bad_request")
    assert leader.dispatcher is not None and leader.dispatcher.live == {}


def test_refusals_of_the_leader_map_to_their_status(leader: InMemoryJobManager) -> None:
    assert leader.dispatcher is not None
    leader.dispatcher.refuse = BlobStoreError("disk full")
    full = client_of(leader).post("/v1/jobs", json=submission("job-4"))
    assert full.status_code == 507
    assert full.json() == {"code": "storage_unavailable", "message": "disk full"}


def test_a_standby_without_a_leader_answers_writes_503_and_heartbeats_409(
    standby: InMemoryJobManager,
) -> None:
    api = client_of(standby)
    for write in (api.post("/v1/jobs", json=submission("job-5")), api.post("/v1/jobs/j/cancel")):
        assert (write.status_code, write.json()["code"]) == (503, "no_leader")
        assert write.headers["retry-after"] == "1"

    standby.known_leader = LEADER
    beat = Heartbeat(taskmanager="tm-1", address="http://tm-1", slots=2, epoch=3)
    refused = internal_client_of(standby).post(HEARTBEAT_PATH, content=beat.to_json())
    assert refused.status_code == 409
    assert refused.json() == {
        "code": "not_leader",
        "message": "jm-2 is not the leader",
        "leader": {"id": "jm-1", "address": "http://127.0.0.1:1", "epoch": 3},
    }


def test_the_leader_takes_heartbeats(leader: InMemoryJobManager) -> None:
    beat = Heartbeat(taskmanager="tm-1", address="http://tm-1", slots=2, epoch=3)
    api = internal_client_of(leader)
    answer = api.post(HEARTBEAT_PATH, content=beat.to_json())
    assert answer.status_code == 200
    assert HeartbeatReply.from_json(answer.content).leader == "jm-1"
    assert leader.dispatcher is not None and leader.dispatcher.beats == [beat]

    garbled = api.post(HEARTBEAT_PATH, content=b"[]")
    assert (garbled.status_code, garbled.json()["code"]) == (400, "bad_request")


def test_a_heartbeat_larger_than_the_bound_is_refused_unread(leader: InMemoryJobManager) -> None:
    api = internal_client_of(leader)
    huge = b" " * (MAX_HEARTBEAT_BYTES + 1)  # whitespace: valid JSON padding, were it read
    answer = api.post(HEARTBEAT_PATH, content=huge)
    assert (answer.status_code, answer.json()["code"]) == (413, "too_large")
    assert str(MAX_HEARTBEAT_BYTES) in answer.json()["message"]
    assert leader.dispatcher is not None and leader.dispatcher.beats == []


class ExpiredReads(InMemoryReads):
    """A standby whose ZooKeeper session expired under a read (the network chaos found it)."""

    def jobs(self) -> list[JobView]:
        raise ZooKeeperUnavailableError("the ZooKeeper session expired (at /x/results)")


def test_a_read_that_loses_zookeeper_is_503_with_an_error_body_not_a_500(
    standby: InMemoryJobManager,
) -> None:
    standby.reader = ExpiredReads()

    answer = client_of(standby).get("/v1/jobs")

    assert answer.status_code == 503
    assert answer.json() == {
        "code": "unavailable",
        "message": "the ZooKeeper session expired (at /x/results)",
    }
    assert answer.headers["retry-after"]


def test_the_doctor_takes_verify_blobs_and_refuses_a_parameter_it_does_not_know(
    standby: InMemoryJobManager,
) -> None:
    client = client_of(standby)

    assert client.get("/v1/doctor").json()["findings"] == []
    assert client.get("/v1/doctor", params={"verify_blobs": "true"}).status_code == 200
    refused = client.get("/v1/doctor", params={"verify": "true"})  # a typo is not ignored

    assert refused.status_code == 400 and refused.json()["code"] == "bad_request"
    assert standby.doctor_asked == [False, True]


@pytest.mark.parametrize("path", ["/v1/jobs/job-1", "/v1/jobs/job-1/attempts/1/log", "/v1/doctor"])
def test_a_query_parameter_no_route_knows_is_a_400_not_ignored(
    leader: InMemoryJobManager, path: str
) -> None:
    answer = client_of(leader).get(path, params={"wiat": "5"})  # a typo of wait

    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == "bad_request" and "wiat" in answer.json()["message"]


def test_cluster_view_and_routing_errors_as_error_bodies(leader: InMemoryJobManager) -> None:
    api = client_of(leader)
    view = api.get("/v1/cluster").json()
    assert view["cluster_id"] == "test-cluster"
    assert view["leader"] == {"id": "jm-1", "address": "http://127.0.0.1:1", "epoch": 3}
    assert view["served_by"] == "jm-1"

    assert api.get("/v1/nothing").json()["code"] == "not_found"
    wrong = api.delete("/v1/jobs")
    assert (wrong.status_code, wrong.json()["code"]) == (405, "method_not_allowed")


def test_contents_are_stored_and_found_under_their_hash(leader: InMemoryJobManager) -> None:
    api = client_of(leader)
    data = b"a dependency"
    sha = hashlib.sha256(data).hexdigest()
    assert api.head(f"/v1/contents/{sha}").status_code == 404
    stored = api.put(f"/v1/contents/{sha}", content=data)
    assert stored.status_code == 201
    assert stored.json() == {"sha256": sha, "created": True}
    found = api.head(f"/v1/contents/{sha}")
    assert (found.status_code, found.headers["x-steward-size"]) == (200, str(len(data)))
    mismatch = api.put(f"/v1/contents/{'0' * 64}", content=data)
    assert (mismatch.status_code, mismatch.json()["code"]) == (400, "content_mismatch")


def test_submissions_are_answered_before_fastapis_routing_and_still_authenticated(
    leader: InMemoryJobManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = create_app(leader, MemorySecurity().api)

    async def unreachable(_request: object) -> None:
        raise AssertionError("FastAPI's route answered a submission")

    # FastAPI's routes of both paths would now fail (500): the lean path (.rest.direct) answers.
    monkeypatch.setattr(rest_jobs, "submission_route", unreachable)
    monkeypatch.setattr(batch_submission, "batch_route", unreachable)
    api = TestClient(app, headers=auth_headers())
    assert api.post("/v1/jobs", json=submission("direct-1")).status_code == 201
    batch = api.post("/v1/jobs/batch", json={"submissions": [submission("direct-2")]})
    assert batch.status_code == 200, batch.text
    assert [r["status"] for r in batch.json()["results"]] == [201]
    refused = api.post("/v1/jobs", content=b"{")
    assert (refused.status_code, refused.json()["code"]) == (400, "bad_request")
    stranger = TestClient(app).post("/v1/jobs", json=submission("direct-3"))
    assert (stranger.status_code, stranger.json()["code"]) == (401, "unauthorized")
    assert leader.dispatcher is not None and set(leader.dispatcher.live) == {"direct-1", "direct-2"}
