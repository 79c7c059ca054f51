"""``/v1/cluster``: the leader, every JobManager, and the TaskManagers with their slots;
``/v1/cluster/leadership``: the history of leadership."""

from __future__ import annotations

from fastapi import APIRouter

from steward.errors import StewardError
from steward.wire.records import LeaderInfo
from steward.wire.rest import ClusterView, ErrorBody, LeadershipView, LeaderView

from .errors import raise_for
from .state import Backend

router = APIRouter(tags=["cluster"])


@router.get("/v1/cluster")
def cluster(backend: Backend) -> ClusterView:
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
        taskmanagers=taskmanagers,
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


def leader_view(leader: LeaderInfo | None) -> LeaderView | None:
    if leader is None:
        return None
    return LeaderView(id=leader.contender, address=leader.address, epoch=leader.epoch)
