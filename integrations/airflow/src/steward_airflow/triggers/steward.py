"""``StewardJobTrigger``: waits in Airflow's triggerer for a Steward job to end.

It follows the job over ``/v1/events`` (:func:`steward_airflow.events.follow`): one quiet HTTP
stream per deferred task instead of a worker slot held by a poll loop. Its event says the job's
terminal state (``status: done``), or why following it failed (``status: error``): the operator
then fails the task, and a retry re-attaches to the same job.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from steward_airflow.api import StewardApi, StewardApiError
from steward_airflow.events import follow
from steward_airflow.hooks.steward import StewardHook, endpoint_of

log = logging.getLogger(__name__)


class StewardJobTrigger(BaseTrigger):
    """Fires once job ``job_id`` of connection ``steward_conn_id`` is terminal."""

    def __init__(
        self, job_id: str, steward_conn_id: str = "steward_default", poll_interval: float = 5.0
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Airflow's is untyped
        self.job_id = job_id
        self.steward_conn_id = steward_conn_id
        self.poll_interval = poll_interval

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            "steward_airflow.triggers.steward.StewardJobTrigger",
            {
                "job_id": self.job_id,
                "steward_conn_id": self.steward_conn_id,
                "poll_interval": self.poll_interval,
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

    def _changed(self, view: dict[str, Any]) -> None:
        self.log.info(
            "steward job=%s state=%s attempts=%s",
            self.job_id,
            view.get("state"),
            view.get("attempt_count"),
        )
