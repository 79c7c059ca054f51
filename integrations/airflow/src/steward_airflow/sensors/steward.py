"""``StewardJobSensor``: waits for a Steward job (submitted by any means) to finish.

``deferrable=True`` checks the job once and, unless it is done, defers to the operator's own
:class:`StewardJobTrigger` (the job followed over ``/v1/events`` in the triggerer, no worker
slot held), made with ``cancel_on_kill=False``: a sensor waits for a job it does not own, so
killing the sensor's task never cancels the job. The trigger fires on a terminal state, so a
deferred sensor's ``target_states`` are terminal ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowException

from steward_airflow.api import TERMINAL
from steward_airflow.hooks.steward import StewardHook
from steward_airflow.triggers.steward import StewardJobTrigger


class StewardJobSensor(BaseSensorOperator):
    """True once job ``job_id`` is in ``target_states``; fails the task in ``failed_states``
    (by default: FAILED or CANCELED, which no waiting can change). ``deferrable=True`` waits
    in the triggerer (``poll_interval``: seconds between reads of a JobManager without
    ``/v1/events``)."""

    template_fields: Sequence[str] = ("job_id",)

    def __init__(
        self,
        *,
        job_id: str,
        steward_conn_id: str = StewardHook.default_conn_name,
        target_states: Sequence[str] = ("FINISHED",),
        failed_states: Sequence[str] = ("FAILED", "CANCELED"),
        deferrable: bool = False,
        poll_interval: float = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.job_id = job_id
        self.steward_conn_id = steward_conn_id
        self.target_states = tuple(target_states)
        self.failed_states = tuple(failed_states)
        self.deferrable = deferrable
        self.poll_interval = poll_interval
        if deferrable and not set(self.target_states) <= TERMINAL:
            raise ValueError(
                f"a deferrable StewardJobSensor waits for a terminal state ({sorted(TERMINAL)}),"
                f" not {list(self.target_states)}"
            )

    def execute(self, context: Any) -> Any:
        if not self.deferrable:
            return super().execute(context)
        if self.poke(context):
            return None
        self.defer(
            trigger=StewardJobTrigger(
                job_id=self.job_id,
                steward_conn_id=self.steward_conn_id,
                poll_interval=self.poll_interval,
                cancel_on_kill=False,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=float(self.timeout)),
        )
        return None  # not reached: defer() raises

    def execute_complete(self, context: Any, event: Mapping[str, Any]) -> None:
        """Resumed by the trigger: the job is terminal, or following it failed."""
        if event.get("status") != "done":
            raise AirflowException(
                f"following Steward job {self.job_id} failed: {event.get('message')}"
            )
        if not self.poke(context):
            raise AirflowException(f"Steward job {self.job_id} ended {event.get('state')}")

    def poke(self, context: Any) -> bool:
        view = StewardHook(self.steward_conn_id).run(lambda api: api.job(self.job_id))
        state = view.get("state")
        self.log.info("steward job=%s state=%s", self.job_id, state)
        if state in self.failed_states:
            raise AirflowException(f"Steward job {self.job_id} is {state}: {_reason(view)}")
        return state in self.target_states


def _reason(view: dict[str, Any]) -> str:
    error = (view.get("result") or {}).get("error") or {}
    return str(error.get("message") or view.get("reason") or "no reason given")
