"""Which job events become notifications, and the outbox records they are written as.

A record is made only when a webhook wants the event (the cluster's, ``notifications.*``, or
the job's own, ``JobSpec.notifications``): a cluster without webhooks writes nothing more.
:class:`~.records.Records` writes each record in the same fenced transaction as the write that
makes its event true (rule 2, all or nothing): a job's end with its DIRTY result, a restart
with the status record that first shows it. So an event is in the outbox exactly when it
happened, whichever leader dies when, and :class:`~.delivery.Delivery` takes it from there.

A restart is written once per term: :attr:`Notifications.restarts` notes the restarts already
in the outbox (or delivered), seeded at recovery from the records read (a record showing a
restart was written with its event). Called under the job table's lock.
"""

from __future__ import annotations

from steward.config import NotificationSettings
from steward.errors import JobRejectedError
from steward.wire.job_options import TIMEOUT_ERROR_TYPE
from steward.wire.jobs import JobSpec
from steward.wire.notifications import (
    NotificationEvent,
    NotificationRecord,
    NotificationTarget,
    event_id,
    redact_url,
    refused_url,
    short_error,
)
from steward.wire.records import ErrorInfo
from steward.wire.states import JobState, TerminalState

from .jobmaster import JobMaster
from .jobmaster_values import Terminal
from .term import Term


class Notifications:
    def __init__(self, term: Term) -> None:
        self._term = term
        self._settings: NotificationSettings = term.settings.notifications
        self.restarts: dict[str, int] = {}
        """Job id -> the attempt whose RESTARTED event is written (this term's knowledge)."""

    def of_end(self, master: JobMaster, terminal: Terminal) -> NotificationRecord | None:
        """The notification of a job's end, or None if no webhook wants it."""
        event = _end_event(terminal)
        return self._record(
            event, master, terminal.state.value, master.attempt_count, terminal.error
        )

    def of_unrecoverable(self, job_id: str, error: ErrorInfo) -> NotificationRecord | None:
        """A job that failed in recovery (no JobMaster): the cluster's webhooks only."""
        if not self._cluster_wants(NotificationEvent.FAILED):
            return None
        return NotificationRecord(
            event_id=event_id(job_id, 0, NotificationEvent.FAILED),
            job_id=job_id,
            event=NotificationEvent.FAILED,
            state=TerminalState.FAILED.value,
            attempt=0,
            at=self._term.wall(),
            error=short_error(error),
        )

    def of_restart(self, master: JobMaster) -> NotificationRecord | None:
        """The notification of a restart not yet written, or None (none, or no webhook)."""
        attempt = master.attempt_count
        if master.state is not JobState.RESTARTING or self.restarts.get(master.job_id) == attempt:
            return None
        last = master.attempt(attempt)
        error = None if last is None else last.cause
        found = self._record(
            NotificationEvent.RESTARTED, master, master.state.value, attempt, error
        )
        if found is None:
            self.restarts[master.job_id] = attempt  # nobody wants it: nothing to write
        return found

    def restart_written(self, master: JobMaster) -> None:
        self.restarts[master.job_id] = master.attempt_count

    def recovered(self, master: JobMaster) -> None:
        """A job recovered from its record: a restart that record shows is written already."""
        if master.state is JobState.RESTARTING:
            self.restart_written(master)

    def forget(self, job_id: str) -> None:
        self.restarts.pop(job_id, None)

    def _record(
        self,
        event: NotificationEvent,
        master: JobMaster,
        state: str,
        attempt: int,
        error: ErrorInfo | None,
    ) -> NotificationRecord | None:
        # A job whose graph turned out unusable has no webhooks of its own left to call. One
        # recovered from its record has it read now; a store that does not answer raises,
        # and the write this record goes with is tried again.
        own = [] if master.read_graph() is not None else master.spec.notifications
        targets = [t for t in own if t.wants(event)]
        cluster = self._cluster_wants(event)
        if not targets and not cluster:
            return None
        return NotificationRecord(
            event_id=event_id(master.job_id, attempt, event),
            job_id=master.job_id,
            event=event,
            state=state,
            attempt=attempt,
            at=self._term.wall(),
            name=master.facts.name,
            labels=master.facts.labels,
            error=short_error(error),
            targets=[NotificationTarget(url=t.url, events=[event]) for t in targets],
            cluster=cluster,
        )

    def _cluster_wants(self, event: NotificationEvent) -> bool:
        settings = self._settings
        return bool(settings.webhook_urls) and event.value in settings.event_names


def check_targets(spec: JobSpec, settings: NotificationSettings) -> None:
    """Refuse a job whose own webhooks are not under ``notifications.allowed-urls``: the
    leader calls them from its host (a request the submitter aims). Checked by the leader,
    whichever route the job came by."""
    refused = refused_url(spec.notifications, settings.allowed_prefixes)
    if refused is not None:
        allowed = settings.allowed_prefixes
        which = "only URLs under notifications.allowed-urls are" if allowed else "none is"
        raise JobRejectedError(
            f"spec.notifications: {redact_url(refused)} is refused; {which} allowed by this"
            " cluster's configuration"
        )


def _end_event(terminal: Terminal) -> NotificationEvent:
    error = terminal.error
    if terminal.state is TerminalState.CANCELED and error and error.type == TIMEOUT_ERROR_TYPE:
        return NotificationEvent.TIMEOUT
    return NotificationEvent(terminal.state.value)
