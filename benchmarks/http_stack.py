"""The CPU a Steward server spends on one small HTTP request, by HTTP stack.

One process serves the same tiny ASGI app (it reads a 232-byte body and answers 232 bytes, the
size of an unchanged heartbeat and its reply) on three stacks at once, each on a thread of its
own as Steward serves: uvicorn's h11 protocol on asyncio's loop (what Steward served with
before), uvicorn's httptools protocol on asyncio's loop, and Steward's own
``steward.tls.serving.serve_on_thread`` (httptools with its bounded head, on uvloop). A client
in another process (so it takes none of the server's interpreter) sends ``--requests`` POSTs
one after another on one kept-alive connection (new each batch) to one stack, then to the
next, for ``--batches`` rounds; the server process's CPU (user + system: the parser, the
loop, the app and the kernel's loopback TCP it pays) over each batch, divided by its
requests, is that stack's cost. Interleaved batches share the machine's load alike; medians
are reported, and each stack's ratio to h11's.

This is the part of a heartbeat's or a submission's cost that the HTTP stack decides; the
leader's own work on a request comes on top (``heartbeat_cost.py``, ``submission.py``).
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn

from _common import Json, parser, process_document, progress, run_main, summary_row, wait_until
from steward.config import TlsSettings
from steward.tls.serving import bind_listener, serve_on_thread

BODY = b'{"schema": 1, "digest": "' + b"0" * 64 + b'"' + b" " * 141 + b"}"
REPLY = BODY
PLAIN = TlsSettings(enabled=False, certificate=None, key=None, ca=None)

CLIENT = r"""
import socket, sys, time
body = sys.argv[1].encode()
for line in sys.stdin:
    port, count = (int(n) for n in line.split())
    # A new connection each batch: the server closes one idle for its keep-alive timeout.
    conn = socket.create_connection(("127.0.0.1", port))
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    request = (b"POST /beat HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
               b"content-length: %d\r\n\r\n%s" % (len(body), body))
    started = time.monotonic()
    for _ in range(count):
        conn.sendall(request)
        answer = b""
        while not answer.endswith(body):
            chunk = conn.recv(65536)
            if not chunk:
                raise SystemExit("server closed the connection")
            answer += chunk
    conn.close()
    print(round(time.monotonic() - started, 4), flush=True)
"""


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(REPLY)),
            ],
        }
    )
    await send({"type": "http.response.body", "body": REPLY})


def _uvicorn_on_thread(http: str, name: str) -> tuple[uvicorn.Server, int]:
    """uvicorn with protocol ``http`` on asyncio's own loop, on a thread (Steward's before)."""
    listener = bind_listener("127.0.0.1", 0, port_key="bench")
    config = uvicorn.Config(app, http=http, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=[listener])), name=name, daemon=True
    )
    thread.start()
    return server, int(listener.getsockname()[1])


def _steward_stack() -> tuple[uvicorn.Server, int]:
    listener = bind_listener("127.0.0.1", 0, port_key="bench")
    server, _thread = serve_on_thread(app, listener, (PLAIN, None), thread_name="steward")
    return server, int(listener.getsockname()[1])


STACKS: dict[str, Callable[[], tuple[uvicorn.Server, int]]] = {
    "h11_asyncio": lambda: _uvicorn_on_thread("h11", "h11"),
    "httptools_asyncio": lambda: _uvicorn_on_thread("httptools", "httptools"),
    "steward_httptools_uvloop": _steward_stack,
}


def measure(batches: int, requests: int) -> Json:
    servers = {name: start() for name, start in STACKS.items()}
    for server, _port in servers.values():
        wait_until(lambda server=server: server.started, 30.0, "uvicorn serving")
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, BODY.decode()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert client.stdin is not None and client.stdout is not None
    cpu: dict[str, list[float]] = {name: [] for name in servers}
    wall: dict[str, list[float]] = {name: [] for name in servers}
    try:
        for batch in range(batches + 1):  # the first batch warms every stack up, not counted
            for name, (_server, port) in servers.items():
                # the process's CPU clock (nanoseconds), not psutil's /proc figure: that one
                # counts in 10 ms ticks, more than a quick batch of 100 requests takes
                before = time.process_time()
                client.stdin.write(f"{port} {requests}\n")
                client.stdin.flush()
                elapsed = float(client.stdout.readline())
                used = time.process_time() - before
                if batch:
                    cpu[name].append(used / requests * 1e6)
                    wall[name].append(elapsed / requests * 1e6)
            progress(
                f"batch {batch}: " + ", ".join(f"{n} {v[-1]:.0f} us" for n, v in cpu.items() if v)
            )
    finally:
        client.stdin.close()
        client.wait(timeout=30)
        for server, _port in servers.values():
            server.should_exit = True
    base = statistics.median(cpu["h11_asyncio"])
    return {
        name: {
            "server_cpu_us_per_request": round(statistics.median(cpu[name]), 1),
            "server_cpu_us_per_request_batches": [round(v, 1) for v in cpu[name]],
            "wall_us_per_request": round(statistics.median(wall[name]), 1),
            "cpu_ratio_to_h11_asyncio": round(statistics.median(cpu[name]) / base, 3),
        }
        for name in servers
    }


def rows(results: Json) -> list[Json]:
    steward = results["steward_httptools_uvloop"]
    return [
        summary_row(
            "server CPU for one small kept-alive HTTP request, Steward's stack against h11 on"
            " asyncio",
            steward["cpu_ratio_to_h11_asyncio"],
            "ratio",
            goal="< 1",
            met=steward["cpu_ratio_to_h11_asyncio"] < 1,
            note=f"{steward['server_cpu_us_per_request']:.0f} against "
            f"{results['h11_asyncio']['server_cpu_us_per_request']:.0f} µs a request",
        )
    ]


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--batches", type=int, default=None, help="interleaved batches (9)")
    cli.add_argument("--requests", type=int, default=None, help="requests per batch (2000)")
    args = cli.parse_args()
    batches = args.batches or (2 if args.quick else 9)
    requests = args.requests or (100 if args.quick else 2000)

    def body() -> Json:
        results = measure(batches, requests)
        progress(f"http stack: {results}")
        parameters = {"batches": batches, "requests": requests, "quick": args.quick}
        return process_document("http_stack", parameters, results, rows(results))

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
