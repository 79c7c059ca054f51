"""The job table: the leader's in-memory jobs and slots, under the one lock of the term.

Heartbeats, scheduling passes, submissions, cancels, recovery and the initialize hooks' answers
all change these collections, and each does so holding :attr:`JobTable.lock` for its whole
critical section (the lock is re-entrant: a part called under it may take it again). ZooKeeper
calls made under the lock are single round trips. The ResourceManager lives here because it is
not thread-safe on its own: it is only called under this lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from .deadlines import Deadlines
from .jobmaster import JobMaster
from .jobmaster_values import Terminal
from .resources import ResourceManager


@dataclass
class PendingResult:
    """A terminal outcome whose result ZooKeeper has not taken yet (retried every pass)."""

    master: JobMaster
    terminal: Terminal


@dataclass
class JobTable:
    lock: threading.RLock = field(default_factory=threading.RLock)
    jobs: dict[str, JobMaster] = field(default_factory=dict)
    """Live jobs (no result yet), by id."""
    pending_results: dict[str, PendingResult] = field(default_factory=dict)
    """Ended jobs whose result is still to be written."""
    submitting: dict[str, str | None] = field(default_factory=dict)
    """Ids whose job graph is being stored (outside the lock) by a submission, with the
    sha256 of that submission's body (so a retry of it is told from another job)."""
    unpersisted: set[str] = field(default_factory=set)
    """Jobs whose status record ZooKeeper refused: written again on the next pass."""
    hookless: set[str] = field(default_factory=set)
    """Jobs whose pipeline cannot define ``initialize``: no hook round, one status write."""
    deferred: set[str] | None = None
    """While recovering: jobs whose status record is written in batches before ready."""
    rm: ResourceManager = field(default_factory=ResourceManager)
    deadlines: Deadlines = field(default_factory=Deadlines)
    """Live jobs with a timeout, by deadline (:mod:`.deadlines`)."""

    def admit(self, master: JobMaster) -> None:
        """``master`` is live: in the table, and its deadline (if any) watched."""
        self.jobs[master.job_id] = master
        if master.deadline is not None:
            self.deadlines.add(master.job_id, master.deadline)

    def live_or_pending(self, job_id: str) -> JobMaster | None:
        """The job's master, also while its result is still being written; call under lock."""
        master = self.jobs.get(job_id)
        if master is None:
            pending = self.pending_results.get(job_id)
            master = pending.master if pending else None
        return master
