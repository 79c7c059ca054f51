"""``Client.log`` when a JobManager goes away in the middle of a log: the stream is opened
again on another JobManager from the next byte, so every byte arrives once.

The JobManagers are fakes (``httpx.MockTransport``): what is tested is the client's resuming.
The route itself is tested end to end in tests/e2e/cluster/test_logs.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from steward.client import Client
from steward.errors import ApiError
from steward.wire.logs import START_HEADER
from unit.fake_jobmanager import FakeJobManagers, attempt_json, error, job_json

LOG = b"".join(f"line {n}\n".encode() for n in range(100))


class Breaks(httpx.SyncByteStream):
    """Sends ``data``, then the connection drops (the JobManager died)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __iter__(self) -> Iterator[bytes]:
        yield self.data
        raise httpx.ReadError("connection reset by peer")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeJobManagers:
    monkeypatch.setattr("steward.client.failover._sleep", lambda _s: None)
    api = FakeJobManagers()
    api.add_job("x", job_json("x", "RUNNING", attempts=[attempt_json(1)]))
    return api


def test_a_stream_cut_in_the_middle_goes_on_from_the_next_byte_elsewhere(
    fake: FakeJobManagers,
) -> None:
    asked: list[httpx.Request] = []

    def route(request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith("/log"):
            return FakeJobManagers.route(fake, request)
        asked.append(request)
        start = int(request.url.params["offset"])
        if request.url.host == "jm-a":
            return httpx.Response(200, headers={START_HEADER: str(start)}, stream=Breaks(LOG[:300]))
        return httpx.Response(200, headers={START_HEADER: str(start)}, content=LOG[start:])

    fake.route = route  # type: ignore[method-assign]
    client = Client(["http://jm-a:8081", "http://jm-b:8081"], transport=fake.transport())
    with client:
        got = b"".join(client.log("x", follow=True))
    assert got == LOG
    assert [(r.url.host, r.url.params["offset"]) for r in asked] == [("jm-a", "0"), ("jm-b", "300")]
    assert asked[1].url.params["follow"] == "true"


def test_a_refusal_is_raised_by_the_call_and_not_retried(fake: FakeJobManagers) -> None:
    asked: list[httpx.Request] = []

    def route(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        return error(503, "taskmanager_gone", "attempt 1 ran on TaskManager tm-1, not registered")

    fake.script = [lambda r: FakeJobManagers.route(fake, r), route]
    client = Client(["http://jm-a:8081", "http://jm-b:8081"], transport=fake.transport())
    with client, pytest.raises(ApiError, match="TaskManager tm-1"):
        client.log("x")
    assert len(asked) == 1
