"""``/v1/cluster``: the leader, every JobManager, and the TaskManagers with their slots;
``/v1/cluster/leadership``: the history of leadership. A TaskManager's running jobs are listed
to a caller only if it sees their team (:mod:`.teams`)."""

from __future__ import annotations

from fastapi import APIRouter

from steward.errors import StewardError
from steward.security.teams import TeamScope
from steward.wire.records import LeaderInfo
from steward.wire.rest import ClusterView, ErrorBody, LeadershipView, LeaderView, TaskManagerView

from .auth import Caller
from .backend import ApiBackend
from .errors import raise_for
from .state import Backend
from .teams import scope

router = APIRouter(tags=["cluster"])


@router.get("/v1/cluster")
def cluster(caller: Caller, backend: Backend) -> ClusterView:
    """The leader, every JobManager, and the TaskManagers with their slots."""
    leader = backend.reader.leader()
    dispatcher = backend.dispatcher
    taskmanagers = (
        dispatcher.taskmanagers()
        if dispatcher is not None and dispatcher.ready
        else backend.reader.taskmanagers()
    )
    return ClusterView(
        cluster_id=backend.cluster_id(),
        leader=leader_view(leader),
        jobmanagers=backend.reader.jobmanagers(leader),
        taskmanagers=_seen(taskmanagers, backend, scope(caller, backend)),
        served_by=backend.id,
    )


@router.get("/v1/cluster/leadership", responses={503: {"model": ErrorBody}})
def leadership(backend: Backend) -> LeadershipView:
    """The latest terms of leadership (epoch, leader, when granted and ready), oldest first."""
    try:
        history = backend.reader.leadership()
    except StewardError as exc:
        raise_for(exc)
    return LeadershipView(
        history=history, leader=leader_view(backend.reader.leader()), served_by=backend.id
    )


def _seen(
    taskmanagers: list[TaskManagerView], backend: ApiBackend, teams: TeamScope | None
) -> list[TaskManagerView]:
    """Each TaskManager with only the jobs of ``teams`` (one index look-up a running job)."""
    if teams is None:
        return taskmanagers
    index = backend.reader.index

    def seen(job_id: str) -> bool:
        job = index.get(job_id)
        return job is not None and teams.sees(job.team)

    return [
        tm.model_copy(update={"attempts": [j for j in tm.attempts if seen(j)]})
        for tm in taskmanagers
    ]


def leader_view(leader: LeaderInfo | None) -> LeaderView | None:
    if leader is None:
        return None
    return LeaderView(id=leader.contender, address=leader.address, epoch=leader.epoch)
