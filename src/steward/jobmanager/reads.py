"""What any JobManager can answer from ZooKeeper alone: jobs, results and the cluster.

A standby serves reads from here (the leader persists every job's status record), so
``GET /v1/jobs`` and ``GET /v1/cluster`` keep answering while there is no leader. The leader
answers live jobs from memory and everything else from here. Listings page through the
:class:`~.job_index.JobIndex` (kept by :mod:`.index_follower`), not through ZooKeeper.
"""

from __future__ import annotations

import logging
from typing import Any

from steward.errors import StewardError
from steward.ha.election import LATCH_PREFIX
from steward.ha.session import Session
from steward.security.teams import TeamScope
from steward.store import zk
from steward.store.blob import BlobStore
from steward.store.leadership import LeadershipHistoryStore
from steward.store.results import JobResultStore
from steward.store.statuses import JobStatusStore
from steward.wire.job_options import deadline
from steward.wire.records import (
    ContenderInfo,
    JobResultEntry,
    JobStatusRecord,
    LeaderInfo,
    LeadershipTerm,
    TaskManagerInfo,
)
from steward.wire.redaction import DEFAULT as SECRETS
from steward.wire.redaction import redact_attempts
from steward.wire.rest import JobManagerView, JobView, ResultView, TaskManagerView
from steward.wire.states import JobState

from .index_follower import note
from .indexed_job import IndexedJob
from .job_index import JobIndex, JobQuery, Page

log = logging.getLogger(__name__)


def result_view(entry: JobResultEntry, served_by: str) -> JobView:
    """A terminated job as a JobView: its state and result from the JobResultStore."""
    return JobView(
        **_shared_fields(entry),
        state=JobState.of(entry.state),
        updated_at=entry.finished_at,
        # Secrets are hidden at their source (the runner); these catch what comes from
        # elsewhere (a TaskManager's error quoting a URL with a password, say).
        reason=SECRETS.text(entry.error.message) if entry.error else None,
        result=ResultView.of(entry),
        served_by=served_by,
    )


def status_view(record: JobStatusRecord, served_by: str) -> JobView:
    return JobView(
        **_shared_fields(record),
        state=record.state,
        reason=None if record.reason is None else SECRETS.text(record.reason),
        updated_at=record.updated_at,
        served_by=served_by,
    )


def _shared_fields(source: JobResultEntry | JobStatusRecord) -> dict[str, Any]:
    """The JobView fields a job's result entry and its status record both carry."""
    return {
        "job_id": source.job_id,
        "name": source.name,
        "submitted_at": source.submitted_at,
        "attempts": redact_attempts(source.attempts),
        "attempt_count": source.attempt_count,
        "failures": source.failures,
        "labels": source.labels,
        "submitter": source.submitter,
        "team": source.team,
        "queue": source.queue,
        "priority": source.priority,
        "proxy_user": source.proxy_user,
        "timeout": source.timeout,
        "deadline": deadline(source.submitted_at, source.timeout),
        "env": source.env,
    }


class ClusterReader:
    def __init__(self, session: Session, blobs: BlobStore, served_by: str) -> None:
        self._session = session
        self._statuses = JobStatusStore(session)
        self._results = JobResultStore(session, blobs)
        self._history = LeadershipHistoryStore(session)
        self.served_by = served_by
        self.index = JobIndex()

    def page(self, query: JobQuery) -> Page | None:
        """One page of the jobs known, newest first; None until the index has been filled."""
        return self.index.page(query) if self.index.ready else None

    def batches(
        self, offset: int, size: int, teams: TeamScope | None = None
    ) -> tuple[int, list[IndexedJob]] | None:
        """Livy batches by offset, oldest first (``teams``' only, if given); None until the
        index has been filled."""
        return self.index.batches(offset, size, teams) if self.index.ready else None

    def note(self, view: JobView) -> None:
        """List ``view`` at once: this JobManager has just answered a write with it."""
        note(self.index, view)

    def result(self, job_id: str) -> JobResultEntry | None:
        return self._results.find(job_id)

    def terminated(self) -> list[JobView]:
        return [result_view(entry, self.served_by) for entry in self._results.entries()]

    def job(self, job_id: str) -> JobView | None:
        entry = self._results.find(job_id)
        if entry is not None:
            return result_view(entry, self.served_by)
        record = self._statuses.find_quietly(job_id)
        return status_view(record, self.served_by) if record else None

    def jobs(self) -> list[JobView]:
        views = {view.job_id: view for view in self.terminated()}
        for job_id in self._statuses.job_ids():
            if job_id in views:
                continue
            record = self._statuses.find_quietly(job_id)
            if record is not None:
                views[job_id] = status_view(record, self.served_by)
        return sorted(views.values(), key=lambda v: v.submitted_at or 0.0)

    def leader(self) -> LeaderInfo | None:
        found = zk.read(self._session.client, self._session.layout.leader_info)
        if not found:
            return None
        try:
            return LeaderInfo.from_json(found[0])
        except StewardError:
            return None

    def leadership(self) -> list[LeadershipTerm]:
        """The recorded terms of leadership, oldest first (CorruptStateError if unreadable)."""
        return self._history.terms()

    def jobmanagers(self, leader: LeaderInfo | None) -> list[JobManagerView]:
        client, layout = self._session.client, self._session.layout
        views = []
        for name in sorted(zk.children(client, layout.leader_latch)):
            if not name.startswith(LATCH_PREFIX):
                continue
            found = zk.read(client, f"{layout.leader_latch}/{name}")
            if not found:
                continue
            try:
                info = ContenderInfo.from_json(found[0])
            except StewardError:
                continue
            is_leader = leader is not None and leader.contender == info.contender
            views.append(JobManagerView(id=info.contender, address=info.address, leader=is_leader))
        return views

    def taskmanagers(self) -> list[TaskManagerView]:
        client, layout = self._session.client, self._session.layout
        views = []
        for tm_id in sorted(zk.children(client, layout.taskmanagers)):
            found = zk.read(client, layout.taskmanager(tm_id))
            if not found:
                continue
            try:
                info = TaskManagerInfo.from_json(found[0])
            except StewardError:
                continue
            views.append(
                TaskManagerView(
                    id=tm_id,
                    address=info.address,
                    slots=info.slots,
                    http_address=info.http_address,
                )
            )
        return views
