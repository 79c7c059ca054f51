"""What the TaskManager's routes are handed (one :class:`Node` on ``app.state``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from .files import AttemptLogs


@dataclass(frozen=True)
class Node:
    """This TaskManager, as its HTTP routes see it."""

    id: str
    logs: AttemptLogs
    ready: Callable[[], str | None]
    """None when it can run attempts, else why not (the readiness probe says it)."""


async def _node(request: Request) -> Node:
    node: Node = request.app.state.node
    return node


NodeDep = Annotated[Node, Depends(_node)]
