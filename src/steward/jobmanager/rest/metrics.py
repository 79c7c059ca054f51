"""``GET /metrics``: this JobManager's metrics in the Prometheus text format (viewer or above).

Prometheus authenticates like any client: a bearer token (``credentials_file`` in its scrape
config). The state gauges are read from the JobManager at the scrape (:func:`snapshot_of`):
jobs, slots and heartbeats from the leader's memory, never from ZooKeeper, so a scrape costs
the cluster nothing.
"""

from __future__ import annotations

from collections import Counter

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response

from steward.metrics import CONTENT_TYPE, JobManagerMetrics, JobManagerSnapshot, exposition
from steward.metrics.jobmanager_metrics import QueueUse, TaskManagerSlots
from steward.security.roles import Action
from steward.wire.rest import ErrorBody
from steward.wire.states import JobState

from .auth import Caller, require
from .backend import ApiBackend

router = APIRouter(tags=["metrics"])


def install(app: FastAPI, backend: ApiBackend, metrics: JobManagerMetrics) -> None:
    """Serve ``metrics``, whose state gauges read ``backend`` at each scrape."""
    metrics.observe(lambda: snapshot_of(backend, metrics))
    app.state.metrics = metrics


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE: {}}}, 403: {"model": ErrorBody}},
)
def metrics(request: Request, caller: Caller) -> Response:
    """This JobManager's metrics (Prometheus text format)."""
    require(caller, Action.READ)
    served: JobManagerMetrics = request.app.state.metrics
    return Response(exposition(served.registry), media_type=CONTENT_TYPE)


def snapshot_of(backend: ApiBackend, metrics: JobManagerMetrics) -> JobManagerSnapshot:
    """What ``backend`` knows now; jobs and TaskManagers only on a leader that has recovered."""
    leader = backend.leader()
    dispatcher = backend.dispatcher
    leading = backend.is_leader and dispatcher is not None and dispatcher.ready
    if not leading or dispatcher is None:
        return JobManagerSnapshot(
            is_leader=backend.is_leader,
            leader_epoch=leader.epoch if leader else None,
            zookeeper_connected=backend.session.connected,
        )
    jobs = {state.value: 0 for state in JobState if not state.is_terminal}
    jobs.update(Counter(view.state.value for view in dispatcher.views()))
    taskmanagers = {
        tm.id: TaskManagerSlots(
            slots=tm.slots,
            used=tm.slots - (tm.free_slots if tm.free_slots is not None else tm.slots),
            heartbeat_age=metrics.heartbeat_age(tm.id),
        )
        for tm in dispatcher.taskmanagers()
    }
    return JobManagerSnapshot(
        is_leader=True,
        leader_epoch=leader.epoch if leader else None,
        zookeeper_connected=backend.session.connected,
        jobs=jobs,
        taskmanagers=taskmanagers,
        queues={
            q.name: QueueUse(q.running, q.waiting, q.slots_used, q.share)
            for q in dispatcher.queues().queues
        },
    )
