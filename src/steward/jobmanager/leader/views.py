"""What the leader answers about its live jobs and TaskManagers, from memory.

A live job's view is the one a standby builds from the persisted status record, plus the live
progress; its checkpoints are read from the CompletedCheckpointStore outside the lock.
"""

from __future__ import annotations

import contextlib
import logging

from steward.errors import StewardError
from steward.wire.rest import CheckpointView, JobView, TaskManagerView

from ..reads import status_view
from .context import TermContext
from .jobmaster import JobMaster
from .term import Term

log = logging.getLogger(__name__)


def live_view(term: Term, master: JobMaster) -> JobView:
    """The job's view: the same view a standby builds from the record, plus live progress."""
    view = status_view(master.record(term.epoch), term.jobmanager_id)
    return view.model_copy(update={"progress": master.progress})


class Views:
    def __init__(self, ctx: TermContext) -> None:
        self._term, self._table, self._stores = ctx.term, ctx.table, ctx.stores

    def view(self, job_id: str, *, with_checkpoints: bool = True) -> JobView | None:
        """The live job's view, or None if this leader has no such live job."""
        with self._table.lock:
            master = self._table.live_or_pending(job_id)
            if master is None:
                return None
            view = live_view(self._term, master)
        if with_checkpoints:
            view = view.model_copy(update={"checkpoints": self._checkpoint_views(job_id)})
        return view

    def views(self) -> list[JobView]:
        with self._table.lock:
            return [live_view(self._term, m) for m in self._table.jobs.values()]

    def taskmanagers(self) -> list[TaskManagerView]:
        with self._table.lock:
            return self._table.rm.views()

    def _checkpoint_views(self, job_id: str) -> list[CheckpointView]:
        store = self._stores.checkpoints(job_id)
        views = []
        try:
            for cid in store.checkpoint_ids():
                with contextlib.suppress(StewardError):
                    cp = store.get(cid)
                    views.append(
                        CheckpointView(
                            checkpoint_id=cp.checkpoint_id,
                            created_at=cp.created_at,
                            attempt=cp.attempt,
                            metadata=cp.metadata,
                        )
                    )
        except StewardError as exc:
            log.warning("checkpoints unreadable job=%s error=%r", job_id, exc)
        return views
