"""``steward logs``: which attempt it asks the API for, what it passes on, what it says after
following, and clear errors.

The JobManager is a fake (the command's logic is what is tested here): it serves the job views
and the log route from memory. The real route, proxy and TaskManager are tested end to end in
tests/e2e/cluster/test_logs.py; the log is never read from the local disk any more, so this
test's working directory holds none.
"""

from __future__ import annotations

import httpx

from unit.fake_jobmanager import FakeJobManagers, attempt_json, error, job_json, result_json
from unit.steward_cli import Run

TWO_ATTEMPTS = job_json(
    "x",
    "FINISHED",
    attempts=[
        attempt_json(1, "FAILED", taskmanager="tm-1"),
        attempt_json(2, "FINISHED", taskmanager="tm-2"),
    ],
    attempt_count=2,
    result=result_json("x", value=1),
)
LOGS = {1: b"first attempt\n", 2: b"second attempt, line 1\nline 2\n"}


def serve_logs(fake: FakeJobManagers, logs: dict[int, bytes] = LOGS) -> list[httpx.Request]:
    """The fake answers ``/v1/jobs/x/attempts/N/log`` from ``logs``; returns those requests."""
    asked: list[httpx.Request] = []
    routes = fake.route

    def route(request: httpx.Request) -> httpx.Response:
        parts = request.url.path.split("/")
        if parts[-1] != "log":
            return routes(request)
        asked.append(request)
        number = int(parts[-2])
        if number not in logs:
            return error(410, "log_removed", f"the log of attempt {number} of job x was removed")
        start = int(request.url.params.get("offset", "0"))
        return httpx.Response(200, content=logs[number][start:])

    fake.route = route  # type: ignore[method-assign]
    return asked


def test_the_last_attempts_log_is_printed_by_default(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("x", TWO_ATTEMPTS)
    asked = serve_logs(fake)
    code, out, _err = run("logs", "x")
    assert (code, out) == (0, "second attempt, line 1\nline 2\n")
    assert asked[-1].url.path == "/v1/jobs/x/attempts/2/log"
    code, out, _err = run("logs", "x", "--attempt", "1")
    assert (code, out) == (0, "first attempt\n")
    assert asked[-1].url.path == "/v1/jobs/x/attempts/1/log"


def test_tail_offset_and_follow_are_the_routes_parameters(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("x", TWO_ATTEMPTS)
    asked = serve_logs(fake)
    code, out, _err = run("logs", "x", "--offset", "7")
    assert (code, out) == (0, "attempt, line 1\nline 2\n")
    code, _out, _err = run("logs", "x", "--tail", "3", "-f")
    assert code == 0
    assert dict(asked[-1].url.params) == {"offset": "0", "tail": "3", "follow": "true"}


def test_following_says_when_the_job_went_on_to_another_attempt(
    fake: FakeJobManagers, run: Run
) -> None:
    restarted = job_json(
        "x",
        "RUNNING",
        attempts=[attempt_json(1, "FAILED"), attempt_json(2, "RUNNING")],
    )
    fake.add_job("x", TWO_ATTEMPTS, restarted)
    serve_logs(fake)
    code, out, err = run("logs", "x", "--attempt", "1", "--follow")
    assert (code, out) == (0, "first attempt\n")
    assert "attempt 1 of x ended (FAILED); the job went on to attempt 2" in err
    assert "steward logs x --attempt 2 -f" in err


def test_refusals_are_one_clear_line(fake: FakeJobManagers, run: Run) -> None:
    fake.add_job("x", TWO_ATTEMPTS)
    serve_logs(fake, {2: b"kept\n"})
    code, out, err = run("logs", "x", "--attempt", "1")
    assert (code, out) == (2, "")
    assert "the log of attempt 1 of job x was removed" in err
    assert "Traceback" not in err
    fake.add_job("y", job_json("y", "SCHEDULED"))
    code, _out, err = run("logs", "y")
    assert code != 0
    assert "job y has no attempt yet (it is SCHEDULED)" in err
    code, _out, err = run("logs", "nope")
    assert code != 0
    assert "nope" in err
    assert "Traceback" not in err
