"""The TaskManagers' heartbeat (:data:`~steward.wire.heartbeat.HEARTBEAT_PATH`): reports in,
commands back. Only the leader takes heartbeats; a standby answers 409 ``not_leader`` naming
the leader it knows of, and the TaskManager turns to it. An internal caller's heartbeat is
answered before FastAPI (:mod:`.heartbeat_route`); this route answers the others the same way
(:func:`answer_heartbeat`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import Response

from steward.errors import StewardError
from steward.wire.heartbeat import HEARTBEAT_PATH, Heartbeat, HeartbeatReply
from steward.wire.rest import ErrorBody

from .backend import ApiBackend, HeldHeartbeat, LeaderTerm
from .bodies import bounded_body
from .cluster import leader_view
from .errors import ApiError, raise_for
from .forwarding import leading
from .state import Backend, HeartbeatThreads

MAX_HEARTBEAT_BYTES = 16 << 20
"""A heartbeat's body: a report per attempt, each with a cause of at most 8 KiB of traceback
(a TaskManager of 100 slots sends under 2 MiB). Only the internal credential reaches this
route; the bound keeps a broken or compromised TaskManager from filling the leader's memory."""
HEARTBEAT_THREADS = 64
"""Threads for the heartbeats' blocking work (a write, a lock held across a ZooKeeper round
trip); no thread waits for a long poll. More would only queue on the table's lock."""
ON_LOOP_BYTES = 64 << 10
"""A body up to this size (10 reports: about 3 KiB) is parsed on the event loop; a larger one
(many attempts, each with a traceback) on a heartbeat thread, so the loop never stalls on it."""

_T = TypeVar("_T")

router = APIRouter(tags=["internal"])


@router.post(
    HEARTBEAT_PATH,
    responses={400: {"model": ErrorBody}, 409: {"model": ErrorBody}, 413: {"model": ErrorBody}},
)
async def heartbeat(request: Request, backend: Backend, threads: HeartbeatThreads) -> Response:
    """TaskManager heartbeat (see steward.wire.heartbeat): reports in, commands back."""
    body = await bounded_body(
        request, MAX_HEARTBEAT_BYTES, f"heartbeats are limited to {MAX_HEARTBEAT_BYTES} bytes"
    )
    return await answer_heartbeat(backend, body, threads)


async def answer_heartbeat(
    backend: ApiBackend, body: bytes, threads: anyio.CapacityLimiter
) -> Response:
    """The answer to a heartbeat's ``body`` (also :mod:`.heartbeat_route`'s).

    Taken on the event loop when the leader can take it without waiting (the common
    heartbeat: nothing to write, the table's lock free): a hop to a worker thread and back cost
    more CPU than the heartbeat's own work. Otherwise taken on a thread of ``threads``, which
    bounds the heartbeats' blocking work. A held reply (long poll) waits on the loop either
    way, holding no thread (:func:`_held`)."""
    try:
        taken = await _taken(backend, body, threads)
        reply = taken if isinstance(taken, HeartbeatReply) else await _held(taken, threads)
    except StewardError as exc:  # what the app's handler of StewardError answers
        raise_for(exc)
    return Response(reply.to_json(), media_type="application/json")


async def _taken(
    backend: ApiBackend, body: bytes, threads: anyio.CapacityLimiter
) -> HeartbeatReply | HeldHeartbeat:
    if len(body) > ON_LOOP_BYTES:
        return await _on_thread(lambda: _take(backend, body), threads)
    beat, term = _beat(body), _term(backend)
    taken = term.take_heartbeat(beat, block=False)
    if taken is None:
        return await _on_thread(lambda: term.take_heartbeat(beat, block=True), threads)
    return taken


def _beat(body: bytes) -> Heartbeat:
    try:
        return Heartbeat.from_json(body)
    except StewardError as exc:
        raise ApiError(400, "bad_request", str(exc)) from None


def _term(backend: ApiBackend) -> LeaderTerm:
    term = leading(backend)
    if term is None:
        raise ApiError(
            409,
            "not_leader",
            f"{backend.id} is not the leader",
            leader=leader_view(backend.leader()),
        )
    return term


def _take(backend: ApiBackend, body: bytes) -> HeartbeatReply | HeldHeartbeat | None:
    return _term(backend).take_heartbeat(_beat(body), block=True)


async def _on_thread(take: Callable[[], _T | None], threads: anyio.CapacityLimiter) -> _T:
    taken = await anyio.to_thread.run_sync(take, limiter=threads)
    if taken is None:  # only a take that may not block answers None
        raise RuntimeError("a blocking heartbeat take answered nothing")
    return taken


async def _held(held: HeldHeartbeat, threads: anyio.CapacityLimiter) -> HeartbeatReply:
    """The reply of a held heartbeat: awaited until its TaskManager's wake (set from the
    thread that queues a command) or its timeout, then finished as :func:`answer_heartbeat`
    takes a heartbeat."""
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            loop.call_soon_threadsafe(_resolve, woken)

    timer = loop.call_later(held.timeout, _resolve, woken)
    held.listen(wake)
    try:
        await woken
    finally:
        timer.cancel()
        held.unlisten(wake)
    reply = held.finish(block=False)
    if reply is None:
        reply = await _on_thread(lambda: held.finish(block=True), threads)
    return reply


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
