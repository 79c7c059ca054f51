"""A request body read with a bound (rest/bodies.py): a caller that goes away mid-body is a
handled answer, not a traceback in the JobManager's log."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi import Request

from steward.jobmanager.rest.bodies import bounded_body
from steward.jobmanager.rest.errors import ApiError


def request(messages: list[dict[str, Any]]) -> Request:
    """A real Starlette request whose ASGI ``receive`` hands out ``messages``."""
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [], "query_string": b""}
    return Request(scope, receive)


def test_a_body_is_read_whole() -> None:
    parts = [
        {"type": "http.request", "body": b"abc", "more_body": True},
        {"type": "http.request", "body": b"def", "more_body": False},
    ]
    assert asyncio.run(bounded_body(request(parts), 10, "heartbeat")) == b"abcdef"


def test_a_client_gone_mid_body_is_an_api_error() -> None:
    parts = [
        {"type": "http.request", "body": b"abc", "more_body": True},
        {"type": "http.disconnect"},
    ]
    with pytest.raises(ApiError) as raised:
        asyncio.run(bounded_body(request(parts), 10, "heartbeat"))
    assert raised.value.status == 400 and raised.value.body.code == "client_disconnected"


def test_a_body_over_the_limit_is_refused() -> None:
    parts = [{"type": "http.request", "body": b"x" * 11, "more_body": False}]
    with pytest.raises(ApiError) as raised:
        asyncio.run(bounded_body(request(parts), 10, "heartbeat"))
    assert raised.value.status == 413
