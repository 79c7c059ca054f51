"""A JobManager's REST socket answers without Nagle's delay: its connections have TCP_NODELAY.

The JobManager binds its own listening socket and hands it to uvicorn. asyncio sets
TCP_NODELAY on accepted connections only when the socket's protocol is IPPROTO_TCP; a socket
made with protocol 0 left Nagle on, and an answer written in two segments (headers, then body)
waited for the client's delayed ACK: 40 ms or more per request on a kept-alive connection (and
on every new TLS connection). benchmarks/security_cost.py measures the latency; this test
checks the cause, on connections accepted by asyncio as uvicorn accepts them, on asyncio's
own loop and on uvloop's (which ``steward.tls.serving`` serves on).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import pytest
import uvloop

from steward.tls.serving import bind_listener


def test_the_listening_socket_is_a_tcp_socket() -> None:
    sock = bind_listener("127.0.0.1", 0, port_key="jobmanager.port")
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


@pytest.mark.parametrize(
    "loop_factory", [asyncio.new_event_loop, uvloop.new_event_loop], ids=["asyncio", "uvloop"]
)
def test_connections_accepted_on_it_have_nagle_off(
    loop_factory: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    async def nodelay_of_an_accepted_connection() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def on_connect(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            conn = writer.get_extra_info("socket")
            accepted.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        sock = bind_listener("127.0.0.1", 0, port_key="jobmanager.port")
        server = await asyncio.start_server(on_connect, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            try:
                return await asyncio.wait_for(accepted, 10)
            finally:
                writer.close()

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        assert runner.run(nodelay_of_an_accepted_connection()) != 0
