"""Live events with real processes and a real ZooKeeper: ``GET /v1/events`` on the leader and
on a standby, resuming with ``Last-Event-ID``, the long poll of ``GET /v1/jobs/{id}?wait=``,
authentication, and ``Client.wait`` following a job without polling, across a leader SIGKILL.

One cluster for the module (two JobManagers, one TaskManager); the failover test runs last
and kills the leader. Jobs wait on a gate file, so a test decides when RUNNING ends.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from steward.client import Client
from steward.client.events import Event, parse
from steward.errors import WaitTimeoutError
from steward.testing.credentials import auth_headers, kit_admin_token
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.events import JOB_EVENT, LONG_POLL_HEADER, RESET_EVENT, JobEvent, ResetEvent
from steward.wire.states import JobState
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper

GATED = """
import os, time

def main(ctx):
    gate = ctx.args[0]
    while not os.path.exists(gate):
        time.sleep(0.05)
    return {"gate": gate}
"""
ORDER = [
    JobState.SUBMITTED,
    JobState.INITIALIZING,
    JobState.SCHEDULED,
    JobState.RUNNING,
    JobState.FINISHED,
]


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble
) -> Iterator[ProcessCluster]:
    folder = tmp_path_factory.mktemp("live-events")
    cluster = ProcessCluster(
        folder,
        zookeeper.connect_string,
        f"t-live-events-{folder.name[-6:]}",
        extra={"jobmanager.events.keep-alive": "1s"},
    )
    try:
        # All at once: whichever JobManager leads, the tests ask the cluster which.
        cluster.start_jobmanager("jm-1")
        cluster.start_jobmanager("jm-2")
        cluster.start_taskmanager("tm-1", slots=4)
        cluster.wait_ready(taskmanagers=1)
        wait_until(lambda: len((cluster.cluster_view() or {}).get("jobmanagers", [])) == 2, 30)
        yield cluster
    finally:
        cluster.stop()


class Recorder:
    """Reads one event stream on a thread of its own; the test waits on what it recorded."""

    def __init__(self, address: str, params: dict[str, str], headers: dict[str, str]) -> None:
        self.events: list[Event] = []
        self.ended = threading.Event()
        self.status = 0
        self._response: httpx.Response | None = None
        self._client = httpx.Client(timeout=httpx.Timeout(30, connect=5))
        request = self._client.build_request(
            "GET", address + "/v1/events", params=params, headers=headers
        )
        self._thread = threading.Thread(target=self._read, args=(request,), daemon=True)
        self._thread.start()

    def _read(self, request: httpx.Request) -> None:
        try:
            response = self._client.send(request, stream=True)
            self._response, self.status = response, response.status_code
            for event in parse(response.iter_lines()):
                self.events.append(event)
        except httpx.HTTPError:
            pass
        finally:
            self.ended.set()

    def states(self, job_id: str) -> list[JobState]:
        jobs = [JobEvent.model_validate_json(e.data) for e in self.events if e.name == JOB_EVENT]
        return [event.state for event in jobs if event.job_id == job_id]

    def wait_for(self, job_id: str, state: JobState, timeout: float = 30) -> None:
        wait_until(lambda: state in self.states(job_id), timeout, f"{job_id} {state} streamed")

    def wait_started(self) -> None:
        wait_until(lambda: bool(self.events), 10, "the stream's first event")

    def close(self) -> None:
        self._client.close()
        self._thread.join(5)


@contextlib.contextmanager
def recording(
    proc: Proc, job: str | None = None, headers: dict[str, str] | None = None
) -> Iterator[Recorder]:
    params = {"job": job} if job else {}
    recorder = Recorder(proc.address, params, headers or auth_headers())
    try:
        yield recorder
    finally:
        recorder.close()


def _jobmanagers(cluster: ProcessCluster) -> tuple[Proc, Proc]:
    leader = cluster.leader()
    assert leader is not None
    standby = next(p for p in cluster.jobmanagers() if p.id != leader.id and p.alive())
    return leader, standby


def _submit_gated(cluster: ProcessCluster, tmp_path: Path, job_id: str) -> Path:
    pipeline = tmp_path / "gated.py"
    pipeline.write_text(GATED)
    gate = tmp_path / f"{job_id}.gate"
    with cluster.client() as client:
        client.submit(pipeline, args=[str(gate)], job_id=job_id)
    return gate


def _assert_in_lifecycle_order(states: list[JobState]) -> None:
    assert states, "no event"
    assert states[-1] is JobState.FINISHED, states
    assert JobState.RUNNING in states, states
    # A state may repeat (its reason changed: SCHEDULED, waiting for a slot, then not).
    positions = [ORDER.index(state) for state in states]
    assert positions == sorted(positions), f"out of order: {states}"


def test_leader_and_standby_stream_a_job_until_finished_in_order(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    leader, standby = _jobmanagers(cluster)
    with recording(leader, job="ordered") as on_leader, recording(standby) as on_standby:
        on_leader.wait_started()
        on_standby.wait_started()
        # A new stream begins with a reset: read the state, then follow.
        assert on_leader.events[0].name == on_standby.events[0].name == RESET_EVENT
        gate = _submit_gated(cluster, tmp_path, "ordered")
        on_leader.wait_for("ordered", JobState.RUNNING)
        on_standby.wait_for("ordered", JobState.RUNNING)
        gate.touch()
        on_leader.wait_for("ordered", JobState.FINISHED)
        on_standby.wait_for("ordered", JobState.FINISHED)
        events = [JobEvent.model_validate_json(e.data) for e in on_standby.events[1:]]
    for states in (on_leader.states("ordered"), on_standby.states("ordered")):
        _assert_in_lifecycle_order(states)
        # SUBMITTED lives in the leader's memory only (a job without an initialize hook gets
        # its first status record once SCHEDULED), and a new job's first state can be gone by
        # the time a JobManager's watch on it is set (a few ZooKeeper round trips).
        assert states[0] in (JobState.INITIALIZING, JobState.SCHEDULED, JobState.RUNNING)
    finished = events[-1]  # the standby's stream has no filter: every job's events
    assert finished.job_id == "ordered" and finished.state is JobState.FINISHED
    assert finished.submitter and finished.epoch >= 1 and finished.at > 0, finished


def test_last_event_id_resumes_where_the_stream_stopped(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    leader, standby = _jobmanagers(cluster)
    with recording(standby, job="resumed") as first:
        first.wait_started()
        gate = _submit_gated(cluster, tmp_path, "resumed")
        first.wait_for("resumed", JobState.RUNNING)
        cursor = first.events[-1].id
    assert cursor is not None
    gate.touch()  # the job finishes while nobody listens
    with cluster.client() as client:
        wait_until(lambda: client.job("resumed").state is JobState.FINISHED, 30)
    with recording(
        standby, job="resumed", headers={**auth_headers(), "last-event-id": cursor}
    ) as again:
        again.wait_for("resumed", JobState.FINISHED)
        assert again.events[0].name == JOB_EVENT, again.events  # replayed, no reset
    # The same cursor means nothing to the other JobManager: it says re-read.
    with recording(
        leader, job="resumed", headers={**auth_headers(), "last-event-id": cursor}
    ) as other:
        other.wait_started()
        reset = ResetEvent.model_validate_json(other.events[0].data)
        assert other.events[0].name == RESET_EVENT and reset.why == "cannot-replay"


def _long_poll(proc: Proc, job_id: str, **params: str) -> httpx.Response:
    return httpx.get(
        f"{proc.address}/v1/jobs/{job_id}", params=params, headers=auth_headers(), timeout=30
    )


def test_long_poll_answers_on_change_or_at_its_deadline(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    _, standby = _jobmanagers(cluster)
    gate = _submit_gated(cluster, tmp_path, "polled")
    with cluster.client() as client:
        wait_until(lambda: client.job("polled").state is JobState.RUNNING, 30)
    # Nothing changes: the answer comes at the deadline, still RUNNING.
    idle = _long_poll(standby, "polled", wait="1", since="RUNNING")
    assert idle.json()["state"] == "RUNNING"
    assert float(idle.headers[LONG_POLL_HEADER]) >= 1.0
    # A change: the answer comes with it, long before the deadline.
    opener = threading.Timer(0.5, gate.touch)
    opener.start()
    changed = _long_poll(standby, "polled", wait="30", since="RUNNING")
    opener.join()
    assert changed.json()["state"] == "FINISHED"
    assert float(changed.headers[LONG_POLL_HEADER]) < 29
    # Bad input: a clear 400.
    for params in ({"wait": "61"}, {"wait": "-1"}, {"wait": "1", "since": "SLEEPING"}):
        bad = _long_poll(standby, "polled", **params)
        assert bad.status_code == 400 and bad.json()["code"] == "bad_request", bad.text


def test_events_need_a_token_and_end_when_it_is_revoked(cluster: ProcessCluster) -> None:
    _, standby = _jobmanagers(cluster)
    anonymous = httpx.get(standby.address + "/v1/events", timeout=10)
    assert anonymous.status_code == 401
    bad = httpx.get(
        standby.address + "/v1/events", params={"state": "SLEEPING"}, headers=auth_headers()
    )
    assert bad.status_code == 400 and "SLEEPING" in bad.json()["message"]
    typo = httpx.get(  # a parameter it does not know: refused, not a stream of everything
        standby.address + "/v1/events", params={"jobs": "x"}, headers=auth_headers()
    )
    assert typo.status_code == 400 and "jobs" in typo.json()["message"]
    with cluster.client() as client:
        viewer = client.create_token("events-viewer", "viewer")
        with recording(standby, headers=auth_headers(viewer.token)) as stream:
            stream.wait_started()
            assert stream.status == 200
            client.revoke_token(viewer.info.id)
            # The next keep-alive (1 s here) finds the token revoked (cache: 2 s).
            assert stream.ended.wait(15), "the stream outlived its revoked token"


class CountingTransport(httpx.HTTPTransport):
    """Counts what the client sends, by JobManager and path (what each server receives)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((f"{request.url.host}:{request.url.port}", request.url.path))
        return super().handle_request(request)

    def count(self, path: str, port: int | None = None) -> int:
        return sum(
            1
            for where, p in self.sent
            if p == path and (port is None or where.endswith(f":{port}"))
        )


def _wait_in_thread(client: Client, job_id: str) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(client.wait(job_id, timeout=60, poll=0.05))
        except Exception as exc:  # handed to the test's thread
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_client_wait_follows_events_without_polling(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    leader, standby = _jobmanagers(cluster)
    transport = CountingTransport()
    gate = _submit_gated(cluster, tmp_path, "awaited")
    with Client(
        [standby.address, leader.address], token=kit_admin_token(), transport=transport
    ) as client:
        thread, outcome = _wait_in_thread(client, "awaited")
        wait_until(lambda: transport.count("/v1/events") == 1, 10, "the wait's stream")
        with cluster.client() as observer:
            # Polling every 50 ms (poll=) would read the job ten times in half a second.
            wait_until(lambda: observer.job("awaited").state is JobState.RUNNING, 30)
        gate.touch()
        thread.join(30)
    assert outcome and getattr(outcome[0], "state", None) == "FINISHED", outcome
    assert transport.count("/v1/events") == 1
    # One read after the stream's reset, one at the end: no poll.
    assert transport.count("/v1/jobs/awaited") <= 2, transport.sent


def test_client_wait_gives_up_at_its_timeout_while_the_job_stays_quiet(
    cluster: ProcessCluster, tmp_path: Path
) -> None:
    gate = _submit_gated(cluster, tmp_path, "quiet")
    outcome: list[object] = []

    def run() -> None:
        with cluster.client() as client:
            try:
                outcome.append(client.wait("quiet", timeout=2, poll=0.05))
            except Exception as exc:  # handed to the test's thread
                outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    # The stream's keep-alives (every second here) must not keep the wait past its timeout.
    thread.join(30)
    gate.touch()
    assert not thread.is_alive(), "Client.wait(timeout=2) still waiting after 30 s"
    assert outcome and isinstance(outcome[0], WaitTimeoutError), outcome


@pytest.mark.slow  # about 8 s: a failover; the default suite stays within its budget
def test_client_wait_survives_a_leader_sigkill(cluster: ProcessCluster, tmp_path: Path) -> None:
    """Last in the module: the leader dies."""
    leader, standby = _jobmanagers(cluster)
    leader_port = int(leader.address.rsplit(":", 1)[1])
    standby_port = int(standby.address.rsplit(":", 1)[1])
    transport = CountingTransport()
    gate = _submit_gated(cluster, tmp_path, "failed-over")
    with Client(
        [leader.address, standby.address], token=kit_admin_token(), transport=transport
    ) as client:
        thread, outcome = _wait_in_thread(client, "failed-over")
        wait_until(lambda: transport.count("/v1/events", leader_port) == 1, 10, "stream on leader")
        leader.signal(signal.SIGKILL)
        # The client's stream moves to the standby, which takes over and adopts the attempt.
        wait_until(lambda: transport.count("/v1/events", standby_port) >= 1, 30, "stream moved")
        cluster.wait_ready(taskmanagers=1, timeout=30)
        gate.touch()
        thread.join(60)
    assert outcome and getattr(outcome[0], "state", None) == "FINISHED", outcome
