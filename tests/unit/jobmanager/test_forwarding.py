"""A standby's forward: ``no_leader`` only when the request never left, ``outcome_unknown``
when it was sent and the leader never answered (issue 23, item 4). The leader here is a real
socket on loopback that reads the request and closes the connection without a word, as a
leader killed between storing a job and answering does.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.store.blob import BlobStore
from steward.wire.records import LeaderInfo
from unit.jobmanager.test_rest_app import InMemoryJobManager, client_of, submission


@pytest.fixture
def silent_leader() -> Iterator[str]:
    """The address of a server that takes each request and hangs up without answering."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    server.close()
    thread.join(5)


def _standby(tmp_path: Path, address: str) -> InMemoryJobManager:
    leader = LeaderInfo(contender="jm-1", address=address, epoch=3)
    return InMemoryJobManager(blobs=BlobStore(str(tmp_path)), id="jm-2", known_leader=leader)


def test_a_forward_sent_and_never_answered_is_outcome_unknown(
    tmp_path: Path, silent_leader: str
) -> None:
    answer = client_of(_standby(tmp_path, silent_leader)).post("/v1/jobs", json=submission("job-1"))
    assert (answer.status_code, answer.json()["code"]) == (504, "outcome_unknown")
    assert answer.headers["retry-after"] == "1"
    assert "may or may not have been carried out" in answer.json()["message"]


def test_a_forward_that_never_left_is_no_leader(tmp_path: Path) -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    address = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()  # nothing listens there: the connection is refused
    answer = client_of(_standby(tmp_path, address)).post("/v1/jobs", json=submission("job-1"))
    assert (answer.status_code, answer.json()["code"]) == (503, "no_leader")
