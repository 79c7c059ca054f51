"""The cancel commands the leader queues for TaskManagers (a heartbeat reply carries them).

One cancel per attempt: :func:`send_cancel` marks the attempt so that recovery, a cancel
request and the heartbeats that follow do not queue it again. Called under the job table's
lock (the ResourceManager's queues are not thread-safe on their own).
"""

from __future__ import annotations

from steward.wire.heartbeat import CancelAttempt

from .jobmaster import JobMaster
from .resources import ResourceManager
from .term import Term


def send_cancel(term: Term, rm: ResourceManager, master: JobMaster) -> None:
    """Queue a cancel of the job's current attempt for its TaskManager, once."""
    current = master.current
    if current is None or current.cancel_sent:
        return
    current.cancel_sent = True
    rm.enqueue(
        current.taskmanager,
        CancelAttempt(
            job_id=master.job_id,
            attempt=current.number,
            epoch=term.epoch,
            grace=term.cancel_grace,
        ),
    )
