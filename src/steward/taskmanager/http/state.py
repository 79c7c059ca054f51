"""What the TaskManager's routes are handed (one :class:`Node` on ``app.state``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request

from .files import AttemptLogs


@dataclass(frozen=True)
class Node:
    """This TaskManager, as its HTTP routes see it."""

    id: str
    logs: AttemptLogs
    ready: Callable[[], str | None]
    """None when it can run attempts, else why not (the readiness probe says it)."""


def node_of(request: Request) -> Node:
    """The :class:`Node` of the app that received ``request``."""
    node: Node = request.app.state.node
    return node
