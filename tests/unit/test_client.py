"""steward.Client's own logic against a fake JobManager (httpx.MockTransport): error mapping,
failover between addresses, Retry-After, idempotent submission and packaging.

The fake is deliberately small: these tests are about what the client does with answers; the
real REST API is exercised end to end in tests/e2e/cluster.
"""

from __future__ import annotations

import base64
import io
import time
import zipfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import psutil
import pytest

from steward.client import Client, JobTerminatedError
from steward.client import failover as failover_module
from steward.client.discovery import discover_addresses
from steward.client.failover import Backoff
from steward.cluster.workdir import ClusterState, ProcessEntry, Role, StateDir, save_state
from steward.config import load
from steward.errors import (
    ApiError,
    ClusterUnreachableError,
    JobExistsError,
    JobNotFoundError,
    JobRejectedError,
    NoLeaderError,
    WaitTimeoutError,
)
from steward.wire.jobs import FixedDelayRestart
from steward.wire.states import JobState
from unit.fake_jobmanager import FakeJobManagers, error, job_json, result_json

A = "http://jm-a:8081"
B = "http://jm-b:8081"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def fake() -> FakeJobManagers:
    return FakeJobManagers()


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every backoff the client asked for; nothing actually waits."""
    calls: list[float] = []
    monkeypatch.setattr(failover_module, "_sleep", calls.append)
    return calls


@pytest.fixture
def client(fake: FakeJobManagers, slept: list[float]) -> Iterator[Client]:
    with Client([A, B], timeout=5.0, transport=httpx.MockTransport(fake)) as c:
        yield c


# ---------------------------------------------------------------- error mapping


def test_unknown_job_is_job_not_found_with_the_servers_message(client: Client) -> None:
    with pytest.raises(JobNotFoundError, match="no job 'nope' in this cluster") as caught:
        client.job("nope")
    assert caught.value.job_id == "nope"


def test_invalid_job_id_is_not_found_without_a_request(
    client: Client, fake: FakeJobManagers
) -> None:
    with pytest.raises(JobNotFoundError):
        client.job("../etc")
    assert fake.requests == []


def test_cancel_of_terminated_job_carries_its_result(client: Client, fake: FakeJobManagers) -> None:
    fake.script.append(
        lambda _r: error(
            409, "job_terminated", "job 'j' already FINISHED", result=result_json("j", value=7)
        )
    )
    with pytest.raises(JobTerminatedError, match="already FINISHED") as caught:
        client.cancel("j")
    assert caught.value.status == 409
    assert caught.value.result is not None
    assert caught.value.result.value == 7


def test_rejected_submission_is_job_rejected(
    client: Client, fake: FakeJobManagers, tmp_path: Path
) -> None:
    fake.script.append(lambda _r: error(400, "bad_request", "artifact: not a zip archive"))
    pipeline = tmp_path / "p.py"
    pipeline.write_text("def main(ctx): return 1\n")
    with pytest.raises(JobRejectedError, match="not a zip archive"):
        client.submit(pipeline)


def test_other_errors_are_api_errors_with_status_and_code(
    client: Client, fake: FakeJobManagers
) -> None:
    fake.script.append(lambda _r: error(409, "job_not_terminated", "job 'j' is RUNNING"))
    with pytest.raises(ApiError, match="is RUNNING") as caught:
        client.result("j")
    assert (caught.value.status, caught.value.code) == (409, "job_not_terminated")


def test_a_non_json_error_body_still_gives_a_clear_api_error(
    client: Client, fake: FakeJobManagers
) -> None:
    fake.script.append(lambda _r: httpx.Response(500, text="<html>Internal Server Error</html>"))
    with pytest.raises(ApiError, match="HTTP 500") as caught:
        client.cluster()
    assert caught.value.code == "http_500"


# ---------------------------------------------------------------- failover


def test_a_refused_address_fails_over_to_the_next_and_sticks_to_it(
    client: Client, fake: FakeJobManagers
) -> None:
    # Given the first JobManager is down
    fake.down.add(A)
    fake.add_job("j")
    # When asking twice
    assert client.job("j").state is JobState.RUNNING
    assert client.job("j").state is JobState.RUNNING
    # Then the second address answered, and the second call went straight to it
    hosts = [r.url.host for r in fake.requests]
    assert hosts == ["jm-a", "jm-b", "jm-b"]
    assert client.addresses == [B, A]


def test_a_timeout_fails_over_to_the_next_address(client: Client, fake: FakeJobManagers) -> None:
    def hang(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    fake.script.append(hang)
    fake.add_job("j")
    assert client.job("j").job_id == "j"
    assert [r.url.host for r in fake.requests] == ["jm-a", "jm-b"]


def test_503_with_retry_after_is_retried_after_at_least_that_long(
    client: Client, fake: FakeJobManagers, slept: list[float]
) -> None:
    # Given both JobManagers answer 503 no_leader once (an election is under way)
    for _ in range(2):
        fake.script.append(
            lambda _r: httpx.Response(
                503,
                json={"code": "no_leader", "message": "no leader yet"},
                headers={"Retry-After": "2"},
            )
        )
    fake.add_job("j")
    # When asking, the client waits the server's Retry-After, then succeeds
    assert client.job("j").job_id == "j"
    assert slept == [2.0]
    assert len(fake.requests) == 3


def test_no_leader_until_the_deadline_is_no_leader_error(fake: FakeJobManagers) -> None:
    fake.route = lambda _r: error(503, "no_leader", "no leader is elected")  # type: ignore[method-assign]
    with (
        Client([A], timeout=0.3, transport=httpx.MockTransport(fake)) as client,
        pytest.raises(NoLeaderError, match="no leader is elected"),
    ):
        client.jobs()


def test_nobody_answering_until_the_deadline_is_cluster_unreachable(
    fake: FakeJobManagers,
) -> None:
    fake.down.update({A, B})
    started = time.monotonic()
    with (
        Client(
            [A, B], timeout=0.3, transport=httpx.MockTransport(fake), backoff=Backoff(0.05, 0.1)
        ) as client,
        pytest.raises(ClusterUnreachableError, match="connection refused") as caught,
    ):
        client.jobs()
    assert time.monotonic() - started < 3.0
    assert A in str(caught.value)
    assert B in str(caught.value)
    assert len(fake.requests) > 2  # it kept retrying both until the deadline


def test_backoff_grows_between_rounds_up_to_its_maximum(fake: FakeJobManagers) -> None:
    fake.down.add(A)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 4:
            fake.down.clear()

    fake.add_job("j")
    original = failover_module._sleep
    failover_module._sleep = sleep
    try:
        with Client(
            [A], timeout=60, transport=httpx.MockTransport(fake), backoff=Backoff(0.1, 0.3)
        ) as client:
            client.job("j")
    finally:
        failover_module._sleep = original
    assert waits == pytest.approx([0.1, 0.2, 0.3, 0.3])


# ---------------------------------------------------------------- submission


def test_retried_submit_answered_job_exists_for_its_own_id_is_success(
    client: Client, fake: FakeJobManagers
) -> None:
    # Given a JobManager that accepts the submission but whose answer is lost
    def accepted_then_lost(request: httpx.Request) -> httpx.Response:
        fake.route(request)
        raise httpx.ReadTimeout("timed out", request=request)

    fake.script.append(accepted_then_lost)
    # When submitting
    view = client.submit(EXAMPLES / "long_running.py", args=["--ticks", "2"])
    # Then the retry's 409 job_exists is recognised as our own job, which is returned
    posts = fake.posts()
    assert len(posts) == 2
    assert posts[0]["spec"]["job_id"] == posts[1]["spec"]["job_id"] == view.job_id
    assert list(fake.views) == [view.job_id]
    assert view.job_id.startswith("long_running-")


def test_a_standbys_outcome_unknown_counts_as_maybe_accepted(
    client: Client, fake: FakeJobManagers
) -> None:
    # Given a standby whose forward reached the leader, which stored the job but never
    # answered, and a JobManager that does not say which submission made a job
    def stored_then_unknown(request: httpx.Request) -> httpx.Response:
        fake.route(request)
        return error(504, "outcome_unknown", "the leader did not answer")

    fake.say_digest = False
    fake.script.append(stored_then_unknown)
    # When submitting, Then the retry's job_exists is our own job
    view = client.submit(EXAMPLES / "long_running.py", job_id="mine")
    assert view.job_id == "mine"
    assert len(fake.posts()) == 2


def test_no_leader_is_not_maybe_accepted(client: Client, fake: FakeJobManagers) -> None:
    # no_leader says the request never reached a leader: a job_exists after it is not ours.
    fake.say_digest = False
    fake.add_job("mine")
    fake.script.append(lambda _request: error(503, "no_leader", "no leader"))
    with pytest.raises(JobExistsError):
        client.submit(EXAMPLES / "long_running.py", job_id="mine")


def test_submitting_the_same_submission_again_returns_the_job(
    client: Client, fake: FakeJobManagers
) -> None:
    # The same id, spec and pipeline: the same body, so the same submission (idempotent).
    first = client.submit(EXAMPLES / "long_running.py", job_id="same", args=["--ticks", "2"])
    again = client.submit(EXAMPLES / "long_running.py", job_id="same", args=["--ticks", "2"])
    assert again.job_id == first.job_id == "same"
    assert list(fake.views) == ["same"]

    # Another spec under that id is another job: refused, even after a lost answer.
    def lost(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    fake.script.append(lost)
    with pytest.raises(JobExistsError, match="another spec or pipeline"):
        client.submit(EXAMPLES / "long_running.py", job_id="same", args=["--ticks", "3"])


def test_a_submission_without_an_answer_names_its_job_id(
    client: Client, fake: FakeJobManagers
) -> None:
    fake.down.update({A, B})
    with pytest.raises(ClusterUnreachableError, match="job mine may have been submitted"):
        client.submit(EXAMPLES / "long_running.py", job_id="mine")


def test_first_answer_job_exists_is_an_error(client: Client, fake: FakeJobManagers) -> None:
    fake.add_job("mine")
    with pytest.raises(JobExistsError, match="already running"):
        client.submit(EXAMPLES / "long_running.py", job_id="mine")


def test_job_exists_after_a_refused_connection_is_still_an_error(
    client: Client, fake: FakeJobManagers
) -> None:
    # A refused connection proves the first attempt never arrived: the id was taken before.
    fake.down.add(A)
    fake.add_job("mine")
    with pytest.raises(JobExistsError):
        client.submit(EXAMPLES / "long_running.py", job_id="mine")


def test_submit_sends_the_spec_it_was_given_and_a_generated_id(
    client: Client, fake: FakeJobManagers
) -> None:
    client.submit(
        EXAMPLES / "long_running.py",
        args=["--ticks", "2"],
        name="ticker",
        slots=2,
        restart=FixedDelayRestart(attempts=1, delay=0.5),
        spark_conf={"spark.ui.enabled": "false"},
        kind="streaming",
        labels={"team": "data"},
    )
    (posted,) = fake.posts()
    spec = posted["spec"]
    assert spec.pop("job_id").startswith("long_running-")
    assert spec == {
        "args": ["--ticks", "2"],
        "name": "ticker",
        "slots": 2,
        "restart_strategy": {"kind": "fixed-delay", "attempts": 1, "delay": 0.5},
        "spark_conf": {"spark.ui.enabled": "false"},
        "kind": "streaming",
        "labels": {"team": "data"},
    }
    assert posted["artifact"]["filename"] == "long_running.py"
    source = (EXAMPLES / "long_running.py").read_bytes()
    assert base64.b64decode(posted["artifact"]["data_b64"]) == source


@pytest.mark.parametrize("timeout", [5400, "90m", timedelta(minutes=90)])
def test_submit_sends_the_timeout_in_seconds_and_the_env(
    client: Client, fake: FakeJobManagers, timeout: object
) -> None:
    client.submit(EXAMPLES / "long_running.py", timeout=timeout, env={"GREETING": "hi"})
    (posted,) = fake.posts()
    assert posted["spec"]["timeout"] == 5400.0
    assert posted["spec"]["env"] == {"GREETING": "hi"}


def test_a_bad_timeout_or_env_is_rejected_before_any_request(
    client: Client, fake: FakeJobManagers
) -> None:
    with pytest.raises(JobRejectedError, match="timeout"):
        client.submit(EXAMPLES / "long_running.py", timeout="forever")
    with pytest.raises(JobRejectedError, match="env"):
        client.submit(EXAMPLES / "long_running.py", env={"BAD NAME": "x"})
    assert fake.requests == []


def test_a_bad_spec_is_rejected_before_any_request(client: Client, fake: FakeJobManagers) -> None:
    with pytest.raises(JobRejectedError, match="slots"):
        client.submit(EXAMPLES / "long_running.py", slots=0)
    with pytest.raises(JobRejectedError, match="job_id"):
        client.submit(EXAMPLES / "long_running.py", job_id="no spaces")
    assert fake.requests == []


@pytest.mark.parametrize(
    ("name", "needle"),
    [("missing.py", "does not exist"), ("notes.txt", "must be a .py file"), ("bad.zip", "zip")],
)
def test_unusable_pipeline_paths_fail_before_any_request(
    client: Client, fake: FakeJobManagers, tmp_path: Path, name: str, needle: str
) -> None:
    if name != "missing.py":
        (tmp_path / name).write_text("not a pipeline")
    with pytest.raises(JobRejectedError, match=needle):
        client.submit(tmp_path / name)
    assert fake.requests == []


def test_a_folder_is_zipped_with_paths_relative_to_it(
    client: Client, fake: FakeJobManagers, tmp_path: Path
) -> None:
    # Given a pipeline folder with a package, byte code and a hidden folder
    folder = tmp_path / "report"
    (folder / "lib").mkdir(parents=True)
    (folder / "main.py").write_text("from lib.util import f\ndef main(ctx): return f()\n")
    (folder / "lib" / "__init__.py").write_text("")
    (folder / "lib" / "util.py").write_text("def f(): return 1\n")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"\0")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref")
    # When submitting it twice
    client.submit(folder)
    client.submit(folder)
    # Then a zip of its sources was sent, the same bytes both times
    first, second = fake.posts()
    assert first["artifact"]["filename"] == "report.zip"
    assert first["artifact"]["data_b64"] == second["artifact"]["data_b64"]
    data = base64.b64decode(first["artifact"]["data_b64"])
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert sorted(archive.namelist()) == ["lib/__init__.py", "lib/util.py", "main.py"]
        assert archive.read("lib/util.py") == b"def f(): return 1\n"
    assert first["spec"]["job_id"].startswith("report-")


def test_a_zip_is_sent_as_it_is(client: Client, fake: FakeJobManagers, tmp_path: Path) -> None:
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("main.py", "def main(ctx): return 1\n")
    client.submit(path)
    (posted,) = fake.posts()
    assert posted["artifact"]["filename"] == "bundle.zip"
    assert base64.b64decode(posted["artifact"]["data_b64"]) == path.read_bytes()


def test_submit_raw_fills_in_only_a_missing_job_id(client: Client, fake: FakeJobManagers) -> None:
    client.submit_raw({"entrypoint": "main", "slots": 0}, "x.py", b"def main(ctx): pass\n")
    (posted,) = fake.posts()
    assert posted["spec"]["slots"] == 0  # not checked: the server decides
    assert posted["spec"]["job_id"].startswith("x-")


# ---------------------------------------------------------------- waiting


def test_wait_reports_every_view_and_returns_the_result(
    client: Client, fake: FakeJobManagers
) -> None:
    states = iter(["SCHEDULED", "RUNNING", "FINISHED"])
    fake.route = lambda r: (  # type: ignore[method-assign]
        httpx.Response(200, json=result_json("j", value={"ticks": 2}))
        if r.url.path.endswith("/result")
        else error(404, "not_found", "an older JobManager: no events")
        if r.url.path == "/v1/events"
        else httpx.Response(200, json=job_json("j", next(states)))
    )
    seen: list[JobState] = []
    result = client.wait("j", poll=0.01, on_update=lambda view: seen.append(view.state))
    assert seen == [JobState.SCHEDULED, JobState.RUNNING, JobState.FINISHED]
    assert result.value == {"ticks": 2}


def test_wait_uses_the_result_embedded_in_a_terminal_view(
    client: Client, fake: FakeJobManagers
) -> None:
    fake.route = lambda _r: httpx.Response(  # type: ignore[method-assign]
        200, json=job_json("j", "FAILED", result=result_json("j", "FAILED"))
    )
    assert client.wait("j").state.value == "FAILED"
    # The answer to /v1/events is no stream (an older JobManager): one poll, no result call.
    assert [r.url.path for r in fake.requests] == ["/v1/events", "/v1/jobs/j"]


def test_wait_gives_up_after_its_timeout(client: Client, fake: FakeJobManagers) -> None:
    fake.add_job("j")
    with pytest.raises(WaitTimeoutError, match="still RUNNING"):
        client.wait("j", timeout=0.1, poll=0.02)


# ---------------------------------------------------------------- discovery


def test_rest_address_is_used_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = load(overrides={"rest.address": "jm1:8081, https://jm2/"}, environ={})
    assert discover_addresses(config, tmp_path) == ["http://jm1:8081", "https://jm2"]


def _local_cluster(workdir: Path, pid: int, create_time: float, marker: str) -> None:
    entries = [
        ProcessEntry(
            role=role, id=f"{role}-1", pid=pid, create_time=create_time, marker=marker,
            address=address, log="l",
        )
        for role, address in [(Role.JOBMANAGER, A), (Role.TASKMANAGER, None), (Role.JOBMANAGER, B)]
    ]  # fmt: skip
    state = ClusterState(
        cluster_id="c", quorum="q:1", managed_zookeeper=True, config="x", started_at=1.0,
        processes=entries,
    )  # fmt: skip
    save_state(StateDir.of(workdir), state)


def test_local_cluster_json_gives_the_jobmanagers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a cluster.json whose JobManager entries describe a live process (this one)
    monkeypatch.chdir(tmp_path)
    me = psutil.Process()
    _local_cluster(tmp_path, me.pid, me.create_time(), me.cmdline()[0])
    # Then its JobManagers' addresses are used, with no configuration at all
    assert discover_addresses(load(environ={}), tmp_path) == [A, B]
    assert Client(config=load(environ={})).addresses == [A, B]


def test_a_stopped_local_cluster_is_reported_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a cluster.json whose processes are gone (a pid reused by another process is gone too)
    monkeypatch.chdir(tmp_path)
    me = psutil.Process()
    _local_cluster(tmp_path, me.pid, me.create_time() - 3600, me.cmdline()[0])
    # Then discovery says so instead of retrying dead addresses
    with pytest.raises(ClusterUnreachableError, match="is not running"):
        discover_addresses(load(environ={}), tmp_path)


@pytest.mark.parametrize(
    ("method", "path", "repeats"),
    [
        ("GET", "/v1/jobs/j", True),
        ("PUT", "/v1/contents/abc", True),
        ("POST", "/v1/jobs", True),
        ("POST", "/v1/jobs/batch", True),
        ("POST", "/v1/jobs/j/cancel", False),
        ("POST", "/batches", False),
    ],
)
def test_only_idempotent_requests_and_submissions_wait_out_a_429(
    method: str, path: str, repeats: bool
) -> None:
    assert failover_module.repeatable(method, path) is repeats


def test_a_429s_wait_is_its_retry_after_jittered_upward() -> None:
    limited = httpx.Response(429, headers={"retry-after": "2"})
    waits = [failover_module.rate_limit_wait(limited, 0.2) for _ in range(200)]
    assert all(2.0 <= wait <= 2.0 * (1 + failover_module.RATE_LIMIT_JITTER) for wait in waits)
    assert len(set(waits)) > 1
    assert failover_module.rate_limit_wait(httpx.Response(429), 0.4) >= 0.4


def test_the_same_pipeline_is_packaged_once_until_its_files_change(
    client: Client, fake: FakeJobManagers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from steward.client import packaging

    made: list[Path] = []
    real = packaging.package
    monkeypatch.setattr(packaging, "package", lambda path: made.append(path) or real(path))
    folder = tmp_path / "pipeline"
    folder.mkdir()
    (folder / "__main__.py").write_text("def main(ctx):\n    return 1\n")
    for n in range(3):
        client.submit(folder, job_id=f"same-{n}")
    assert len(made) == 1
    (folder / "helper.py").write_text("X = 1\n")  # a file came: packaged again, with it
    client.submit(folder, job_id="changed")
    assert len(made) == 2
    sent = zipfile.ZipFile(io.BytesIO(base64.b64decode(fake.posts()[-1]["artifact"]["data_b64"])))
    assert sorted(sent.namelist()) == ["__main__.py", "helper.py"]
    bodies = {post["artifact"]["data_b64"] for post in fake.posts()[:3]}
    assert len(bodies) == 1
