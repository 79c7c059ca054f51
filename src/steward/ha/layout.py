"""Where everything lives in ZooKeeper: the one place that spells out the znode layout.

See docs/architecture.md ("ZooKeeper layout"). All paths are absolute and
under ``<high-availability.zookeeper.root>/<cluster-id>``.
"""

from __future__ import annotations

from dataclasses import dataclass

from steward.wire.values import check_job_id

OUTCOME_PREFIX = "outcome-"
"""The children of ``jobs/<job-id>`` named ``outcome-<attempt>`` are attempts' outcome records."""


@dataclass(frozen=True)
class Layout:
    """The znode paths of one Steward cluster rooted at ``root``."""

    root: str

    @property
    def leader_latch(self) -> str:
        return f"{self.root}/leader/latch"

    @property
    def leader_epoch(self) -> str:
        return f"{self.root}/leader/epoch"

    @property
    def leader_info(self) -> str:
        return f"{self.root}/leader/info"

    @property
    def leader_history(self) -> str:
        return f"{self.root}/leader/history"

    @property
    def batch_counter(self) -> str:
        """The next Livy batch id (``POST /batches``): a decimal int64, fenced compare-and-set."""
        return f"{self.root}/livy/batch-counter"

    @property
    def jobgraphs(self) -> str:
        return f"{self.root}/jobgraphs"

    def jobgraph(self, job_id: str) -> str:
        return f"{self.jobgraphs}/{check_job_id(job_id)}"

    @property
    def results(self) -> str:
        return f"{self.root}/results"

    def result(self, job_id: str) -> str:
        return f"{self.results}/{check_job_id(job_id)}"

    @property
    def dirty_results(self) -> str:
        """Results whose cleanup is not done: what a new leader resumes without reading every
        result (``dirty-results/<job-id>``, empty; created and deleted with the index)."""
        return f"{self.root}/dirty-results"

    def dirty_result(self, job_id: str) -> str:
        return f"{self.dirty_results}/{check_job_id(job_id)}"

    @property
    def jobs(self) -> str:
        return f"{self.root}/jobs"

    def job(self, job_id: str) -> str:
        return f"{self.jobs}/{check_job_id(job_id)}"

    def job_status(self, job_id: str) -> str:
        return f"{self.job(job_id)}/status"

    def checkpoint_counter(self, job_id: str) -> str:
        return f"{self.job(job_id)}/checkpoint-counter"

    def checkpoints(self, job_id: str) -> str:
        return f"{self.job(job_id)}/checkpoints"

    def checkpoint(self, job_id: str, checkpoint_id: int) -> str:
        return f"{self.checkpoints(job_id)}/{checkpoint_id:019d}"

    def attempt_outcome(self, job_id: str, attempt: int) -> str:
        """Where a TaskManager records an attempt's outcome as it releases the lease."""
        return f"{self.job(job_id)}/{OUTCOME_PREFIX}{attempt}"

    @property
    def executions(self) -> str:
        return f"{self.root}/executions"

    def execution(self, job_id: str) -> str:
        return f"{self.executions}/{check_job_id(job_id)}"

    @property
    def taskmanagers(self) -> str:
        return f"{self.root}/taskmanagers"

    def taskmanager(self, tm_id: str) -> str:
        return f"{self.taskmanagers}/{tm_id}"

    @property
    def notifications(self) -> str:
        """The outbox of job events waiting for their webhooks (``notifications/<event-id>``)."""
        return f"{self.root}/notifications"

    def notification(self, event_id: str) -> str:
        return f"{self.notifications}/{event_id}"

    @property
    def auth_tokens(self) -> str:
        """Users' access tokens, hashed (``auth/tokens/<token-id>``, steward.security)."""
        return f"{self.root}/auth/tokens"

    def auth_token(self, token_id: str) -> str:
        return f"{self.auth_tokens}/{token_id}"

    def persistent_parents(self) -> tuple[str, ...]:
        """The container znodes every process may assume exist after :meth:`Session.start`."""
        return (
            self.leader_latch,
            self.jobgraphs,
            self.results,
            self.dirty_results,
            self.jobs,
            self.executions,
            self.taskmanagers,
            self.notifications,
        )
