"""Cleanup of terminated jobs (rule 7): their HA data goes, then the result is CLEAN.

A job is queued once its result is DIRTY (or, at recovery, when a DIRTY result or a leftover
job graph is found). One thread per term removes, in order, the status record, the job graph
(pointer, then blob), the checkpoints and their counter, and the job's storage directory, then
marks the result CLEAN; every step is idempotent, so a failure is retried with backoff.

One failure is not retried: the result itself gone. Every job queued here has a result the
leaders recorded and ZooKeeper acknowledged (only the retention policy deletes results, and
never one whose cleanup is queued: DIRTY, or with a job graph), so a missing one means
ZooKeeper lost an acknowledged write, as 3.8.0 did in the chaos suite (docs/reliability.md,
bug 3). No retry can bring it back; the leader says so once, as an error that names ZooKeeper,
instead of retrying every 30 s for ever with a warning.
"""

from __future__ import annotations

import logging
import queue
import threading

from steward.artifacts import checkpoint_dirs
from steward.errors import FencedError, JobNotFoundError, StewardError

from .context import TermContext
from .stores import checkpoint_dir

log = logging.getLogger(__name__)


class Cleanup:
    def __init__(self, ctx: TermContext) -> None:
        self._term, self._table, self._stores = ctx.term, ctx.table, ctx.stores
        self._queue: queue.Queue[str] = queue.Queue()
        ctx.term.when_stopped(self.wake)

    def put(self, job_id: str) -> None:
        """Queue a terminated job's cleanup."""
        self._queue.put(job_id)

    def wake(self) -> None:
        self._queue.put("")

    def run(self) -> None:
        """The cleanup thread: until the term stops, clean up queued jobs, retrying failures."""
        delays: dict[str, float] = {}
        while not self._term.stopped.is_set():
            job_id = self._queue.get()
            if not job_id or self._term.stopped.is_set():
                continue
            try:
                self._cleanup(job_id)
                delays.pop(job_id, None)
            except FencedError as exc:
                self._term.fenced(exc)
                return
            except (StewardError, OSError) as exc:
                delay = min(30.0, delays.get(job_id, 0.5) * 2)
                delays[job_id] = delay
                self._term.metrics.cleanup_retries.inc()
                log.warning("cleanup failed job=%s retry_in=%.1fs error=%r", job_id, delay, exc)
                timer = threading.Timer(delay, self._queue.put, args=(job_id,))
                timer.daemon = True
                timer.start()

    def _cleanup(self, job_id: str) -> None:
        """Remove a terminated job's HA data (rule 7); idempotent; then mark its result CLEAN."""
        with self._table.lock:
            if job_id in self._table.jobs:
                return  # not terminated (a stale queue entry)
        fence = self._term.fence
        self._stores.statuses.remove(fence, job_id)
        self._stores.graphs.remove(fence, job_id)
        self._stores.checkpoints(job_id).remove_all(fence)
        checkpoint_dirs.remove(checkpoint_dir(self._term.config, job_id))
        try:
            self._stores.results.mark_clean(fence, job_id)
        except JobNotFoundError:
            self._term.metrics.zookeeper_lost_writes.inc()
            log.error(
                "result lost by zookeeper job=%s epoch=%d: the job's result was recorded and"
                " acknowledged, and ZooKeeper no longer has it. ZooKeeper lost an acknowledged"
                " write (versions before 3.8.4 have such bugs, e.g. ZOOKEEPER-4785): check the"
                " ensemble's version and logs (steward doctor). Its cleanup is done otherwise"
                " and is not retried",
                job_id,
                self._term.epoch,
            )
            return
        log.info("job cleaned up job=%s epoch=%d", job_id, self._term.epoch)
