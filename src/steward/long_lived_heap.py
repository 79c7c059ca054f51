"""Python's cyclic collector in a long-running process: what survived a full collection is
left out of the next ones.

A JobManager keeps about 25 container objects a live job (its master, spec and pointer on the
leader; the records its watches read and its callbacks on a standby), 350,000 objects at
11,000 jobs. CPython 3.11's full collection scans every one of them while holding the
interpreter, and starts one each time the objects that survived younger collections reach a
quarter of those it kept last time: a burst of submissions that doubles the job table makes
three or four, each longer than the last (206 to 284 ms on a leader, 338 to 375 ms on a
standby, at 11,000 jobs: every request in flight waits that long; at 100,000 jobs seconds).

So after each full collection the survivors are frozen (``gc.freeze``: moved to a generation
no collection scans, in O(1)); the next full collection scans only what was made since. What
startup built (modules, classes, the configuration) is frozen at once. Reference counting
still frees at once every object that is not in a cycle, frozen or not; a cycle that becomes
garbage among frozen objects waits for :data:`UNFREEZE_EVERY`: then everything frozen goes back
to the oldest generation, so the next full collection scans it all once (and frees such
cycles), and its survivors are frozen again. A full scan of the whole heap every ten minutes at
most, instead of several in every burst.

A leader's recovery uses the same mechanism for its own steps
(:mod:`steward.jobmanager.leader.collections_paused`); the two compose: either's freeze keeps
objects out of the young collections, either's unfreeze hands them to the oldest generation,
where only a full collection looks.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

UNFREEZE_EVERY = 600.0
"""Seconds between two returns of the frozen objects to the collector: how long a cycle of
garbage among them can wait to be freed."""


class LongLivedHeap:
    """Freezes what survived each full collection (on a thread of its own: never inside the
    collector's callback) and hands everything back every ``unfreeze_every`` seconds."""

    def __init__(
        self,
        *,
        unfreeze_every: float = UNFREEZE_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._unfreeze_every = unfreeze_every
        self._clock = clock
        self._collected = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="long-lived-heap", daemon=True)
        self._unfrozen_at = clock()

    def start(self) -> LongLivedHeap:
        gc.freeze()  # what startup built lives as long as the process
        gc.callbacks.append(self._on_collection)
        self._thread.start()
        return self

    def stop(self) -> None:
        """No more freezing; what is frozen stays so (the process is ending)."""
        self._stopped = True
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)
        self._collected.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        # The collector's callback: only note it (freezing is not done in the middle of it).
        if phase == "stop" and info.get("generation") == 2:
            self._collected.set()

    def _run(self) -> None:
        while True:
            woken = self._collected.wait(timeout=max(0.0, self._until_unfreeze()))
            if self._stopped:
                return
            if self._until_unfreeze() <= 0:
                # A collection noted before this is not one that scanned what is handed back:
                # freezing after it would keep the cycles this is for.
                self._collected.clear()
                frozen = gc.get_freeze_count()
                gc.unfreeze()
                self._unfrozen_at = self._clock()
                log.debug("long-lived objects handed back to the collector count=%d", frozen)
            elif woken:
                self._collected.clear()
                gc.freeze()

    def _until_unfreeze(self) -> float:
        return self._unfreeze_every - (self._clock() - self._unfrozen_at)
