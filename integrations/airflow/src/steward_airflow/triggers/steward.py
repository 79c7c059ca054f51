"""``StewardJobTrigger``: waits in Airflow's triggerer for a Steward job to end.

It follows the job over ``/v1/events`` (:func:`steward_airflow.events.follow`): one quiet HTTP
stream per deferred task instead of a worker slot held by a poll loop. Its event says the job's
terminal state (``status: done``), or why following it failed (``status: error``): the operator
then fails the task, and a retry re-attaches to the same job.

``on_kill`` (Airflow >= 3.3 calls it in the triggerer when a user marks the deferred task failed
or successful, or clears it; never on a triggerer's restart, a redistribution or a trigger
timeout) cancels the job, as the operator's own ``on_kill`` does for a task that is not
deferred. Best effort, bounded by :data:`CANCEL_SECONDS`: a failure is logged, never raised
(Airflow only logs it anyway). A sensor's trigger is made with ``cancel_on_kill=False``: it
waits for a job it does not own.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from steward_airflow.api import StewardApi, StewardApiError
from steward_airflow.events import follow
from steward_airflow.hooks.steward import StewardHook, endpoint_of

log = logging.getLogger(__name__)

CANCEL_SECONDS = 20.0
"""How long ``on_kill`` keeps trying every JobManager (Airflow gives it 30 s by default)."""


class StewardJobTrigger(BaseTrigger):
    """Fires once job ``job_id`` of connection ``steward_conn_id`` is terminal; cancels the
    job when a user kills the deferred task, unless ``cancel_on_kill`` is False."""

    def __init__(
        self,
        job_id: str,
        steward_conn_id: str = "steward_default",
        poll_interval: float = 5.0,
        cancel_on_kill: bool = True,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Airflow's is untyped
        self.job_id = job_id
        self.steward_conn_id = steward_conn_id
        self.poll_interval = poll_interval
        self.cancel_on_kill = cancel_on_kill

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            "steward_airflow.triggers.steward.StewardJobTrigger",
            {
                "job_id": self.job_id,
                "steward_conn_id": self.steward_conn_id,
                "poll_interval": self.poll_interval,
                "cancel_on_kill": self.cancel_on_kill,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            connection = await StewardHook.aget_connection(self.steward_conn_id)
            async with StewardApi(endpoint_of(connection)) as api:
                view = await follow(
                    api, self.job_id, poll=self.poll_interval, on_change=self._changed
                )
        except (StewardApiError, ValueError) as exc:
            yield TriggerEvent({"status": "error", "job_id": self.job_id, "message": str(exc)})
            return
        yield TriggerEvent({"status": "done", "job_id": self.job_id, "state": view["state"]})

    async def on_kill(self) -> None:
        if not self.cancel_on_kill:
            return
        self.log.info("task killed while deferred: cancelling steward job=%s", self.job_id)
        try:
            connection = await StewardHook.aget_connection(self.steward_conn_id)
            endpoint = endpoint_of(connection)
            bounded = replace(endpoint, timeout=min(endpoint.timeout, CANCEL_SECONDS))
            async with StewardApi(bounded) as api:
                view = await api.cancel(self.job_id)
        except (StewardApiError, ValueError) as exc:
            self.log.warning("steward job=%s not cancelled: %s", self.job_id, exc)
            return
        self.log.info("steward job=%s cancel requested state=%s", self.job_id, view.get("state"))

    def _changed(self, view: dict[str, Any]) -> None:
        self.log.info(
            "steward job=%s state=%s attempts=%s",
            self.job_id,
            view.get("state"),
            view.get("attempt_count"),
        )
