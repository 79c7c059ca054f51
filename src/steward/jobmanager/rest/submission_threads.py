"""The threads a submission's blocking work runs on (the graph's blob, the group commit).

A submission waits for the disk and for ZooKeeper, so its route hands the work to a thread.
Starlette's ``run_in_threadpool`` (AnyIO's ``to_thread``: a capacity limiter, a cancel scope,
the event loop's library looked up each time) cost about 90 µs of the leader's CPU a hop,
asyncio's own executor 35 µs (measured with 16 concurrent hops), at 16 clients a twentieth of
what a submission costs the leader. The work is not cancelled with its request (neither was
AnyIO's: a submission whose caller left still completes, and its retry is answered 200).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

_T = TypeVar("_T")

THREADS = 40
"""Submissions stored at once at most (AnyIO's default, which they had before)."""
_pool = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="submission")


async def on_submission_thread(work: Callable[[], _T]) -> _T:
    """``work()`` on a submission thread, awaited."""
    return await asyncio.get_running_loop().run_in_executor(_pool, work)
