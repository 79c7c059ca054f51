"""A JobManager's REST socket answers a kept-alive connection without Nagle's delay.

The JobManager binds its own listening socket and hands it to uvicorn. asyncio sets
TCP_NODELAY on accepted connections only when the socket's protocol is IPPROTO_TCP; a socket
made with protocol 0 left Nagle on, and an answer written in two segments (headers, then body)
waited for the client's delayed ACK: 40 ms or more per request on a kept-alive connection (and
on every new TLS connection), found by benchmarks/security_cost.py.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from steward.jobmanager.manager import _bind
from steward.testing.waiting import wait_until

DELAYED_ACK = 0.040
"""Linux's shortest delayed ACK: a request that waited for one took at least this long."""


@pytest.fixture
def address() -> Iterator[str]:
    app = FastAPI()

    @app.get("/small")
    def small() -> dict[str, int]:
        return {"answer": 42}

    sock = _bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    try:
        wait_until(lambda: server.started, 10, "uvicorn serving")
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_requests_on_a_kept_alive_connection_do_not_wait_for_a_delayed_ack(address: str) -> None:
    with httpx.Client() as client:
        client.get(f"{address}/small").raise_for_status()
        took = []
        for _ in range(15):
            started = time.perf_counter()
            client.get(f"{address}/small").raise_for_status()
            took.append(time.perf_counter() - started)
    assert statistics.median(took) < DELAYED_ACK * 0.75, took
