"""The initialize hook round a job goes through before it is scheduled (rule 6).

A job's ``initialize(ctx)`` runs in a child process (:class:`~..hooks.HookRunner`), never in
the JobManager, at submission and again at recovery; its outcome comes back on the hook
runner's thread and is applied under the job table's lock. A pipeline that cannot define the
hook skips the round: it is scheduled at once, with one status write instead of two.
"""

from __future__ import annotations

from steward.wire.runner_protocol import FailedEvent, FinishedEvent
from steward.wire.states import JobState

from .backlog import WaitingReasons
from .context import TermContext
from .jobmaster import JobMaster
from .jobmaster_values import Terminal
from .records import Records
from .stores import checkpoint_dir


class Initialization:
    def __init__(
        self, ctx: TermContext, records: Records, reasons: WaitingReasons | None = None
    ) -> None:
        self._term, self._table, self._hooks = ctx.term, ctx.table, ctx.hooks
        self._records = records
        self._reasons = reasons or WaitingReasons()

    def start(self, master: JobMaster) -> None:
        """Run the job's hook (or skip it), then schedule it; called under the lock."""
        master.initializing()
        if master.job_id in self._table.hookless:
            # No hook can run: schedule now. Skipping the hook round saves a status write, a
            # blob read and a second trip through the lock per job (recovery is bound by it).
            self._records.settle(master, self._scheduled(master))
            self._term.wakeup.set()
            return
        self._records.persist(master)
        self._run_hook(master)

    def prepare_new(self, master: JobMaster, *, hookless: bool) -> None:
        """A new job's first transitions, made before it is stored and without I/O: its first
        status record is created with its graph's pointer, in one transaction."""
        master.hookless = hookless
        master.initializing()
        if hookless:
            self._scheduled(master)  # a new job has no cancel: never terminal

    def _scheduled(self, master: JobMaster) -> Terminal | None:
        """The hook round skipped: the job waits for a slot, with the reason the scheduler
        gives such a job now (:class:`~.backlog.WaitingReasons`)."""
        return master.initialized(FinishedEvent(), waiting=self._reasons.of(master))

    def begin_new(self, master: JobMaster, *, hookless: bool) -> None:
        """A new job, stored as :meth:`prepare_new` left it: schedule it or run its hook;
        called under the lock."""
        if hookless:
            self._term.wakeup.set()
        else:
            self._run_hook(master)

    def _run_hook(self, master: JobMaster) -> None:
        self._hooks.submit(
            master.job_id,
            master.pointer,
            checkpoint_dir(self._term.config, master.job_id),
            is_recovery=master.is_recovery,
            attempt=master.attempt_count + 1,
            epoch=self._term.epoch,
            on_done=self._initialized,
        )

    def _initialized(self, job_id: str, outcome: FinishedEvent | FailedEvent) -> None:
        with self._table.lock:
            master = self._table.jobs.get(job_id)
            if (
                master is None
                or master.state is not JobState.INITIALIZING
                or self._term.stopped.is_set()
            ):
                return
            terminal = master.initialized(outcome, waiting=self._reasons.of(master))
            if terminal is not None:
                self._records.terminate(master, terminal)
            else:
                self._table.now_wants_slot(master)
                self._records.persist(master)
        self._term.wakeup.set()
