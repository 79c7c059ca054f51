"""What the leader needs of a job's spec while an attempt of it runs, without its graph.

A new leader adopts a running attempt from its lease and its status record alone (rule 8,
issue 22): reading and validating every job graph blob at the takeover cost most of a
failover's CPU. The record carries these facts (written from the spec by every leader since
they were kept); the spec itself, with its restart strategy, webhooks and code, is read from
the graph only when the job next needs it (:class:`LazySpec`, :meth:`JobMaster.read_graph`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from steward.errors import StewardError, is_unavailable
from steward.wire.jobs import JobSpec
from steward.wire.records import ErrorInfo, JobStatusRecord
from steward.wire.redaction import Redactor


@dataclass(frozen=True)
class JobFacts:
    """A job's identity, ownership, timeout, slots and scheduling limits: enough to adopt,
    show and schedule it without its graph."""

    job_id: str
    name: str
    labels: dict[str, str]
    submitter: str | None
    team: str | None
    timeout: float | None
    slots: int
    queue: str
    priority: int
    proxy_user: str | None
    max_concurrent: int | None

    @classmethod
    def of_spec(cls, spec: JobSpec) -> JobFacts:
        return cls(
            job_id=spec.job_id,
            name=spec.name,
            labels=spec.labels,
            submitter=spec.submitter,
            team=spec.team,
            timeout=spec.timeout,
            slots=spec.slots,
            queue=spec.queue,
            priority=spec.priority,
            proxy_user=spec.proxy_user,
            max_concurrent=spec.max_concurrent,
        )

    @classmethod
    def of_record(cls, record: JobStatusRecord) -> JobFacts | None:
        """The facts ``record`` holds; None for a record written before it held them all."""
        if record.slots is None or record.queue is None or record.priority is None:
            return None
        return cls(
            job_id=record.job_id,
            name=record.name,
            labels=record.labels,
            submitter=record.submitter,
            team=record.team,
            timeout=record.timeout,
            slots=record.slots,
            queue=record.queue,
            priority=record.priority,
            proxy_user=record.proxy_user,
            max_concurrent=record.max_concurrent,
        )


@dataclass(frozen=True)
class LazySpec:
    """A job adopted without its spec: its facts and shown environment from its status
    record, and ``read``, which reads the spec from its graph (raising the store's
    StewardError: missing or corrupt, or not answering)."""

    facts: JobFacts
    shown_env: dict[str, str]
    read: Callable[[], JobSpec]


class SpecAtHand:
    """A job's spec as its master holds it: given, or read from its graph when first needed
    (a job adopted from its record)."""

    def __init__(self, spec: JobSpec | LazySpec) -> None:
        self._lazy: LazySpec | None = None
        self._spec: JobSpec | None = None
        if isinstance(spec, LazySpec):
            self._lazy, self.facts, self.shown_env = spec, spec.facts, spec.shown_env
        else:
            self._spec, self.facts = spec, JobFacts.of_spec(spec)
            self.shown_env = Redactor.for_job(spec.spark_conf, spec.args, spec.env).env(spec.env)
        self.broken: ErrorInfo | None = None
        """Why the job cannot go on: its graph turned out missing or corrupt when read."""

    @property
    def spec(self) -> JobSpec:
        """The spec, read now if it was not (raises the store's StewardError)."""
        if self._spec is None:
            assert self._lazy is not None
            self._keep(self._lazy.read())
        assert self._spec is not None
        return self._spec

    def pending(self) -> Callable[[], JobSpec] | None:
        """The read still to make, for a caller that makes it outside the table's lock and
        hands its answer to :meth:`take` under it; None: the spec is at hand, or the graph
        was found broken."""
        if self._spec is not None or self.broken is not None:
            return None
        assert self._lazy is not None
        return self._lazy.read

    def read(self) -> ErrorInfo | None:
        """Read the spec if it was not, before a decision needs it (a restart's strategy, the
        job's webhooks, a placement). None: it is at hand; else :attr:`broken`, the verdict
        recovery gives a job whose graph is missing or corrupt (rule 6). A store that did not
        answer raises its StewardError: nothing changed, the caller asks again."""
        reader = self.pending()
        if reader is None:
            return self.broken
        try:
            answer: JobSpec | StewardError = reader()
        except StewardError as exc:
            answer = exc
        return self.take(answer)

    def take(self, answer: JobSpec | StewardError) -> ErrorInfo | None:
        """Keep what a read of the graph found, unless the spec was read meanwhile; the
        verdict as :meth:`read` gives it (a store that did not answer raises)."""
        if self._spec is not None or self.broken is not None:
            return self.broken
        if isinstance(answer, StewardError):
            if is_unavailable(answer):
                raise answer
            self.broken = ErrorInfo(
                type="steward.RecoveryError",
                message=f"job graph of {self.facts.job_id!r} could not be recovered: {answer}",
            )
            return self.broken
        self._keep(answer)
        return None

    def _keep(self, spec: JobSpec) -> None:
        # The spec's own facts from now: a record may have lacked one (max_concurrent).
        self._spec, self._lazy, self.facts = spec, None, JobFacts.of_spec(spec)
